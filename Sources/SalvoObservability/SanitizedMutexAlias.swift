#if SALVO_TSAN
import SalvoTransport
// A ThreadSanitizer build names the annotated mutex wherever this module says `Mutex`
// (SalvoTransport's ThreadSanitizerAnnotations.swift says why).
typealias Mutex<Value: ~Copyable> = SanitizedMutex<Value>
#endif
