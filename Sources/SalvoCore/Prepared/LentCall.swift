@_spi(Benchmarks) import SalvoTransport

/// Where a prepared call's response goes: its owner lends the collected response to the
/// call's handler on the loop thread and hands the handler's result, or the call's error,
/// to the caller. Exactly one of ``finish(_:)`` and ``fail(_:)`` is called, once.
///
/// Not generic, so that nothing the engine calls on it runs generic code: a generic class's
/// methods, reached by the engine through a protocol, run unspecialized and look the
/// handler's result types up at run time — four lookups in the runtime's cache per call,
/// about 5% of a call's CPU when measured. The typed work (the handler, its result, the
/// caller's continuation or completion) is its subclass ``LentCall``'s, reached through
/// functions made where ``PreparedCall/send(_:fields:body:handler:)`` is inlined: where the
/// handler's type is known there (the usual case), they are specialized and capture nothing,
/// so making them allocates nothing; called from code generic over the result, they carry
/// its type instead.
///
/// @unchecked Sendable: set up on the caller's thread before the request starts, then
/// touched only on the request's loop thread, by its owner, and (its result held) by the job
/// that resumes its caller, once, after the loop let go of it.
@usableFromInline
class LentSink: EndOfTurnWork, @unchecked Sendable {
    /// What hears how the call ended, for a client with an observer; set before it starts.
    @exclusivity(unchecked) var observation: (any RequestObservation)?
    /// For an awaiting caller: how it is resumed, once its result is held.
    @exclusivity(unchecked) var resumption = CallerResumption()
    private let finishing: (LentSink, borrowing LentResponse) -> Void
    private let failing: (LentSink, TransportError) -> Void
    private let resuming: (LentSink) -> Void

    @usableFromInline
    init(finishing: @escaping (LentSink, borrowing LentResponse) -> Void, failing: @escaping (LentSink, TransportError) -> Void,
         resuming: @escaping (LentSink) -> Void) {
        self.finishing = finishing
        self.failing = failing
        self.resuming = resuming
    }

    /// The response ended: the handler runs on it, the observer hears of it, its result goes
    /// to the caller.
    func finish(_ response: borrowing LentResponse) {
        self.finishing(self, response)
    }

    /// After the handler ran: the observer hears how the exchange ended (a response),
    /// whatever the handler made of it.
    @usableFromInline
    func handlerRan(on response: borrowing LentResponse) {
        if let observation = self.observation.take() { observation.ended(.success(response.head.response)) }
    }

    func fail(_ error: TransportError) {
        if let observation = self.observation.take() { observation.ended(.failure(error)) }
        self.failing(self, error)
    }

    /// An awaiting caller's result is held: it is resumed with the others of this turn of the loop.
    @usableFromInline
    func resumeAtEndOfTurn() {
        self.runAtEndOfTurn()
    }

    func endOfTurn() {
        self.resumption.resume(.lent(self))
    }

    /// Resumes the awaiting caller with the held result (after the loop let go of the call).
    func resumeCaller() {
        self.resuming(self)
    }
}

/// One prepared call's handler, where its result goes, and the result while it waits for
/// its caller to be resumed. Made, and its typed work specialized, where `send` is called.
@usableFromInline
final class LentCall<Value: Sendable>: LentSink, @unchecked Sendable {
    @usableFromInline
    enum Target {
        case none
        case continuation(UnsafeContinuation<Result<Value, any Error>, Never>)
        case completion(@Sendable (Result<Value, any Error>) -> Void)
    }

    @usableFromInline let handler: @Sendable (borrowing LentResponse) throws -> Value
    @usableFromInline @exclusivity(unchecked) var target: Target
    /// The result while it waits for its caller, a `Result<Value, any Error>` held as `Any`:
    /// a field of a type made from `Value` would have the class's deinitializer — which runs
    /// unspecialized — look that type up in the runtime's cache on every call (the deinit is
    /// the class's, whatever `send` was specialized for). `Any` carries its own type.
    @usableFromInline @exclusivity(unchecked) var held: Any?

    @inlinable
    init(handler: @escaping @Sendable (borrowing LentResponse) throws -> Value, target: Target) {
        self.handler = handler
        self.target = target
        super.init(finishing: { sink, response in
            let call = unsafeDowncast(sink, to: LentCall<Value>.self)
            let result: Result<Value, any Error>
            do {
                result = .success(try call.handler(response))
            } catch {
                result = .failure(error)
            }
            call.handlerRan(on: response)
            call.hand(result)
        }, failing: { sink, error in
            unsafeDowncast(sink, to: LentCall<Value>.self).hand(.failure(error))
        }, resuming: { sink in
            let call = unsafeDowncast(sink, to: LentCall<Value>.self)
            guard case .continuation(let continuation) = call.target, let held = call.held.take() else { return }
            call.target = .none
            // Held by `hand` as exactly this type.
            continuation.resume(returning: held as! Result<Value, any Error>)
        })
    }

    /// For an awaiting caller, whose continuation is given before the request starts.
    @inlinable
    convenience init(handler: @escaping @Sendable (borrowing LentResponse) throws -> Value) {
        self.init(handler: handler, target: .none)
    }

    @inlinable
    convenience init(handler: @escaping @Sendable (borrowing LentResponse) throws -> Value,
                     completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        self.init(handler: handler, target: .completion(completion))
    }

    /// Where the result goes, for an awaiting caller: set before the request starts, on the
    /// caller's executor (`isolation`: its actor, if any).
    @inlinable
    func deliver(to continuation: UnsafeContinuation<Result<Value, any Error>, Never>, isolation: (any Actor)?) {
        self.target = .continuation(continuation)
        self.setResumption(isolation: isolation)
    }

    @inlinable
    func hand(_ result: Result<Value, any Error>) {
        switch self.target {
        case .continuation:
            self.held = result
            self.resumeAtEndOfTurn()
        case .completion(let completion):
            self.target = .none
            completion(result)
        case .none:
            break
        }
    }
}

extension LentSink {
    @usableFromInline
    func setResumption(isolation: (any Actor)?) {
        self.resumption = CallerResumption(isolation: isolation)
    }
}
