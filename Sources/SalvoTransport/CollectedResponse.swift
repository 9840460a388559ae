import HTTPTypes

/// A complete response: head, collected body, and trailers if a chunked body had any — what
/// the engine's `execute` returns, and a transport's collected form
/// (``Transport/sendCollecting(_:body:options:maxBodySize:)``).
///
/// Laid out to be cheap to hand along: the head is one reference (built into `HTTPFields`
/// only when read), and what most responses lack — redirects, interim responses, a decoded
/// coding — sits behind one more, nil when empty.
public struct CollectedResponse: Sendable {
    /// The status line and header fields. A response from the engine builds its
    /// `HTTPFields` the first time this is read (and keeps them): reading only ``status``
    /// and ``body`` costs no field parsing at all.
    public var head: HTTPResponse {
        get { self.storedHead.response }
        set { self.storedHead = ParsedHead(built: newValue) }
        _modify {
            // In place: `response.head.headerFields[name] = value` edits the one built head,
            // taken out of a box no other response shares, instead of a copy of every field.
            var head = isKnownUniquelyReferenced(&self.storedHead) ? self.storedHead.takeResponse() : self.storedHead.response
            defer { self.storedHead = ParsedHead(built: head) }
            yield &head
        }
    }
    private var storedHead: ParsedHead
    public var body: [UInt8]
    public var trailers: HTTPFields?
    /// The HTTP version the response came in.
    public var version: HTTPVersion = .http1_1
    /// Where the time of the whole exchange went, and the bytes it moved.
    public var metrics = TransportMetrics()
    package var extras = ExchangeExtras()

    public init(head: HTTPResponse, body: [UInt8], trailers: HTTPFields? = nil) {
        self.storedHead = ParsedHead(built: head)
        self.body = body
        self.trailers = trailers
    }

    /// A response whose head is built when first read, made whole in one step: every part is
    /// moved in, none copied (the engine makes one per collected request).
    package init(parsedHead: consuming ParsedHead, body: consuming [UInt8], trailers: consuming HTTPFields?,
                 version: HTTPVersion, metrics: consuming TransportMetrics, extras: consuming ExchangeExtras) {
        self.storedHead = parsedHead
        self.body = body
        self.trailers = trailers
        self.version = version
        self.metrics = metrics
        self.extras = extras
    }

    /// Shorthand for `head.status` (read without building the head's fields).
    public var status: HTTPResponse.Status { self.storedHead.status }
    /// Shorthand for `head.headerFields`.
    public var headerFields: HTTPFields { self.head.headerFields }

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
    /// The request this response answers, when redirects led to it (nil: the one given).
    public var effectiveRequest: HTTPRequest? {
        get { self.extras.values.effectiveRequest }
        set { self.extras.values.effectiveRequest = newValue }
    }
    /// Interim (1xx) responses that came before this one.
    public var interimResponses: [HTTPResponse] {
        get { self.extras.values.interimResponses }
        set { self.extras.values.interimResponses = newValue }
    }
    /// When the body was decoded from a content coding (gzip, deflate), that coding; the
    /// head still says what the server sent.
    public var decodedContentEncoding: String? {
        get { self.extras.values.decodedContentEncoding }
        set { self.extras.values.decodedContentEncoding = newValue }
    }
}
