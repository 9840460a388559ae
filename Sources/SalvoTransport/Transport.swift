import HTTPTypes

/// Something that sends an HTTP request and returns the response as it arrives: the seam
/// between Salvo's typed layer and whatever carries its bytes.
///
/// The engine's `HTTPClient` is one; the typed layer's `MockTransport` is another; anything
/// that can move a request head and body out and a response head and body in can be a third.
/// Bodies stream both ways: a request body of known or unknown length is never forced into
/// memory, and the response body is read as the caller consumes it.
///
/// ```swift
/// struct Recording: Transport {
///     let next: any Transport
///     func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(HTTPClientError) -> TransportResponse {
///         print(request.method, request.path ?? "/")
///         return try await next.send(request, body: body, options: options)
///     }
/// }
/// ```
///
/// A transport honours the options' deadline and the calling task's cancellation (failing
/// with `.cancelled`), reports every failure as an ``HTTPClientError``, and calls the body's
/// ``HTTPBody/requestEnded()`` once it is done with it (sent, or never to be).
public protocol Transport: Sendable {
    /// Sends `request` with `body` and returns once the response head has arrived; the body
    /// follows through ``TransportResponse/body``.
    func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(HTTPClientError) -> TransportResponse
}

/// Settings of one request that a transport honours where it can.
public struct TransportOptions: Sendable, Hashable {
    /// The whole exchange, from the call to the last body byte.
    public var timeout: Duration?

    public init(timeout: Duration? = nil) {
        self.timeout = timeout
    }
}

/// A response whose body may still be arriving.
public struct TransportResponse: Sendable {
    public var head: HTTPResponse
    /// The body, chunk by chunk. Reading it is what lets the connection read more.
    public var body: ResponseBody
    /// The URLs requested on the way to this response when redirects were followed, the
    /// first request's included and this response's last; empty when none was.
    public var redirectChain: [String] = []
    /// Why this 3xx response was returned instead of followed, when redirects were on but
    /// this one could not be (a 307 or 308 asking for a streamed body to be sent again).
    public var unfollowedRedirect: String?

    public init(head: HTTPResponse, body: ResponseBody, redirectChain: [String] = [], unfollowedRedirect: String? = nil) {
        self.head = head
        self.body = body
        self.redirectChain = redirectChain
        self.unfollowedRedirect = unfollowedRedirect
    }

    /// Shorthand for `head.status`.
    public var status: HTTPResponse.Status { self.head.status }
    /// Shorthand for `head.headerFields`.
    public var headerFields: HTTPFields { self.head.headerFields }
}
