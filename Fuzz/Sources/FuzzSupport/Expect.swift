#if canImport(Glibc)
import Glibc
#endif

/// A broken invariant: writes what differed to standard error and traps, which libFuzzer
/// reports as a crash, saving the input that caused it.
public func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                      file: StaticString = #fileID, line: UInt = #line) {
    guard !condition() else { return }
    let text = "fuzz invariant broken at \(file):\(line): \(message())\n"
    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    fatalError("fuzz invariant broken", file: file, line: line)
}

/// Prints what a run saw when `FUZZ_SHOW` is set: for looking at one input by hand
/// (`FUZZ_SHOW=1 Fuzz/.build/debug/<target> <file>`).
public func showIfAsked(_ message: @autoclosure () -> String) {
    guard getenv("FUZZ_SHOW") != nil else { return }
    let text = message() + "\n"
    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
}
