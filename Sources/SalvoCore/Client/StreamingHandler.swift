@_spi(Benchmarks) import SalvoTransport
import HTTPTypes

/// Hands the head to a callback as soon as it arrives, then feeds the body into a
/// ``BodyStream`` with backpressure.
final class StreamingHandler: ResponseHandler, EndOfTurnWork {
    /// The awaiting caller, given before the request starts (``deliver(to:isolation:)``).
    private var continuation: UnsafeContinuation<Result<HTTPClientStreamingResponse, HTTPClientError>, Never>?
    private let onEnd: () -> Void
    private let makeStream: () -> BodyStream
    private var stream: BodyStream?
    private var details: ResponseDetails?
    /// The head (or the failure) for the caller, held until the loop's turn ends, to wake the
    /// caller with the others of that turn (see ``EventLoop/deferToEndOfTurn(_:)``).
    private var heldHead: Result<HTTPClientStreamingResponse, HTTPClientError>?

    /// `onEnd` runs once the request is over either way: it lets the caller's cancellation
    /// state drop the request, which would otherwise keep it (and the stream) alive in a cycle.
    init(makeStream: @escaping () -> BodyStream, onEnd: @escaping () -> Void) {
        self.makeStream = makeStream
        self.onEnd = onEnd
    }

    /// How the awaiting caller is resumed (see ``EventLoop/resume(fromPool:priority:)``).
    private var callerResumption = CallerResumption()

    /// Where the head (or the failure before it) goes; called before the request starts, on
    /// the caller's executor. `isolation`: the caller's actor, if it is on one.
    func deliver(to continuation: UnsafeContinuation<Result<HTTPClientStreamingResponse, HTTPClientError>, Never>,
                 isolation: (any Actor)?) {
        self.continuation = continuation
        self.callerResumption = CallerResumption(isolation: isolation)
    }

    /// Resumes the caller, once.
    private func resume(_ result: Result<HTTPClientStreamingResponse, HTTPClientError>) {
        guard let continuation = self.continuation.take() else { return }
        self.callerResumption.resume(.streamed(continuation, result))
    }

    var wantsDetailsAtHead: Bool { true }

    func noteDetails(_ details: ResponseDetails) {
        self.details = details
    }

    func didReceiveHead(_ head: ParsedHead) throws(HTTPClientError) {
        let stream = self.makeStream()
        self.stream = stream
        var response = HTTPClientStreamingResponse(head: head.response, body: ResponseBody(source: stream))
        self.details.take()?.apply(to: &response)
        self.deliverHead(.success(response))
    }

    private func deliverHead(_ result: Result<HTTPClientStreamingResponse, HTTPClientError>) {
        self.heldHead = result
        self.runAtEndOfTurn()
    }

    func endOfTurn() {
        if let result = self.heldHead.take() { self.resume(result) }
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) -> Bool {
        self.stream?.yield(bytes) ?? true
    }

    func didFinish(trailers: HTTPFields?, details: ResponseDetails) {
        self.onEnd()
        if let stream = self.stream {
            stream.metrics = details.metrics
            stream.finish(.success(trailers))
        } else {
            self.deliverHead(.failure(HTTPClientError(.invalidResponse, detail: "response ended without a head")))
        }
    }

    func didFail(_ error: HTTPClientError) {
        self.onEnd()
        if let stream = self.stream {
            stream.finish(.failure(error))
        } else {
            self.deliverHead(.failure(error))
        }
    }
}

/// A response whose body is still arriving: the seam's ``TransportResponse``.
public typealias HTTPClientStreamingResponse = TransportResponse
