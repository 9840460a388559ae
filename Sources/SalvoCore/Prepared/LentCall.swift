@_spi(Benchmarks) import SalvoTransport

/// Where a prepared call's response goes: its owner lends the collected response to the
/// call's handler on the loop thread and hands the handler's result, or the call's error,
/// to the caller. Exactly one of ``finish(_:)`` and ``fail(_:)`` is called, once.
///
/// Not generic, so that nothing the engine calls on it runs generic code: a generic class's
/// methods, reached by the engine through a protocol, run unspecialized and look the
/// handler's result types up at run time — four lookups in the runtime's cache per call,
/// about 5% of a call's CPU when measured. The typed work (the handler, its result, the
/// caller's completion) is its subclass ``LentCall``'s, reached through functions made where
/// ``PreparedCall/send(_:fields:body:handler:)`` is inlined: where the handler's type is known
/// there (the usual case), they are specialized and capture nothing, so making them
/// allocates nothing; called from code generic over the result, they carry its type instead.
///
/// An awaiting caller waits on a continuation of no value: the result waits in the call
/// (``LentCall``'s room) and the caller's own, specialized code takes it once resumed — so
/// the continuation, the resumption and this class's fields are the same whatever the
/// result's type.
///
/// @unchecked Sendable: set up on the caller's thread before the request starts, then
/// touched only on the request's loop thread, by its owner, and (its result held) by the
/// caller it resumes, once, after the loop let go of it.
@usableFromInline
class LentSink: EndOfTurnWork, @unchecked Sendable {
    /// What hears how the call ended, for a client with an observer; set before it starts.
    var observation: (any RequestObservation)? {
        get { self.observer?.observation }
        set { self.observer = newValue.map(Observer.init) }
    }
    /// ``observation`` behind a reference: asking whether there is one, or letting it go, is
    /// then a pointer's check — an optional existential is asked (and destroyed, by every
    /// call's deinitializer) through its type's witnesses.
    @exclusivity(unchecked) private var observer: Observer?
    private final class Observer: Sendable {
        let observation: any RequestObservation
        init(_ observation: any RequestObservation) { self.observation = observation }
    }
    /// For an awaiting caller: how it is resumed, once its result is held.
    @exclusivity(unchecked) var resumption = CallerResumption()
    /// An awaiting caller, until it is resumed.
    @usableFromInline @exclusivity(unchecked) var waiting: UnsafeContinuation<Void, Never>?
    private let finishing: (LentSink, borrowing LentResponse) -> Void
    private let failing: (LentSink, TransportError) -> Void

    @usableFromInline
    init(finishing: @escaping (LentSink, borrowing LentResponse) -> Void, failing: @escaping (LentSink, TransportError) -> Void) {
        self.finishing = finishing
        self.failing = failing
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
        if let observer = self.observer.take() { observer.observation.ended(.success(response.head.response)) }
    }

    func fail(_ error: TransportError) {
        if let observer = self.observer.take() { observer.observation.ended(.failure(error)) }
        self.failing(self, error)
    }

    /// Where the result goes, for an awaiting caller: set before the request starts, on the
    /// caller's executor (`isolation`: its actor, if any).
    @usableFromInline
    func deliver(to continuation: UnsafeContinuation<Void, Never>, isolation: (any Actor)?) {
        self.waiting = continuation
        self.resumption = CallerResumption(isolation: isolation)
    }

    /// An awaiting caller's result is held: it is resumed with the others of this turn of the loop.
    @usableFromInline
    func resumeAtEndOfTurn() {
        self.runAtEndOfTurn()
    }

    func endOfTurn() {
        self.resumption.resume(.lent(self))
    }

    /// Resumes the awaiting caller, whose result is held (after the loop let go of the call).
    func resumeCaller() {
        self.waiting.take()?.resume()
    }
}

/// One prepared call's handler, where its result goes, and the result while it waits for
/// its caller to be resumed. Made, and its typed work specialized, where `send` is called.
///
/// Its stored properties do not depend on `Value`'s layout: the class's deinitializer runs
/// unspecialized whatever `send` was specialized for, and a field of a type made from `Value`
/// would have it look that type up in the runtime's cache on every call. The result waits in
/// a few words of room (``room``), or, when larger, boxed as `Any`.
@usableFromInline
final class LentCall<Value: Sendable>: LentSink, @unchecked Sendable {
    @usableFromInline typealias Outcome = Result<Value, any Error>

    @usableFromInline let handler: @Sendable (borrowing LentResponse) throws -> Value
    /// A completion-handler caller's completion (nil for an awaiting caller).
    @usableFromInline @exclusivity(unchecked) var completion: (@Sendable (Outcome) -> Void)?
    /// An awaiting caller's result, in place when it fits (``fitsInRoom``), until it is taken.
    @usableFromInline @exclusivity(unchecked) var room: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
    /// An awaiting caller's result too large for the room (a reference: the deinitializer
    /// lets go of a pointer, not of an optional existential through its witnesses).
    @usableFromInline @exclusivity(unchecked) var boxed: Boxed?
    /// Whether the room holds a result not taken yet.
    @usableFromInline @exclusivity(unchecked) var holds = false
    /// Destroys a result left in the room (typed where the call was made; nothing captured).
    @usableFromInline @exclusivity(unchecked) var discard: ((LentCall<Value>) -> Void)?

    @inlinable
    static var fitsInRoom: Bool {
        MemoryLayout<Outcome>.size <= MemoryLayout<(UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)>.size
            && MemoryLayout<Outcome>.alignment <= MemoryLayout<UInt64>.alignment
    }

    @inlinable
    init(handler: @escaping @Sendable (borrowing LentResponse) throws -> Value,
         completion: (@Sendable (Outcome) -> Void)?) {
        self.handler = handler
        self.completion = completion
        super.init(finishing: { sink, response in
            let call = unsafeDowncast(sink, to: LentCall<Value>.self)
            let result: Outcome
            do {
                result = .success(try call.handler(response))
            } catch {
                result = .failure(error)
            }
            call.handlerRan(on: response)
            call.hand(result)
        }, failing: { sink, error in
            unsafeDowncast(sink, to: LentCall<Value>.self).hand(.failure(error))
        })
    }

    /// For an awaiting caller, whose continuation is given before the request starts.
    @inlinable
    convenience init(handler: @escaping @Sendable (borrowing LentResponse) throws -> Value) {
        self.init(handler: handler, completion: nil)
    }

    deinit {
        if self.holds { self.discard?(self) }
    }

    @inlinable
    func hand(_ result: Outcome) {
        if let completion = self.completion.take() {
            completion(result)
            return
        }
        guard self.waiting != nil else { return }
        if Self.fitsInRoom {
            _ = withUnsafeMutableBytes(of: &self.room) { $0.baseAddress!.initializeMemory(as: Outcome.self, to: result) }
            self.holds = true
            self.discard = { call in
                _ = withUnsafeMutableBytes(of: &call.room) { $0.baseAddress!.assumingMemoryBound(to: Outcome.self).move() }
            }
        } else {
            self.boxed = Boxed(result)
        }
        self.resumeAtEndOfTurn()
    }

    /// The held result, for the awaiting caller once it is resumed; taken once.
    @inlinable
    func takeResult() -> Outcome {
        if self.holds {
            self.holds = false
            return withUnsafeMutableBytes(of: &self.room) { $0.baseAddress!.assumingMemoryBound(to: Outcome.self).move() }
        }
        // Boxed by `hand` as exactly this type (a result too large for the room).
        return self.boxed.take()!.value as! Outcome
    }
}

/// A prepared call's result too large for its call's room.
@usableFromInline
final class Boxed: @unchecked Sendable {
    // @unchecked Sendable: written once by the loop, read once by the caller it resumes after.
    @usableFromInline let value: Any
    @inlinable init(_ value: Any) { self.value = value }
}
