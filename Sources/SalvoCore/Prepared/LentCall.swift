@_spi(Benchmarks) import SalvoTransport

/// Where a prepared call's response goes: its owner lends the collected response to the
/// call's handler on the loop thread and hands the handler's result, or the call's error,
/// to the caller. Exactly one of the two is called, once.
@usableFromInline
protocol LentSink: AnyObject {
    func finish(_ response: borrowing LentResponse)
    func fail(_ error: TransportError)
    /// What hears how the call ended, for a client with an observer; set before it starts.
    var observation: (any RequestObservation)? { get set }
}

/// An awaiting caller whose result is ready, resumed by its loop at the end of the turn
/// (with the others of that turn, as `execute`'s callers are: see ``CallerResumption``).
protocol LentResumable: AnyObject, Sendable {
    func resumeCaller()
}

/// One prepared call's handler and where its result goes.
///
/// @unchecked Sendable: its target is set on the caller's thread before the request starts,
/// then it is touched only on the request's loop thread, by its owner, and (its result
/// held) by the job that resumes its caller, once, after the loop let go of it.
@usableFromInline
final class LentCall<Value: Sendable>: LentSink, EndOfTurnWork, LentResumable, @unchecked Sendable {
    enum Target {
        case none
        case continuation(UnsafeContinuation<Result<Value, any Error>, Never>)
        case completion(@Sendable (Result<Value, any Error>) -> Void)
    }

    private let handler: @Sendable (borrowing LentResponse) throws -> Value
    private var target: Target
    @usableFromInline
    var observation: (any RequestObservation)?
    /// For an awaiting caller: how it is resumed, and its result until then.
    private var resumption = CallerResumption()
    private var held: Result<Value, any Error>?

    @usableFromInline
    init(handler: @escaping @Sendable (borrowing LentResponse) throws -> Value) {
        self.handler = handler
        self.target = .none
    }

    @usableFromInline
    init(handler: @escaping @Sendable (borrowing LentResponse) throws -> Value,
         completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        self.handler = handler
        self.target = .completion(completion)
    }

    /// Where the result goes, for an awaiting caller: set before the request starts, on the
    /// caller's executor (`isolation`: its actor, if any).
    @usableFromInline
    func deliver(to continuation: UnsafeContinuation<Result<Value, any Error>, Never>, isolation: (any Actor)?) {
        self.target = .continuation(continuation)
        self.resumption = CallerResumption(isolation: isolation)
    }

    @usableFromInline
    func finish(_ response: borrowing LentResponse) {
        let result: Result<Value, any Error>
        do {
            result = .success(try self.handler(response))
        } catch {
            result = .failure(error)
        }
        // The observer hears how the exchange ended (a response), whatever the handler made of it.
        if let observation = self.observation.take() { observation.ended(.success(response.head.response)) }
        self.hand(result)
    }

    @usableFromInline
    func fail(_ error: TransportError) {
        if let observation = self.observation.take() { observation.ended(.failure(error)) }
        self.hand(.failure(error))
    }

    private func hand(_ result: Result<Value, any Error>) {
        switch self.target {
        case .continuation:
            // Resumed with the others of this turn of the loop.
            self.held = result
            self.runAtEndOfTurn()
        case .completion(let completion):
            self.target = .none
            completion(result)
        case .none:
            break
        }
    }

    func endOfTurn() {
        self.resumption.resume(.lent(self))
    }

    func resumeCaller() {
        guard case .continuation(let continuation) = self.target, let result = self.held.take() else { return }
        self.target = .none
        continuation.resume(returning: result)
    }
}
