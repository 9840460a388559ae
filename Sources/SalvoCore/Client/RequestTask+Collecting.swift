@_spi(Benchmarks) import SalvoTransport
import HTTPTypes

/// A task made without a handler collects its own response and hands it to a completion
/// handler (on the loop thread) or an awaiting caller; it is the caller's handle for
/// cancelling the request too. One object per request where there were three (task,
/// collector, handle): each was an allocation, a free and a dozen reference counts.
///
/// The next request of a redirect chain is a task of its own, whose handler is the first
/// task: the response the chain ends in is collected there.
extension RequestTask: ResponseHandler, EndOfTurnWork {
    /// Where a collected result goes: a completion handler, or an awaiting task's
    /// continuation (held as is, rather than in a closure made for it).
    enum Delivery: Sendable {
        case completion(@Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void)
        case continuation(UnsafeContinuation<Result<HTTPClientResponse, HTTPClientError>, Never>)
        /// An awaiting task's, once its continuation exists (``deliver(to:isolation:)``, before the
        /// request starts). Also: a task with a handler of its own, which delivers nothing,
        /// and a task that has delivered.
        case awaiting
    }

    /// Where the result of an `.awaiting` task goes; called before the request starts, on
    /// the caller's executor. `isolation`: the caller's actor, if it is on one.
    func deliver(to continuation: UnsafeContinuation<Result<HTTPClientResponse, HTTPClientError>, Never>,
                 isolation: (any Actor)?) {
        self.delivery = .continuation(continuation)
        self.callerResumption = CallerResumption(isolation: isolation)
    }

    /// `result` is moved, not copied, to where it goes (a response is a few references).
    /// From here on the task is only the caller's handle, if they kept it (see ``letGo()``).
    private func complete(_ result: consuming Result<HTTPClientResponse, HTTPClientError>) {
        // The request is over: the handle lets go of the task (itself), and of what was
        // collected (a handle a caller keeps must not keep the response too).
        self.finished()
        self.collectedHead = nil
        self.collectedBody = []
        self.letGo()
        switch self.delivery {
        case .completion(let completion):
            // Nor the caller's closure, and what it captured.
            self.delivery = .awaiting
            completion(result)
        case .continuation:
            // Resumed with the others of this turn of the loop, as one batch.
            self.heldResult = consume result
            self.runAtEndOfTurn()
        case .awaiting:
            // Every collecting request is started after its continuation is given: unreachable.
            assertionFailure("a collected response with nowhere to go")
        }
    }

    func endOfTurn() {
        guard case .continuation(let continuation) = self.delivery, let result = self.heldResult.take() else { return }
        // Resumed once: the continuation is forgotten with it.
        self.delivery = .awaiting
        self.callerResumption.resume(.collected(continuation, result))
    }

    var wantsDetailsAtHead: Bool { false }

    func didReceiveHead(_ head: ParsedHead) throws(HTTPClientError) {
        self.collectedHead = head
        if let length = head.fields.firstNumber(ofTracked: .contentLength) {
            if length > self.maxBodySize { throw self.tooLarge() }
            // Capped: the head of a HEAD, 204 or 304 answer describes a body that never comes.
            self.collectedBody.reserveCapacity(min(length, 4 << 20))
        }
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) -> Bool {
        if self.collectedBody.count + bytes.count > self.maxBodySize { throw self.tooLarge() }
        self.collectedBody.append(contentsOf: bytes)
        return true
    }

    func didFinish(trailers: HTTPFields?, details: ResponseDetails) {
        guard let head = self.collectedHead.take() else {
            self.complete(.failure(HTTPClientError(.invalidResponse, detail: "response ended without a head")))
            return
        }
        // The body moves into the response: the task keeps no second reference to it. The
        // response is made in place in the result, its parts moved in.
        var body: [UInt8] = []
        swap(&body, &self.collectedBody)
        self.complete(.success(HTTPClientResponse(parsedHead: head, body: body, trailers: trailers, version: details.version,
                                                  metrics: details.metrics, extras: details.extras)))
    }

    func didFail(_ error: HTTPClientError) {
        self.complete(.failure(error))
    }

    private func tooLarge() -> HTTPClientError {
        HTTPClientError(.bodyTooLarge, phase: .readBody, detail: "more than \(self.maxBodySize) bytes")
    }
}
