import Dispatch

/// Runs async code to its end from a fuzzer's synchronous entry point.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}

/// Written by the task before it signals, read after the wait: the semaphore orders them.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
