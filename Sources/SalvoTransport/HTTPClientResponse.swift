import HTTPTypes

/// A complete response: head, collected body, and trailers if a chunked body had any — what
/// the engine's `execute` returns, and a transport's collected form
/// (``Transport/sendCollecting(_:body:options:maxBodySize:)``).
public struct HTTPClientResponse: Sendable {
    /// The status line and header fields. A response from the engine builds its
    /// `HTTPFields` the first time this is read (and keeps them): reading only ``status``
    /// and ``body`` costs no field parsing at all.
    public var head: HTTPResponse {
        get { self.storedHead.response }
        set { self.storedHead = .built(newValue) }
        _modify {
            // In place: `response.head.headerFields[name] = value` edits one HTTPResponse,
            // not a copy that is then stored back (which would copy every field each time).
            var head = self.storedHead.response
            self.storedHead = .built(Self.placeholder)
            defer { self.storedHead = .built(head) }
            yield &head
        }
    }
    private static let placeholder = HTTPResponse(status: .ok)
    private var storedHead: ResponseHeadStorage
    public var body: [UInt8]
    public var trailers: HTTPFields?
    /// The URLs requested on the way to this response when redirects were followed, the
    /// first request's included and this response's last; empty when none was.
    public var redirectChain: [String] = []
    /// Why this 3xx response was returned instead of followed, when redirects were on but
    /// this one could not be (a 307 or 308 asking for a streamed body to be sent again).
    public var unfollowedRedirect: String?
    /// Each redirect followed on the way: the request sent and the 3xx that answered it.
    public var redirects: [RedirectHop] = []
    /// The request this response answers, when redirects led to it (nil: the one given).
    public var effectiveRequest: HTTPRequest?
    /// The HTTP version the response came in.
    public var version: HTTPVersion = .http1_1
    /// Interim (1xx) responses that came before this one.
    public var interimResponses: [HTTPResponse] = []
    /// When the body was decoded from a content coding (gzip, deflate), that coding; the
    /// head still says what the server sent.
    public var decodedContentEncoding: String?
    /// Where the time of the whole exchange went, and the bytes it moved.
    public var metrics = TransportMetrics()

    public init(head: HTTPResponse, body: [UInt8], trailers: HTTPFields? = nil) {
        self.storedHead = .built(head)
        self.body = body
        self.trailers = trailers
    }

    /// A response whose head is built when first read.
    package init(parsedHead: ParsedHead, body: [UInt8], trailers: HTTPFields? = nil) {
        self.storedHead = .parsed(parsedHead)
        self.body = body
        self.trailers = trailers
    }

    /// Shorthand for `head.status` (read without building the head's fields).
    public var status: HTTPResponse.Status { self.storedHead.status }
    /// Shorthand for `head.headerFields`.
    public var headerFields: HTTPFields { self.head.headerFields }
}


