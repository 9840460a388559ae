import Foundation

/// One client per API: a base URL, a transport, and what every request shares — coders,
/// default headers and query items, a timeout, validators.
///
/// ```swift
/// let client = try Client(baseURL: "https://api.example.com/v1")
/// let user = try await client.value(Endpoint<User>.get("/users/\(segment: 7)"))
/// ```
///
/// The transport is Salvo's engine by default (one shared `HTTPClient` for the process); a
/// `MockTransport` in tests, or any other `Transport`. A client is `Sendable`: share it.
///
/// Ways to send, by what you want back:
/// - `send(_:options:)`: the ``Response`` whatever its status, bodies decoded on demand;
/// - `value(_:options:)`: the decoded success body, or a ``ClientError`` that carries the
///   status, the raw body and the decoded failure body;
/// - `valueAndResponse(_:options:)`: both;
/// - `outcome(_:options:)`: `(value, error)`, never throwing;
/// - each with a completion handler too.
public final class Client: Sendable {
    /// What every request of the client shares.
    public struct Configuration: Sendable {
        /// Encoder and decoder for JSON bodies.
        public var coders: Coders
        /// Added to every request that does not set them itself.
        public var headerFields: HTTPFields
        /// Added after every request's own query items.
        public var queryItems: [QueryItem]
        /// The whole exchange, per request (a call may set its own).
        public var timeout: Duration?
        /// The largest response body read into memory.
        public var maxBodySize: Int
        /// An observable view of the client's calls, if you want one.
        public var activity: ClientActivity?
        /// Checks every response must pass before its success body is decoded (not by
        /// `Client.send(_:options:)`, which returns any status): by default the status is
        /// 2xx. Decoding is the real check of a body; add ``ContentTypeValidator`` to refuse a
        /// response whose `Content-Type` the request's `Accept` does not name.
        public var validators: [any ResponseValidator]
        /// Code every request and response passes through, in this order: the first sees
        /// the request first and the response last (see ``Middleware``).
        public var middleware: [any Middleware]
        /// An HTTP cache for the client's calls (none by default). It runs after
        /// ``middleware``, the last before the transport, so it sees requests as they go out.
        public var cache: HTTPCache?
        /// How calls use ``cache`` when they do not say (``CachePolicy/useProtocolCachePolicy``).
        public var cachePolicy: CachePolicy

        public init(coders: Coders = .json, headerFields: HTTPFields = [:], queryItems: [QueryItem] = [],
                    timeout: Duration? = nil, maxBodySize: Int = 64 << 20,
                    validators: [any ResponseValidator] = [StatusCodeValidator()],
                    middleware: [any Middleware] = [], activity: ClientActivity? = nil,
                    cache: HTTPCache? = nil, cachePolicy: CachePolicy = .useProtocolCachePolicy) {
            self.cache = cache
            self.cachePolicy = cachePolicy
            self.coders = coders
            self.headerFields = headerFields
            self.queryItems = queryItems
            self.timeout = timeout
            self.maxBodySize = maxBodySize
            self.validators = validators
            self.middleware = middleware
            self.activity = activity
        }
    }

    /// Settings of one call that override the client's.
    ///
    /// ```swift
    /// let options = Client.CallOptions(timeout: .seconds(5), validators: [StatusCodeValidator(acceptable: 200...404)])
    /// let user = try await client.value(GetUser(id: 7), options: options)
    /// ```
    public struct CallOptions: Sendable, TransportOptionsCarrying {
        /// The bounds on the call's time, handed to the transport as they are (the seam's
        /// `TransportOptions`): `timeout` (the client's when nil), `deadline`, `headTimeout`,
        /// `readTimeout` and `writeTimeout` read and write them (`TransportOptionsCarrying`).
        public var transport: TransportOptions

        /// Validators for this call instead of the client's.
        public var validators: [any ResponseValidator]?
        public var maxBodySize: Int?
        /// The call's id, to cancel it by (``Client/cancel(_:)``) and to follow it in logs and
        /// middleware; a new one when nil.
        public var id: RequestID?
        /// How the call uses the client's HTTP cache (the client's ``Configuration/cachePolicy``
        /// when nil).
        public var cachePolicy: CachePolicy?

        public init(timeout: Duration? = nil, validators: [any ResponseValidator]? = nil, maxBodySize: Int? = nil,
                    deadline: ContinuousClock.Instant? = nil, headTimeout: Duration? = nil, readTimeout: Duration? = nil,
                    id: RequestID? = nil, cachePolicy: CachePolicy? = nil) {
            self.cachePolicy = cachePolicy
            self.transport = TransportOptions(timeout: timeout, deadline: deadline, headTimeout: headTimeout, readTimeout: readTimeout)
            self.id = id
            self.validators = validators
            self.maxBodySize = maxBodySize
        }
    }

    public let baseURL: BaseURL
    public let transport: any Transport
    public let configuration: Configuration
    /// The middleware, linked once (nil without any).
    let chain: MiddlewareNext?
    /// The same middleware as a list (the cache's last), for a request answered by a stand-in
    /// for the transport.
    let middleware: [any Middleware]
    /// The client's cache when it is the only middleware: then a fresh answer it holds is
    /// given before the call builds its way through the chain.
    let cacheAlone: HTTPCache?
    /// The calls running with an id, to cancel them by it.
    let calls = CallRegistry()

    /// A client for `baseURL` over `transport` (default: Salvo's engine, shared).
    public init(baseURL: BaseURL, transport: (any Transport)? = nil, configuration: Configuration = Configuration()) {
        self.baseURL = baseURL
        self.transport = transport ?? DefaultTransport.shared
        self.configuration = configuration
        let cache = configuration.cache.map { [CacheMiddleware(cache: $0) as any Middleware] } ?? []
        self.middleware = configuration.middleware + cache
        self.chain = Self.chain(self.middleware, transport: self.transport, defaults: configuration)
        self.cacheAlone = configuration.middleware.isEmpty ? configuration.cache : nil
    }

    /// A client for the URL in `baseURL`.
    ///
    /// - Throws: ``ClientError`` `.invalidBaseURL` saying what is wrong with it.
    public convenience init(baseURL: String, transport: (any Transport)? = nil, configuration: Configuration = Configuration()) throws(ClientError) {
        self.init(baseURL: try BaseURL(baseURL), transport: transport, configuration: configuration)
    }

    /// A client for a Foundation `URL`.
    ///
    /// - Throws: ``ClientError`` `.invalidBaseURL` when it is not an absolute http or https URL.
    public convenience init(baseURL: URL, transport: (any Transport)? = nil, configuration: Configuration = Configuration()) throws(ClientError) {
        self.init(baseURL: try BaseURL(baseURL.absoluteString), transport: transport, configuration: configuration)
    }

    /// A client for a Foundation `URL` whose JSON goes through `encoder` and `decoder`.
    public convenience init(baseURL: URL, transport: (any Transport)? = nil, encoder: JSONEncoder,
                            decoder: JSONDecoder = JSONDecoder()) throws(ClientError) {
        self.init(baseURL: try BaseURL(baseURL.absoluteString), transport: transport,
                  configuration: Configuration(coders: Coders(encoder: encoder, decoder: decoder)))
    }

    /// A client whose JSON goes through `encoder` and `decoder`.
    public convenience init(baseURL: String, transport: (any Transport)? = nil, encoder: JSONEncoder = JSONEncoder(),
                            decoder: JSONDecoder = JSONDecoder()) throws(ClientError) {
        self.init(baseURL: try BaseURL(baseURL), transport: transport,
                  configuration: Configuration(coders: Coders(encoder: encoder, decoder: decoder)))
    }

    /// A client for `baseURL` with its coders (the rest of the configuration by default).
    public convenience init(baseURL: String, transport: (any Transport)? = nil, coders: Coders) throws(ClientError) {
        self.init(baseURL: try BaseURL(baseURL), transport: transport, configuration: Configuration(coders: coders))
    }

    // MARK: The exchange

    /// The request as it goes out: head and body (`body` instead of the request's own, when given).
    func prepare<R: Request>(_ request: R, body replacement: HTTPBody? = nil) throws(ClientError) -> (HTTPRequest, HTTPBody?) {
        let coders = self.configuration.coders
        var head = try request.makeHTTPRequest(baseURL: self.baseURL, coders: coders)
        if !self.configuration.queryItems.isEmpty {
            let extra = QueryItem.encode(self.configuration.queryItems)
            let path = head.path ?? "/"
            head.path = path + (path.contains("?") ? "&" : "?") + extra
        }
        let body: HTTPBody?
        if let replacement {
            body = replacement
        } else {
            body = try request.encodeBody(with: coders)
        }
        // The client's defaults, and the body's own type, in the head: middleware, mocks and
        // logs see the request as it goes out.
        head.headerFields.addDefaults(self.configuration.headerFields, for: body)
        return (head, body)
    }

    /// The call's bounds for the transport, the client's timeout filling in for none.
    func transportOptions(_ options: CallOptions) -> TransportOptions {
        var transport = options.transport
        if transport.timeout == nil { transport.timeout = self.configuration.timeout }
        return transport
    }

    /// The URL a response came from: the last of its redirects, or the request's.
    static func finalURL(of head: HTTPRequest, _ response: TransportResponse) -> String {
        Self.finalURL(of: head, chain: response.redirectChain)
    }

    static func finalURL(of head: HTTPRequest, chain: [String]) -> String {
        chain.last ?? "\(head.scheme ?? "http")://\(head.authority ?? "")\(head.path ?? "/")"
    }

    /// Sends `request` and reads the whole response.
    func exchange<R: Request>(_ request: R, options: CallOptions) async throws(ClientError) -> Response<R.SuccessResponseBody, R.FailureResponseBody> {
        let (head, body) = try self.prepare(request)
        return try await self.exchange(request, head: head, body: body, options: options)
    }

    /// Sends a prepared `request` and reads the whole response.
    func exchange<R: Request>(_ request: R, head: HTTPRequest, body: HTTPBody?, options: CallOptions) async throws(ClientError)
        -> Response<R.SuccessResponseBody, R.FailureResponseBody> {
        let metadata = request.metadata
        let options = options.withTimeout(of: metadata)
        let limit = options.maxBodySize ?? self.configuration.maxBodySize
        let coders = self.configuration.coders
        let successDecoder = { @Sendable (bytes: [UInt8]) throws(ClientError) in try request.decodeSuccessBody(from: bytes, coders: coders) }
        let failureDecoder = { @Sendable (bytes: [UInt8]) throws(ClientError) in try request.decodeFailureBody(from: bytes, coders: coders) }
        let validators = self.validators(for: options)
        if self.chain == nil, options.id == nil, self.configuration.activity == nil, !metadata.routesOnItsOwn {
            // The fast case — no middleware, no id to cancel by, no activity view — reaches
            // the transport's collected form with no wrapper around the call: each one costs
            // frames in an async function, and this is the typed client's hot path.
            let collected = try await Self.collect(head, body: body, options: self.transportOptions(options), limit: limit, transport: self.transport)
            return Response(request: head, head: collected.head, body: collected.body,
                            urlString: Self.finalURL(of: head, chain: collected.redirectChain), details: ExchangeDetails(collected),
                            coders: coders, validators: validators, successDecoder: successDecoder, failureDecoder: failureDecoder)
        }
        // Otherwise the one way out: tracked, cancellable by id, through the middleware.
        let routed = try await self.route(head, body: body, operationName: request.operationName, metadata: metadata, options: options)
        let bytes: [UInt8]
        if let collected = routed.collectedBody {
            // A body a middleware handed on (a shared exchange's, a cache's) meets this
            // call's limit too.
            guard collected.count <= limit else { throw Self.collectingError(TransportError(.bodyTooLarge), limit: limit) }
            bytes = collected
        } else {
            do {
                bytes = try await routed.body.collect(upTo: limit)
            } catch {
                throw Self.collectingError(error, limit: limit)
            }
        }
        return Response(request: routed.request, head: routed.head, body: bytes, urlString: routed.url, details: routed.details, coders: coders,
                        validators: validators, successDecoder: successDecoder, failureDecoder: failureDecoder)
    }

    /// The validators in effect for a call: its own, or the client's.
    func validators(for options: CallOptions) -> [any ResponseValidator] {
        options.validators ?? self.configuration.validators
    }
}
