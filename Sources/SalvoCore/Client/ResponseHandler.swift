@_spi(Benchmarks) import SalvoTransport
import HTTPTypes

/// Receives a response as it arrives, on the connection's loop thread.
///
/// The engine's own APIs (collected, streamed, completion handlers) are handlers; so is the
/// load generator. Exactly one of `didFinish` or `didFail` ends every request.
protocol ResponseHandler: AnyObject {
    /// Interim 1xx responses before the final head.
    func didReceiveInformational(_ head: HTTPResponse)
    /// The final head, its fields still as bytes (``ParsedHead/response`` builds them).
    func didReceiveHead(_ head: ParsedHead) throws(HTTPClientError)
    /// Body bytes, valid only during the call. Return false to stop reading from the socket
    /// until the task's `resumeReading()` is called.
    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) -> Bool
    func didFinish(trailers: HTTPFields?)
    func didFail(_ error: HTTPClientError)
    /// Before the final head: the URLs followed to it (the first one included), and why a
    /// last redirect was not followed, if it was not.
    func noteRedirects(chain: [String], unfollowed: String?)
    /// Whether ``noteDetails(_:)`` is wanted: true for a handler that hands the response out
    /// at its head (a stream); one that collects the response learns it all at the end.
    var wantsDetailsAtHead: Bool { get }
    /// Right before the final head, when ``wantsDetailsAtHead``: what else is known of the
    /// response by then.
    func noteDetails(_ details: ResponseDetails)
    /// Right before `didFinish`: the same details, with the metrics of the whole exchange.
    func noteFinalDetails(_ details: ResponseDetails)
}

extension ResponseHandler {
    func didReceiveInformational(_ head: HTTPResponse) {}
    func noteRedirects(chain: [String], unfollowed: String?) {}
    func noteDetails(_ details: ResponseDetails) {}
    func noteFinalDetails(_ details: ResponseDetails) {}
}

/// What the engine knows of a response besides its head, handed over with it.
struct ResponseDetails {
    var version: HTTPVersion
    /// The content coding the body is decoded from, when it is.
    var decodedContentEncoding: String?
    var redirects: [RedirectHop]
    /// The last request of a redirect chain; nil without redirects.
    var effectiveRequest: HTTPRequest?
    var metrics: TransportMetrics

    func apply(to response: inout TransportResponse) {
        response.version = self.version
        response.decodedContentEncoding = self.decodedContentEncoding
        response.redirects = self.redirects
        response.effectiveRequest = self.effectiveRequest
        response.metrics = self.metrics
    }
}
