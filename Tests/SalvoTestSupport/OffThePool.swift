import Foundation

/// Runs blocking `work` — a child process to its end, a wait for a server to listen — on a
/// thread of its own, and awaits its result.
///
/// Swift Testing runs every test on Swift's cooperative pool, which has one thread per core.
/// A test that blocks one of those threads stalls every other test for as long as it blocks,
/// their timers included: on a two-core machine, two tests each waiting for a child process
/// stop the whole run, and a test elsewhere that bounds a wait by a timer sees it fire many
/// seconds late. Anything that blocks for longer than a moment goes through here.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.start()
    }
}

/// What a child process printed, and how it ended.
public struct ChildRun: Sendable {
    /// The exit status, or the signal's number when ``signaled``.
    public var status: Int32
    /// Whether a signal ended it (a crash, or the time limit's SIGKILL).
    public var signaled: Bool
    public var stdout: Data
    public var stderr: Data

    public var output: String { String(decoding: self.stdout, as: UTF8.self) }
    public var errors: String { String(decoding: self.stderr, as: UTF8.self) }
}

/// Runs `executable` with `arguments` to its end, off the cooperative pool: standard input
/// is `input` (nothing when empty), standard output and error are kept whole (read at
/// the same time, so that a child filling one pipe cannot stall on it).
/// `environment` replaces the child's environment when given; `directory` is where it runs
/// (the caller's own when nil). A child still running after
/// `timeLimit` seconds is killed (its run then says ``ChildRun/signaled``), so that a hung
/// child fails its test instead of stalling the run.
public func runChild(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                     input: Data = Data(), timeLimit: TimeInterval = 60,
                     directory: URL? = nil) async throws -> ChildRun {
    try await offThePool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = directory }
        let (out, err, stdin) = try launching { () throws -> (Pipe, Pipe, Pipe?) in
            let out = Pipe()
            let err = Pipe()
            let stdin = input.isEmpty ? nil : Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = stdin ?? FileHandle.nullDevice
            try process.run()
            return (out, err, stdin)
        }
        let pid = process.processIdentifier
        let exited = DispatchSemaphore(value: 0)
        Thread {
            if exited.wait(timeout: .now() + timeLimit) == .timedOut { kill(pid, SIGKILL) }
        }.start()
        let writer = stdin.map { pipe in
            Thread {
                // A child that exits before reading all of its input must not kill the test
                // process: the write fails with EPIPE instead of raising SIGPIPE here.
                var pipeSignal = sigset_t()
                sigemptyset(&pipeSignal)
                sigaddset(&pipeSignal, SIGPIPE)
                pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
                try? pipe.fileHandleForWriting.write(contentsOf: input)
                try? pipe.fileHandleForWriting.close()
            }
        }
        writer?.start()
        let errors = PipeDrain(err.fileHandleForReading)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.wait()
        process.waitUntilExit()
        exited.signal()
        return ChildRun(status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
                        stdout: stdout, stderr: stderr)
    }
}

/// Makes a child's pipes and starts it (`body`), one child at a time across the test process,
/// with no signal blocked.
///
/// One at a time: Foundation's pipes are not close-on-exec, and a child closes what it
/// inherited only up to the highest descriptor open when its start began; a pipe another
/// thread made meanwhile would leak into it, and a long-lived server holding a test's pipe
/// would keep that test from ever seeing its end. No signal blocked: a child inherits its
/// starter's signal mask, and test threads block most signals, so a server started from one
/// would never see SIGTERM (nor `salvo bench` its SIGINT).
public func launching<T>(_ body: () throws -> T) rethrows -> T {
    spawnLock.lock()
    defer { spawnLock.unlock() }
    var emptyMask = sigset_t()
    var savedMask = sigset_t()
    sigemptyset(&emptyMask)
    pthread_sigmask(SIG_SETMASK, &emptyMask, &savedMask)
    defer { pthread_sigmask(SIG_SETMASK, &savedMask, nil) }
    return try body()
}

private let spawnLock = NSLock()

/// A pipe read to its end on a thread of its own.
private final class PipeDrain: @unchecked Sendable {
    // @unchecked Sendable: `data` is written by the reading thread before it signals `done`,
    // and read only after `wait()` has seen that signal.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread { [self] in
            self.data = handle.readDataToEndOfFile()
            self.done.signal()
        }.start()
    }

    func wait() -> Data {
        self.done.wait()
        return self.data
    }
}

/// A value made once — a server started, certificates written — the first time a test asks
/// for it, off the cooperative pool; every test asking meanwhile awaits the same making
/// instead of blocking a pool thread on a lock.
public final class SharedFixture<T: Sendable>: Sendable {
    private let making: Task<T, any Error>

    public init(_ make: @escaping @Sendable () throws -> T) {
        self.making = Task { try await offThePool(make) }
    }

    public func get() async throws -> T { try await self.making.value }
}
