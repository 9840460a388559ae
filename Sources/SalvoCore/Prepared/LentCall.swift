@_spi(Benchmarks) import SalvoTransport

/// Where a prepared call's response goes: its owner lends the collected response to the
/// call's handler on the loop thread and hands the handler's result, or the call's error,
/// to the caller. Exactly one of the two is called, once.
protocol LentSink: AnyObject {
    func finish(_ response: borrowing LentResponse)
    func fail(_ error: TransportError)
    /// What hears how the call ended, for a client with an observer; set before it starts.
    var observation: (any RequestObservation)? { get set }
}

/// One prepared call's handler and where its result goes.
///
/// @unchecked Sendable: its target is set on the caller's thread before the request starts,
/// then it is touched only on the request's loop thread, by its owner.
final class LentCall<Value: Sendable>: LentSink, @unchecked Sendable {
    enum Target {
        case none
        case continuation(UnsafeContinuation<Result<Value, any Error>, Never>)
        case completion(@Sendable (Result<Value, any Error>) -> Void)
    }

    private let handler: @Sendable (borrowing LentResponse) throws -> Value
    private var target: Target
    var observation: (any RequestObservation)?

    init(handler: @escaping @Sendable (borrowing LentResponse) throws -> Value, target: Target = .none) {
        self.handler = handler
        self.target = target
    }

    /// Where the result goes, for an awaiting caller: set before the request starts.
    func deliver(to continuation: UnsafeContinuation<Result<Value, any Error>, Never>) {
        self.target = .continuation(continuation)
    }

    func finish(_ response: borrowing LentResponse) {
        if let observation = self.observation.take() { observation.ended(.success(response.head.response)) }
        let result: Result<Value, any Error>
        do {
            result = .success(try self.handler(response))
        } catch {
            result = .failure(error)
        }
        self.hand(result)
    }

    func fail(_ error: TransportError) {
        if let observation = self.observation.take() { observation.ended(.failure(error)) }
        self.hand(.failure(error))
    }

    private func hand(_ result: Result<Value, any Error>) {
        let target = self.target
        self.target = .none
        switch target {
        case .continuation(let continuation): continuation.resume(returning: result)
        case .completion(let completion): completion(result)
        case .none: break
        }
    }
}
