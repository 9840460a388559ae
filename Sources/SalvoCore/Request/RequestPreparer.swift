import HTTPTypes
import SalvoTransport

/// Turns a caller's request into a ``PreparedRequest`` under one client's configuration:
/// the connection key (proxy, Unix socket, TLS configuration), the fields the client adds,
/// the head encoded once, the deadlines.
///
/// A client has one; each request's owner keeps a reference to it, so that a redirect's next
/// request is prepared by the owner itself, on its loop, under the same rules as the first.
/// Immutable, so shared by any thread.
final class RequestPreparer: Sendable {
    let configuration: HTTPClient.Configuration
    let tlsContexts: TLSContexts
    /// Whether the client was shut down: then nothing more is prepared, redirects included.
    private let life: ClientLife
    /// Whether `configuration.proxy` names any proxy: read once, not per request (the
    /// proxy settings are a few strings and fields to copy).
    private let usesProxies: Bool

    init(configuration: HTTPClient.Configuration, tlsContexts: TLSContexts, life: ClientLife = ClientLife(base: nil)) {
        self.configuration = configuration
        self.tlsContexts = tlsContexts
        self.life = life
        self.usesProxies = configuration.proxy.isEnabled
    }

    static let proxyConnection = HTTPField.Name("Proxy-Connection")!

    /// A request's own bound, else the client's; zero (or less) is no bound, as `-m 0` is for
    /// curl and a zero timeout for Go's client and undici.
    static func bound(_ own: Duration?, else fallback: Duration?) -> Duration? {
        TransportOptions.bound(own ?? fallback)
    }

    /// `redirectedFrom`: for a redirect's next request, the key of the one before it. Such a
    /// request gets none of the client's default fields (it carries what was kept of the
    /// first one's: a default credential dropped on the way to another origin must not come
    /// back), and keeps a `Proxy-Authorization` only when the same proxy carries it.
    func prepare(_ request: HTTPRequest, body: HTTPBody?, options: HTTPClient.RequestOptions,
                 redirectedFrom previous: ConnectionKey? = nil) throws(TransportError) -> PreparedRequest {
        guard !self.life.isStopped else { throw TransportError(.shutdown, phase: .request) }
        var request = request
        var (key, rewriteAuthority) = try request.canonicalConnectionKey()
        if rewriteAuthority { request.authority = key.authority }
        key.unixSocketPath = options.unixSocketPath ?? self.configuration.unixSocketPath
        key.httpVersion = options.httpVersion ?? self.configuration.httpVersion
        if key.unixSocketPath == nil, options.proxy != nil || self.usesProxies,
           case let proxies = options.proxy ?? self.configuration.proxy, proxies.isEnabled {
            key.proxy = proxies.proxy(for: key.scheme, host: key.host)
            if key.proxy == nil, let refusal = proxies.refusal(for: key.scheme, host: key.host) {
                // The proxy meant for it cannot be used: never sent direct instead.
                throw refusal
            }
            if let proxy = key.proxy {
                guard (1...65535).contains(proxy.port), !proxy.host.isEmpty else {
                    throw TransportError(.invalidConfiguration, phase: .request, detail: "proxy \(proxy): no host, or a port outside 1...65535")
                }
            }
        }
        var forwarded = false
        if key.scheme == .http, let proxy = key.proxy { forwarded = !proxy.tunnelsPlainHTTP }
        // The client's default fields, under what the body says of itself (the rule both layers
        // share; the body's fields are written after the framing, below); a redirect's next
        // request gets no defaults — only what the chain kept.
        var said: (contentType: String?, contentEncoding: String?) = (nil, nil)
        if let body, body.contentType != nil || body.contentEncoding != nil {
            said = request.headerFields.unsaid(by: body)
        }
        if previous == nil, !self.configuration.headerFields.isEmpty {
            said = request.headerFields.addDefaults(self.configuration.headerFields, for: body, addingBodyFields: false)
        }
        let own = RequestFieldSummary(request.headerFields)
        if own.hasProxyFields, !forwarded || (previous != nil && previous?.proxy != key.proxy) {
            // Fields for a proxy that forwards the request: never sent to an origin (through a
            // tunnel, or direct — after a redirect to a host that bypasses the proxy, say), nor
            // to another proxy than the one the request before a redirect went through.
            request.headerFields[.proxyAuthorization] = nil
            request.headerFields[Self.proxyConnection] = nil
        }
        var tls: TLSContext? = nil
        if key.scheme == .https {
            (key.tlsConfigurationID, tls) = try self.tlsContexts.context(for: options.tls)
        }
        let requestBody = body
        var bytes: [UInt8] = []
        var stream: StreamSource? = nil
        switch body?.content {
        case .bytes(let content): bytes = content
        case .stream(let length, let replayable, let produce):
            stream = StreamSource(length: length, replayable: replayable, produce: produce)
        case nil: break
        }
        // Fields the client adds are written by the encoder, not added to the request's
        // HTTPFields (which would copy them for every request).
        var added = RequestEncoder.AddedFields()
        if let userAgent = self.configuration.userAgent, !own.hasUserAgent {
            added.userAgent = userAgent
        }
        // What the body says of itself, unless the request says otherwise, written after the
        // framing as curl writes them.
        added.contentType = try said.contentType.map { (value) throws(TransportError) in try RequestEncoder.checkedValue(value, of: "Content-Type") }
        added.contentEncoding = try said.contentEncoding.map { (value) throws(TransportError) in try RequestEncoder.checkedValue(value, of: "Content-Encoding") }
        // Decoding is ours only when the Accept-Encoding is: a caller who set their own
        // gets the body as the server sent it.
        let decompression = options.decompression ?? self.configuration.decompression
        var decoding: ContentDecoder.Limits? = nil
        if decompression.isEnabled, request.method != .head, !own.hasAcceptEncoding {
            added.acceptEncoding = true
            decoding = decompression.limits
        }
        added.omitsHost = options.omitsHost
        if forwarded, let proxy = key.proxy {
            // The proxy gets the whole URL, and the credentials meant for it.
            added.absoluteFormPrefix = "http://" + key.authority
            added.proxyAuthorization = proxy.credentials?.basicAuthorization
        }
        // The request's own Expect decides; else the option adds one (for a body only).
        let hasBody = stream.map { $0.length != 0 } ?? !bytes.isEmpty
        let ownExpect = own.expect
        added.expectContinue = options.expectContinue && hasBody && ownExpect == nil
        let head = try PreparationCache.head(for: request, body: requestBody?.announcedLength ?? .none, adding: added)
        var bounds = options.transport
        if bounds.timeout == nil { bounds.timeout = self.configuration.requestTimeout }
        let limit = bounds.effectiveTimeout
        let now = Deadline.now()
        let deadline = limit.map { now + $0 } ?? .distantFuture
        let headTimeout = Self.bound(options.headTimeout, else: self.configuration.headTimeout)
        let headDeadline = headTimeout.map { now + $0 } ?? .distantFuture
        let closeAfter = own.asksClose
        let redirects = options.redirects ?? self.configuration.redirects
        let expectsContinue = added.expectContinue || (hasBody && ownExpect.map { $0.lowercased().contains("100-continue") } ?? false)
        let shape = RequestShape(key: key, tls: tls, expectsContinue: expectsContinue,
                                 readTimeout: Self.bound(options.readTimeout, else: self.configuration.readTimeout),
                                 writeTimeout: Self.bound(options.writeTimeout, else: self.configuration.writeTimeout),
                                 closeAfter: closeAfter, request: consume request, options: options,
                                 redirects: redirects.follow ? redirects : nil, decoding: decoding)
        return PreparedRequest(shape: shape, head: head, body: bytes, stream: stream, deadline: deadline, startedAt: now,
                               headDeadline: headDeadline, headTimeout: headTimeout, requestBody: requestBody)
    }
}
