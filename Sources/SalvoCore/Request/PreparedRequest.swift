import HTTPTypes
import SalvoTransport

/// One request as the engine sends it: checked, its head encoded, its connection key found,
/// its deadlines fixed. Made on the caller's thread (``RequestPreparer``), then moved whole
/// into the request's owner; a redirect's next request is prepared the same way, on the loop.
///
/// What a request shares with every other call of the same prepared shape — its key, TLS
/// context, the request value and its options — sits in one ``RequestShape``, held by
/// reference: a prepared call (``PreparedCall``) copies this value into each call's owner,
/// and a copy is then one count taken, not one for each of those parts.
struct PreparedRequest: Sendable {
    var shape: RequestShape
    /// The serialized head, encoded once (and shared by repeated requests).
    var head: [UInt8]
    /// A body held in memory (empty when there is none, or it is streamed).
    var body: [UInt8]
    /// A body produced while it is sent (a stream or a file), instead of `body`.
    var stream: StreamSource?
    /// When the whole call must be over (distant future: no limit).
    var deadline: Deadline
    /// When the caller made the call (the first request of a redirect chain).
    var startedAt: Deadline
    /// When the head must have come (distant future: no head timeout) — and never sooner than
    /// ``headTimeout`` after the request's last byte went out: a long upload is not cut for
    /// the head it cannot have yet.
    var headDeadline: Deadline
    var headTimeout: Duration?
    /// The request's body as the caller gave it (told when the request is over).
    var requestBody: HTTPBody?
    /// Where placement counted the request as on its way to its loop (see `HTTPClient.place`).
    var arrival: HostBudget.ShardCounts?

    var key: ConnectionKey { _read { yield self.shape.key } }
    var tls: TLSContext? { self.shape.tls }
    var expectsContinue: Bool { self.shape.expectsContinue }
    var readTimeout: Duration? { self.shape.readTimeout }
    var closeAfter: Bool { self.shape.closeAfter }
    var request: HTTPRequest { _read { yield self.shape.request } }
    var options: HTTPClient.RequestOptions { _read { yield self.shape.options } }
    var redirects: RedirectPolicy? { self.shape.redirects }
    var decoding: ContentDecoder.Limits? { self.shape.decoding }
    var isHead: Bool { self.shape.isHead }
    var isIdempotent: Bool { self.shape.isIdempotent }

    /// Whether the body can be sent a second time (a redirect's, a retry's).
    var isReplayable: Bool { self.stream?.replayable ?? true }
}

/// What a prepared request shares with every call of its shape; never changed once made.
final class RequestShape: Sendable {
    let key: ConnectionKey
    /// The TLS context for an https key.
    let tls: TLSContext?
    /// `Expect: 100-continue` goes with the head: the body waits for the interim answer.
    let expectsContinue: Bool
    let readTimeout: Duration?
    /// The caller sent `Connection: close`: the connection is not reused after this request.
    let closeAfter: Bool
    /// The request as sent (the one a Location is resolved against) and its options: what a
    /// redirect's next request is made from.
    let request: HTTPRequest
    let options: HTTPClient.RequestOptions
    /// How redirects are followed; nil when they are not.
    let redirects: RedirectPolicy?
    /// Limits for decoding a gzip or deflate response; nil: the body as sent.
    let decoding: ContentDecoder.Limits?
    let writeTimeout: Duration?
    // What the method and the options say, read once per shape rather than once (or more)
    // per request: each read of the method or of an option that holds references counts them.
    let isHead: Bool
    /// Whether the method may be sent twice (RFC 9110 §9.2.2).
    let isIdempotent: Bool
    /// Whether the options hold a caller's code or secrets (``HTTPClient/RequestOptions/holdsCallerCode``).
    let holdsCallerCode: Bool
    let headObserver: (@Sendable (ReceivedHead) -> Void)?
    let connectionObserver: (@Sendable (ConnectionReport) -> Void)?
    /// Shared by every call of a prepared request (``PreparedCall``), which keeps it: a pool
    /// may keep it too, to know that call's next request by the shape alone.
    let isShared: Bool

    init(key: ConnectionKey, tls: TLSContext?, expectsContinue: Bool, readTimeout: Duration?, writeTimeout: Duration?,
         closeAfter: Bool, request: HTTPRequest, options: HTTPClient.RequestOptions, redirects: RedirectPolicy?,
         decoding: ContentDecoder.Limits?, isShared: Bool = false) {
        self.isShared = isShared
        self.key = key
        self.tls = tls
        self.expectsContinue = expectsContinue
        self.readTimeout = readTimeout
        self.writeTimeout = writeTimeout
        self.closeAfter = closeAfter
        let method = request.method
        self.isHead = method == .head
        self.isIdempotent = RequestStateMachine.isIdempotent(method)
        self.request = request
        self.holdsCallerCode = options.holdsCallerCode
        self.headObserver = options.headObserver
        self.connectionObserver = options.connectionObserver
        self.options = options
        self.redirects = redirects
        self.decoding = decoding
    }

    /// The same shape, for every call of a prepared request (``isShared``).
    func sharedByCalls() -> RequestShape {
        RequestShape(key: self.key, tls: self.tls, expectsContinue: self.expectsContinue, readTimeout: self.readTimeout,
                     writeTimeout: self.writeTimeout, closeAfter: self.closeAfter, request: self.request,
                     options: self.options, redirects: self.redirects, decoding: self.decoding, isShared: true)
    }

    /// The same shape without the caller's code and secrets — its options (observers, TLS
    /// configuration, proxy), its redirect policy (credentials) and decoding limits — for an
    /// owner that lives on as the caller's handle after the call. The key, TLS context and
    /// request stay: a pool may still read the key; nothing reads the rest after the call.
    func lettingGo() -> RequestShape {
        RequestShape(key: self.key, tls: self.tls, expectsContinue: self.expectsContinue, readTimeout: self.readTimeout,
                     writeTimeout: self.writeTimeout, closeAfter: self.closeAfter, request: self.request,
                     options: HTTPClient.RequestOptions(), redirects: nil, decoding: nil)
    }
}

/// A request body produced while it is sent, and its length when announced (else it goes
/// chunked).
struct StreamSource: Sendable {
    var length: Int?
    var replayable: Bool
    var produce: @Sendable (HTTPBodyWriter) async throws -> Void
}
