/// Code that sees every request of a client on its way out and every response on its way
/// back — to add a header, log, time, retry, answer from a cache, or refuse.
///
/// ```swift
/// struct Timing: Middleware {
///     func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
///         let start = ContinuousClock.now
///         let response = try await next(request)
///         print(request.operationName, response.status.code, ContinuousClock.now - start)
///         return response
///     }
/// }
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(middleware: [Timing()]))
/// ```
///
/// A client's middleware run in the order given: the first sees the request first and the
/// response last. Calling `next` passes the request on (to the next middleware, and after
/// the last to the transport); not calling it answers the request here. Calling it more than
/// once sends the request again — only with a body that can be replayed
/// (``HTTPBody/isReplayable``).
public protocol Middleware: Sendable {
    func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse
}

/// The rest of the chain, as a middleware sees it: call it with the request to pass it on.
public struct MiddlewareNext: Sendable {
    @usableFromInline let link: MiddlewareLink

    /// The rest of a chain as a function (to call a middleware by hand, in a test say).
    public init(_ run: @escaping @Sendable (ClientRequest) async throws(ClientError) -> ClientResponse) {
        self.link = MiddlewareLink(middleware: nil, following: nil, terminal: run)
    }

    @usableFromInline
    init(link: MiddlewareLink) {
        self.link = link
    }

    // Inlined into the calling middleware, so that passing a request on costs one call: the
    // next middleware's own.
    @inlinable
    public func callAsFunction(_ request: ClientRequest) async throws(ClientError) -> ClientResponse {
        if let middleware = self.link.middleware, let following = self.link.following {
            return try await middleware.intercept(request, next: MiddlewareNext(link: following))
        }
        return try await self.link.terminal!(request)
    }
}

/// One link of a client's chain, built once with the client: a middleware and the link
/// after it, or, at the end, the call to the transport.
@usableFromInline
final class MiddlewareLink: Sendable {
    @usableFromInline let middleware: (any Middleware)?
    @usableFromInline let following: MiddlewareLink?
    @usableFromInline let terminal: (@Sendable (ClientRequest) async throws(ClientError) -> ClientResponse)?

    init(middleware: (any Middleware)?, following: MiddlewareLink?,
         terminal: (@Sendable (ClientRequest) async throws(ClientError) -> ClientResponse)?) {
        self.middleware = middleware
        self.following = following
        self.terminal = terminal
    }
}

/// A request on its way through a client's middleware: the head and body as they will be
/// sent, and what is known about the call.
public struct ClientRequest: Sendable {
    /// The request head: method, URL parts and header fields. Change it to change what is sent.
    public var head: HTTPRequest
    /// The body, if any; a streamed body stays streamed.
    public var body: HTTPBody?
    /// The operation's name (``Request/operationName``), for logs and metrics.
    public let operationName: String
    /// The client's base URL.
    public let baseURL: BaseURL
    /// The call's options: timeouts, deadline, validators, body size limit.
    public var options: Client.CallOptions
    /// What the request carries for middleware (tags and typed values).
    public var metadata: RequestMetadata
    /// Whether the caller reads the response as a stream (`stream`, `download`, `events`)
    /// rather than collected; a middleware that reads the body must leave a stream alone.
    public let isStreaming: Bool
    /// The call's id: the caller's (``Client/CallOptions/id``), or one of its own.
    public let id: RequestID

    public init(head: HTTPRequest, body: HTTPBody? = nil, operationName: String, baseURL: BaseURL,
                options: Client.CallOptions = Client.CallOptions(), metadata: RequestMetadata = RequestMetadata(),
                isStreaming: Bool = false) {
        self.id = options.id ?? RequestID()
        self.head = head
        self.body = body
        self.operationName = operationName
        self.baseURL = baseURL
        self.options = options
        self.metadata = metadata
        self.isStreaming = isStreaming
    }

    /// The full URL the request goes to.
    public var url: String {
        "\(self.head.scheme ?? "http")://\(self.head.authority ?? "")\(self.head.path ?? "/")"
    }
}

/// A response on its way back through a client's middleware.
public struct ClientResponse: Sendable {
    /// Everything the transport said: head, body, redirects, version, interim heads, metrics.
    public var exchange: TransportResponse
    /// The request this answers, as it was sent (after every middleware's changes).
    public var request: HTTPRequest
    /// The URL the response came from (after redirects).
    public var url: String
    /// The whole body when the transport collected it and no middleware replaced it: read
    /// as it is, without going through ``body``'s chunks.
    var collectedBody: [UInt8]?

    public init(_ exchange: TransportResponse, request: HTTPRequest, url: String) {
        self.exchange = exchange
        self.request = request
        self.url = url
    }

    /// A response made by a middleware itself (a cache, a stub): `body` as the whole body.
    public init(head: HTTPResponse, body: [UInt8], for request: ClientRequest) {
        self.init(TransportResponse(head: head, body: .bytes(body)), request: request.head, url: request.url)
    }

    /// The response head.
    public var head: HTTPResponse {
        get { self.exchange.head }
        set { self.exchange.head = newValue }
    }

    /// The body, chunk by chunk (read once; a middleware that reads it hands on a new one).
    public var body: ResponseBody {
        get { self.exchange.body }
        set {
            self.exchange.body = newValue
            self.collectedBody = nil
        }
    }

    public var status: HTTPResponse.Status { self.exchange.head.status }

    /// Drops the body of a response that will be answered again (a retry, a replay): what is
    /// left of a collected one is read, up to 64 KiB, so that its connection is kept; a
    /// stream's is cancelled, as it may never end.
    func discardBody(streaming: Bool) async {
        let kept = streaming ? false : await self.body.drain(upTo: 64 * 1024)
        if !kept { self.body.cancel() }
    }
    public var headerFields: HTTPFields { self.exchange.head.headerFields }
}
