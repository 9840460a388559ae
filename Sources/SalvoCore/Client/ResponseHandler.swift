@_spi(Benchmarks) import SalvoTransport
import HTTPTypes

/// Receives a response as it arrives, on the connection's loop thread.
///
/// The engine's own APIs (collected, streamed, completion handlers) are handlers; so is the
/// load generator. Exactly one of `didFinish` or `didFail` ends every request.
protocol ResponseHandler: AnyObject {
    /// The final head, its fields still as bytes (``ParsedHead/response`` builds them).
    func didReceiveHead(_ head: ParsedHead) throws(HTTPClientError)
    /// Body bytes, valid only during the call. Return false to stop reading from the socket
    /// until the caller's handle asks for more (`CancellationState.resumeReading()`).
    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) -> Bool
    /// The end: the trailers of a chunked body that had any, and what else is known of the
    /// response, the metrics of the whole exchange included.
    func didFinish(trailers: HTTPFields?, details: ResponseDetails)
    func didFail(_ error: HTTPClientError)
    /// Whether ``noteDetails(_:)`` is wanted: true for a handler that hands the response out
    /// at its head (a stream); one that collects the response learns it all at the end.
    var wantsDetailsAtHead: Bool { get }
    /// Right before the final head, when ``wantsDetailsAtHead``: what else is known of the
    /// response by then.
    func noteDetails(_ details: ResponseDetails)
}

extension ResponseHandler {
    func noteDetails(_ details: ResponseDetails) {}
}

/// What the engine knows of a response besides its head, handed over with it.
struct ResponseDetails {
    var version: HTTPVersion
    var metrics: TransportMetrics
    /// Redirects, interim responses, a decoded coding: empty (no object) for most responses.
    var extras: ExchangeExtras

    func apply(to response: inout TransportResponse) {
        response.version = self.version
        response.metrics = self.metrics
        response.extras = self.extras
    }
}
