// What ThreadSanitizer cannot see for itself, told to it in a ThreadSanitizer build
// (`make test-tsan` compiles with `-DSALVO_TSAN`). Ordinary builds compile none of it but an
// empty inlined function.

#if SALVO_TSAN
import Synchronization

@_silgen_name("__tsan_acquire")
private func tsanAcquire(_ address: UnsafeRawPointer)

@_silgen_name("__tsan_release")
private func tsanRelease(_ address: UnsafeRawPointer)

/// `Synchronization.Mutex` with ThreadSanitizer's acquire and release annotations around it.
///
/// The standard library's `Mutex` locks with a futex on Linux, inside the runtime, where
/// ThreadSanitizer sees neither the lock nor the unlock: every state a `Mutex` guards would read
/// as shared without synchronization. In that build each module that uses `Mutex` names this
/// type instead (a module-local `typealias Mutex = SanitizedMutex`, which shadows the imported
/// one): the holder acquires the lock's address after taking it and releases it before giving
/// it back.
package struct SanitizedMutex<Value: ~Copyable>: ~Copyable, Sendable {
    private let inner: Synchronization.Mutex<Value>

    package init(_ initialValue: consuming sending Value) {
        inner = Synchronization.Mutex(initialValue)
    }

    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        // `Mutex` is address-only (its futex word must not move), so a borrowed `self` is the
        // lock's own storage, and its address names the lock for as long as the lock lives.
        let address = withUnsafePointer(to: self) { UnsafeRawPointer($0) }
        return try inner.withLock { (value: inout sending Value) throws(E) -> sending Result in
            tsanAcquire(address)
            defer { tsanRelease(address) }
            return try body(&value)
        }
    }
}

/// Called right after awaiting a continuation that another thread resumes.
///
/// Resuming a continuation releases the awaiting task for ThreadSanitizer, and the runtime
/// acquires it when it runs the task again — but not when the resume came before the task had
/// suspended, where the task goes on without being scheduled. What the resuming thread wrote
/// (a response, a chunk) then reads as a race to the code after the await. Acquiring the task
/// here closes that gap; the frames inside the standard library's `with…Continuation` between
/// the resume and this call are covered by the suppressions in `scripts/tsan-suppressions`.
@usableFromInline
package func threadSanitizerSawResume() {
    withUnsafeCurrentTask { task in
        guard let task else { return }
        // An `UnsafeCurrentTask` is the task's address, the address the runtime released.
        tsanAcquire(unsafeBitCast(task, to: UnsafeRawPointer.self))
    }
}
/// A hand-off of values from one thread to another through a queue ThreadSanitizer does not
/// see into (dispatch's, on Linux): made on the sending thread before the hand-off, `received()`
/// called first thing on the receiving one.
package struct ThreadSanitizerHandOff: Sendable {
    private let token = Token()
    private final class Token: Sendable {}

    package init() {
        tsanRelease(UnsafeRawPointer(Unmanaged.passUnretained(self.token).toOpaque()))
    }

    package func received() {
        tsanAcquire(UnsafeRawPointer(Unmanaged.passUnretained(self.token).toOpaque()))
    }
}
#else
/// A hand-off of values between threads through a queue (see the `SALVO_TSAN` branch of this
/// file); nothing outside a ThreadSanitizer build.
@frozen @usableFromInline
package struct ThreadSanitizerHandOff: Sendable {
    @inlinable @inline(__always) package init() {}
    @inlinable @inline(__always) package func received() {}
}

/// Called right after awaiting a continuation another thread resumes; does something only in a
/// ThreadSanitizer build (see the `SALVO_TSAN` branch of this file).
@inlinable @inline(__always)
package func threadSanitizerSawResume() {}
#endif
