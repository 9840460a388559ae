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
///     func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(TransportError) -> TransportResponse {
///         print(request.method, request.path ?? "/")
///         return try await next.send(request, body: body, options: options)
///     }
/// }
/// ```
///
/// A transport honours the options' deadline and the calling task's cancellation (failing
/// with `.cancelled`), reports every failure as an ``TransportError``, and calls the body's
/// ``HTTPBody/requestEnded(_:)`` once it is done with it (sent, or never to be).
///
/// The calls are `nonisolated(nonsending)`: they run on the caller's executor. A `send`
/// written as a plain `async` function, as above, conforms too; it runs on the global
/// executor instead, at the cost of a hop there and back per request.
public protocol Transport: Sendable {
    /// Sends `request` with `body` and returns once the response head has arrived; the body
    /// follows through ``TransportResponse/body``. The one call a transport must implement.
    nonisolated(nonsending) func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(TransportError) -> TransportResponse

    /// The whole response, its body collected: more than `maxBodySize` bytes fail with
    /// `.bodyTooLarge`. Built on ``send(_:body:options:)`` by default; a transport with a
    /// cheaper way to collect (the engine) provides its own.
    nonisolated(nonsending) func sendCollecting(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions,
                                                maxBodySize: Int) async throws(TransportError) -> CollectedResponse
}

extension Transport {
    nonisolated(nonsending) public func sendCollecting(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions,
                               maxBodySize: Int) async throws(TransportError) -> CollectedResponse {
        let streamed = try await self.send(request, body: body, options: options)
        let bytes = try await streamed.body.collect(upTo: maxBodySize)
        return CollectedResponse(streamed, body: bytes)
    }
}

extension CollectedResponse {
    /// `streamed` with its body collected as `body`: the same head, details and metrics.
    public init(_ streamed: TransportResponse, body: [UInt8]) {
        self.init(head: streamed.head, body: body, trailers: streamed.body.trailers)
        self.extras = streamed.extras
        self.version = streamed.version
        self.metrics = streamed.body.metrics ?? streamed.metrics
    }
}

extension TransportResponse {
    /// A collected response as one that streams: its body handed out as one chunk.
    public init(_ collected: CollectedResponse) {
        self.init(head: collected.head, body: .bytes(collected.body, trailers: collected.trailers))
        self.extras = collected.extras
        self.version = collected.version
        self.metrics = collected.metrics
    }
}

/// A response whose body may still be arriving.
public struct TransportResponse: Sendable {
    public var head: HTTPResponse
    /// The body, chunk by chunk. Reading it is what lets the connection read more.
    public var body: ResponseBody
    /// The HTTP version the response came in.
    public var version: HTTPVersion = .http1_1
    /// Where the time went, up to the head (see ``ResponseBody/metrics`` for the whole).
    public var metrics: TransportMetrics = TransportMetrics()
    /// What most responses lack, behind one reference (see ``ExchangeExtras``).
    package var extras = ExchangeExtras()

    /// The URLs requested on the way to this response when redirects were followed, the
    /// first request's included and this response's last; empty when none was.
    public var redirectChain: [String] {
        get { self.extras.values.redirectChain }
        set { self.extras.values.redirectChain = newValue }
    }
    /// Why this 3xx response was returned instead of followed, when redirects were on but
    /// this one could not be (a 307 or 308 asking for a streamed body to be sent again).
    public var unfollowedRedirect: String? {
        get { self.extras.values.unfollowedRedirect }
        set { self.extras.values.unfollowedRedirect = newValue }
    }
    /// Each redirect followed on the way: the request sent and the 3xx that answered it.
    public var redirects: [RedirectHop] {
        get { self.extras.values.redirects }
        set { self.extras.values.redirects = newValue }
    }
    /// The request that this response answers: the last one of a redirect chain (nil when
    /// it is the request as given).
    public var effectiveRequest: HTTPRequest? {
        get { self.extras.values.effectiveRequest }
        set { self.extras.values.effectiveRequest = newValue }
    }
    /// Interim (1xx) responses that came before this one (`100 Continue`, `103 Early Hints`).
    public var interimResponses: [HTTPResponse] {
        get { self.extras.values.interimResponses }
        set { self.extras.values.interimResponses = newValue }
    }
    /// When the transport decoded the body from a content coding (`gzip`,
    /// `deflate`): the body is the decoded bytes, while ``head`` still says what the server
    /// sent. A cache stores such a body without its `Content-Encoding`.
    public var decodedContentEncoding: String? {
        get { self.extras.values.decodedContentEncoding }
        set { self.extras.values.decodedContentEncoding = newValue }
    }

    public init(head: HTTPResponse, body: ResponseBody, redirectChain: [String] = [], unfollowedRedirect: String? = nil) {
        self.head = head
        self.body = body
        var extras = ExchangeExtras.Values()
        extras.redirectChain = redirectChain
        extras.unfollowedRedirect = unfollowedRedirect
        self.extras = ExchangeExtras(extras)
    }

    /// Shorthand for `head.status`.
    public var status: HTTPResponse.Status { self.head.status }
    /// Shorthand for `head.headerFields`.
    public var headerFields: HTTPFields { self.head.headerFields }
}
