@_spi(Benchmarks) import SalvoTransport
import HTTPTypes

/// Where a streamed call's response goes: the head to the awaiting caller as soon as it
/// arrives, then the body into a ``BodyStream`` with backpressure. Held by the request's owner
/// until the call ends (``RequestOwner/letGo()`` drops it: the stream's callbacks reach the
/// owner, and the owner must not keep the stream alive in a cycle). Loop-confined.
final class StreamingHandler: EndOfTurnWork {
    /// The awaiting caller, given before the request starts (``deliver(to:isolation:)``).
    private var continuation: UnsafeContinuation<Result<TransportResponse, TransportError>, Never>?
    private var stream: BodyStream?
    private var details: ResponseDetails?
    /// The head (or the failure) for the caller, held until the loop's turn ends, to wake the
    /// caller with the others of that turn (see ``EventLoop/deferToEndOfTurn(_:)``).
    private var heldHead: Result<TransportResponse, TransportError>?
    /// How the awaiting caller is resumed (see ``EventLoop/resume(fromPool:priority:)``).
    private var callerResumption = CallerResumption()

    init() {}

    /// Where the head (or the failure before it) goes; called before the request starts, on
    /// the caller's executor. `isolation`: the caller's actor, if it is on one.
    func deliver(to continuation: UnsafeContinuation<Result<TransportResponse, TransportError>, Never>,
                 isolation: (any Actor)?) {
        self.continuation = continuation
        self.callerResumption = CallerResumption(isolation: isolation)
    }

    /// Resumes the caller, once.
    private func resume(_ result: Result<TransportResponse, TransportError>) {
        guard let continuation = self.continuation.take() else { return }
        self.callerResumption.resume(.streamed(continuation, result))
    }

    /// What else is known of the response when its head arrives.
    func noteDetails(_ details: ResponseDetails) {
        self.details = details
    }

    /// The head of `owner`'s response: the caller gets it, with a body that asks `owner` (on
    /// its loop) to read on, or to cancel when the caller drops it.
    func didReceiveHead(_ head: ParsedHead, of owner: RequestOwner) {
        let stream = BodyStream(onResume: { owner.resumeReading() }, onCancel: { owner.cancel() })
        self.stream = stream
        var response = TransportResponse(head: head.response, body: ResponseBody(source: stream))
        self.details.take()?.apply(to: &response)
        self.deliverHead(.success(response))
    }

    private func deliverHead(_ result: Result<TransportResponse, TransportError>) {
        self.heldHead = result
        self.runAtEndOfTurn()
    }

    func endOfTurn() {
        if let result = self.heldHead.take() { self.resume(result) }
    }

    /// Body bytes; false when the consumer is behind and the socket should not be read.
    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        self.stream?.yield(bytes) ?? true
    }

    func didFinish(trailers: HTTPFields?, details: ResponseDetails) {
        if let stream = self.stream {
            stream.metrics = details.metrics
            stream.finish(.success(trailers))
        } else {
            self.deliverHead(.failure(TransportError(.invalidResponse, detail: "response ended without a head")))
        }
    }

    func didFail(_ error: TransportError) {
        if let stream = self.stream {
            stream.finish(.failure(error))
        } else {
            self.deliverHead(.failure(error))
        }
    }
}
