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
/// (`HTTPBody.isReplayable`).
public protocol Middleware: Sendable {
    func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse
}

/// The rest of the chain, as a middleware sees it: call it with the request to pass it on.
public struct MiddlewareNext: Sendable {
    @usableFromInline let link: MiddlewareLink

    /// The rest of a chain as a function (to call a middleware by hand, in a test say).
    public init(_ run: @escaping @Sendable (ClientRequest) async throws(ClientError) -> ClientResponse) {
        self.link = MiddlewareLink(.function(run))
    }

    @usableFromInline
    init(link: MiddlewareLink) {
        self.link = link
    }

    // Inlined into the calling middleware, so that passing a request on costs one call: the
    // next middleware's own, or the transport's.
    @inlinable @inline(__always)
    public func callAsFunction(_ request: ClientRequest) async throws(ClientError) -> ClientResponse {
        switch self.link.step {
        case .middleware(let middleware, let following):
            return try await middleware.intercept(request, next: MiddlewareNext(link: following))
        case .transport(let transport, let maxBodySize):
            return try await Client.sendToTransport(request.head, body: request.body, options: request.options.transport,
                                                    limit: request.options.maxBodySize ?? maxBodySize,
                                                    streaming: request.isStreaming, transport: transport)
        case .function(let run):
            return try await run(request)
        }
    }
}

/// One link of a client's chain, built once with the client: a middleware and the link
/// after it, or, at the end, the transport (or a function standing in for it).
@usableFromInline
final class MiddlewareLink: Sendable {
    @usableFromInline
    enum Step: Sendable {
        case middleware(any Middleware, MiddlewareLink)
        case transport(any Transport, maxBodySize: Int)
        case function(@Sendable (ClientRequest) async throws(ClientError) -> ClientResponse)
    }

    @usableFromInline let step: Step

    init(_ step: Step) {
        self.step = step
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
    /// The client's coders, for a middleware that decodes a response (a login's token) or
    /// encodes a body as the client would.
    public let coders: Coders

    public init(head: HTTPRequest, body: HTTPBody? = nil, operationName: String, baseURL: BaseURL,
                options: Client.CallOptions = Client.CallOptions(), metadata: RequestMetadata = RequestMetadata(),
                isStreaming: Bool = false, coders: Coders = .json) {
        self.coders = coders
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
    /// The transport's answer, kept in the form it came in: a collected one is not turned
    /// into a stream (three allocations and copies of every field) unless a middleware asks
    /// for it as one — passing a collected response through the chain copies nothing.
    enum Answer: Sendable {
        case collected(CollectedResponse)
        case streamed(TransportResponse)
    }

    var answer: Answer
    /// The request this answers, as it was sent (after every middleware's changes).
    public var request: HTTPRequest
    /// The URL the response came from (after redirects).
    public var url: String

    public init(_ exchange: TransportResponse, request: HTTPRequest, url: String) {
        self.answer = .streamed(exchange)
        self.request = request
        self.url = url
    }

    /// A response whose body the transport collected.
    init(collected: CollectedResponse, request: HTTPRequest, url: String) {
        self.answer = .collected(collected)
        self.request = request
        self.url = url
    }

    /// A response made by a middleware itself (a cache, a stub): `body` as the whole body.
    public init(head: HTTPResponse, body: [UInt8], for request: ClientRequest) {
        self.init(collected: CollectedResponse(head: head, body: body), request: request.head, url: request.url)
    }

    /// Everything the transport said: head, body, redirects, version, interim heads, metrics.
    public var exchange: TransportResponse {
        get {
            switch self.answer {
            case .collected(let collected): TransportResponse(collected)
            case .streamed(let streamed): streamed
            }
        }
        set { self.answer = .streamed(newValue) }
    }

    /// The response head.
    public var head: HTTPResponse {
        get {
            switch self.answer {
            case .collected(let collected): collected.head
            case .streamed(let streamed): streamed.head
            }
        }
        set {
            switch self.answer {
            case .collected(var collected):
                collected.head = newValue
                self.answer = .collected(collected)
            case .streamed(var streamed):
                streamed.head = newValue
                self.answer = .streamed(streamed)
            }
        }
    }

    /// The body, chunk by chunk (read once; a middleware that reads it hands on a new one).
    /// A collected body reads as one chunk, and can be read again.
    public var body: ResponseBody {
        get {
            switch self.answer {
            case .collected(let collected): .bytes(collected.body, trailers: collected.trailers)
            case .streamed(let streamed): streamed.body
            }
        }
        set {
            var exchange = self.exchange
            exchange.body = newValue
            self.answer = .streamed(exchange)
        }
    }

    public var status: HTTPResponse.Status { self.head.status }
    public var headerFields: HTTPFields { self.head.headerFields }

    /// The whole body when the transport collected it, or a middleware handed on a whole
    /// body (``setCollectedBody(_:)``): read as it is, without going through ``body``'s chunks.
    var collectedBody: [UInt8]? {
        if case .collected(let collected) = self.answer { return collected.body }
        return nil
    }

    /// Replaces the body with `bytes`, read in full (the trailers and details stay).
    mutating func setCollectedBody(_ bytes: [UInt8]) {
        switch self.answer {
        case .collected(var collected):
            collected.body = bytes
            self.answer = .collected(collected)
        case .streamed(let streamed):
            self.answer = .collected(CollectedResponse(streamed, body: bytes))
        }
    }

    /// What the transport said besides head and body.
    var details: ExchangeDetails {
        switch self.answer {
        case .collected(let collected): ExchangeDetails(collected)
        case .streamed(let streamed): ExchangeDetails(streamed)
        }
    }

    /// Drops the body of a response that will be answered again (a retry, a replay): a
    /// collected one is already off its connection; what is left of a stream read for a
    /// collected call is read, up to 64 KiB, so that its connection is kept; a stream's is
    /// cancelled, as it may never end.
    func discardBody(streaming: Bool) async {
        guard case .streamed(let streamed) = self.answer else { return }
        let kept = streaming ? false : await streamed.body.drain(upTo: 64 * 1024)
        if !kept { streamed.body.cancel() }
    }
}
