import HTTPTypes
import SalvoTransport

/// One request as the engine sends it: checked, its head encoded, its connection key found,
/// its deadlines fixed. Made on the caller's thread (``RequestPreparer``), then moved whole
/// into the request's owner; a redirect's next request is prepared the same way, on the loop.
struct PreparedRequest: Sendable {
    var key: ConnectionKey
    /// The TLS context for an https key.
    var tls: TLSContext?
    /// The serialized head, encoded once (and shared by repeated requests).
    var head: [UInt8]
    /// A body held in memory (empty when there is none, or it is streamed).
    var body: [UInt8]
    /// A body produced while it is sent (a stream or a file), instead of `body`.
    var stream: StreamSource?
    /// `Expect: 100-continue` goes with the head: the body waits for the interim answer.
    var expectsContinue: Bool
    /// When the whole call must be over (distant future: no limit).
    var deadline: Deadline
    /// When the caller made the call (the first request of a redirect chain).
    var startedAt: Deadline
    /// When the head must have come (distant future: no head timeout) — and never sooner than
    /// ``headTimeout`` after the request's last byte went out: a long upload is not cut for
    /// the head it cannot have yet.
    var headDeadline: Deadline
    var headTimeout: Duration?
    var readTimeout: Duration?
    /// The caller sent `Connection: close`: the connection is not reused after this request.
    var closeAfter: Bool
    /// The request as sent (the one a Location is resolved against), its body as the caller
    /// gave it (told when the request is over), and its options: what a redirect's next
    /// request is made from.
    var request: HTTPRequest
    var requestBody: HTTPBody?
    var options: HTTPClient.RequestOptions
    /// How redirects are followed; nil when they are not.
    var redirects: RedirectPolicy?
    /// Limits for decoding a gzip or deflate response; nil: the body as sent.
    var decoding: ContentDecoder.Limits?
    /// Where placement counted the request as on its way to its loop (see `HTTPClient.place`).
    var arrival: HostBudget.ShardCounts?

    var isHead: Bool { self.request.method == .head }

    /// Whether the body can be sent a second time (a redirect's, a retry's).
    var isReplayable: Bool { self.stream?.replayable ?? true }
}

/// A request body produced while it is sent, and its length when announced (else it goes
/// chunked).
struct StreamSource: Sendable {
    var length: Int?
    var replayable: Bool
    var produce: @Sendable (HTTPBodyWriter) async throws -> Void
}
