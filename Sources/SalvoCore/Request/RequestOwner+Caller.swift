@_spi(Benchmarks) import SalvoTransport
import HTTPTypes

/// A collected response as it comes together.
struct Collected {
    var head: ParsedHead?
    var body: [UInt8] = []
    /// More than this many body bytes fail the call with `.bodyTooLarge`.
    let maxBodySize: Int

    init(maxBodySize: Int) {
        self.maxBodySize = maxBodySize
    }
}

/// Where the response goes: collected into one value for a completion handler or an
/// awaiting caller, or handed out at its head to a stream. Exactly one of `didFinish` or
/// `didFail` ends every call.
extension RequestOwner: EndOfTurnWork {
    enum Delivery {
        /// A collecting call whose awaiting caller's continuation comes next, before the
        /// request starts (``deliver(to:isolation:)``).
        case awaiting
        /// A collecting call with a completion handler.
        case completion(@Sendable (Result<CollectedResponse, TransportError>) -> Void)
        /// A collecting call's awaiting caller (its continuation held as is, not in a closure).
        case continuation(UnsafeContinuation<Result<CollectedResponse, TransportError>, Never>)
        /// A stream: the head goes to the caller as it comes, the body through a ``BodyStream``.
        case stream(StreamingHandler)
        /// The call is over and its result handed on.
        case delivered
    }

    /// Where the result of an `.awaiting` call goes; called before the request starts, on
    /// the caller's executor. `isolation`: the caller's actor, if it is on one.
    func deliver(to continuation: UnsafeContinuation<Result<CollectedResponse, TransportError>, Never>,
                 isolation: (any Actor)?) {
        self.delivery = .continuation(continuation)
        self.callerResumption = CallerResumption(isolation: isolation)
    }

    func didReceiveHead(_ head: ParsedHead) throws(TransportError) {
        if case .stream(let handler) = self.delivery {
            handler.noteDetails(self.details(endedAt: nil))
            handler.didReceiveHead(head, of: self)
            return
        }
        self.collected.head = head
        if let length = head.fields.firstNumber(ofTracked: .contentLength) {
            if length > self.collected.maxBodySize { throw self.tooLarge() }
            // Capped: the head of a HEAD, 204 or 304 answer describes a body that never comes.
            self.collected.body.reserveCapacity(min(length, 4 << 20))
        }
    }

    /// Body bytes for the caller; false pauses reading.
    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Bool {
        if case .stream(let handler) = self.delivery { return handler.didReceiveBody(bytes) }
        if self.collected.body.count + bytes.count > self.collected.maxBodySize { throw self.tooLarge() }
        self.collected.body.append(contentsOf: bytes)
        return true
    }

    func didFinish(trailers: HTTPFields?, details: ResponseDetails) {
        if case .stream(let handler) = self.delivery {
            self.letGo()
            handler.didFinish(trailers: trailers, details: details)
            return
        }
        guard let head = self.collected.head.take() else {
            self.complete(.failure(TransportError(.invalidResponse, detail: "response ended without a head")))
            return
        }
        // The body moves into the response: the owner keeps no second reference to it. The
        // response is made in place in the result, its parts moved in.
        var body: [UInt8] = []
        swap(&body, &self.collected.body)
        self.complete(.success(CollectedResponse(parsedHead: head, body: body, trailers: trailers, version: details.version,
                                                  metrics: details.metrics, extras: details.extras)))
    }

    func didFail(_ error: TransportError) {
        if case .stream(let handler) = self.delivery {
            self.letGo()
            handler.didFail(error)
            return
        }
        self.complete(.failure(error))
    }

    /// `result` is moved, not copied, to where it goes (a response is a few references).
    /// From here on the owner is only the caller's handle, if they kept it (see ``letGo()``).
    private func complete(_ result: consuming Result<CollectedResponse, TransportError>) {
        // A handle a caller keeps must not keep the response.
        if self.collected.head != nil { self.collected.head = nil }
        if !self.collected.body.isEmpty { self.collected.body = [] }
        self.letGo()
        switch self.delivery {
        case .completion(let completion):
            // Nor the caller's closure, and what it captured.
            self.delivery = .delivered
            completion(result)
        case .continuation:
            // Resumed with the others of this turn of the loop, as one batch.
            self.heldResult = consume result
            self.runAtEndOfTurn()
        case .awaiting, .stream, .delivered:
            // Every collecting call is started after its continuation is given: unreachable.
            assertionFailure("a collected response with nowhere to go")
        }
    }

    func endOfTurn() {
        guard case .continuation(let continuation) = self.delivery, let result = self.heldResult.take() else { return }
        // Resumed once: the continuation is forgotten with it.
        self.delivery = .delivered
        self.callerResumption.resume(.collected(continuation, result))
    }

    private func tooLarge() -> TransportError {
        TransportError(.bodyTooLarge, phase: .readBody, detail: "more than \(self.collected.maxBodySize) bytes")
    }
}
