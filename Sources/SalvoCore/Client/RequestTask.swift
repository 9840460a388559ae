@_spi(Benchmarks) import SalvoTransport
import HTTPTypes

/// One request on its way through the engine, from pool queue to finished response.
/// Loop-confined: made on the caller's thread, then run and ended on one event loop's thread.
/// Stored properties are `@exclusivity(unchecked)`: the object is touched by its loop's thread
/// only, and no access to a property spans a call that could reach it again, so Swift's
/// dynamic exclusivity checks (12% of the API path's user CPU) buy nothing here.
///
/// A task made without a handler collects its response itself and is its caller's handle for
/// cancelling it (`RequestTask+Collecting.swift`): one object per request, not three.
///
/// @unchecked Sendable, as its base: the task is made on the caller's thread and handed to its
/// loop whole, and touched on that loop's thread only from then on; only the base's
/// cancellation methods are called from other threads (see ``CancellationState``).
final class RequestTask: CancellationState, @unchecked Sendable {
    enum Phase {
        case queued
        /// On its way from one loop's pool to another's, which has an idle connection.
        case moving
        case running(HTTP1Connection)
        /// Written on a connection behind the request it is answering, waiting its turn.
        case pipelined(HTTP1Connection)
        case finished
    }

    /// The request as the caller's thread prepared it, moved here whole (its key aside, kept
    /// as a constant of its own below). The accessors lend its parts (`_read`) rather than
    /// return copies, so reading one counts none of its references.
    @exclusivity(unchecked) private(set) var prepared: HTTPClient.Prepared
    /// Its own constant, not lent from `prepared`: read a few times per request (the pool
    /// compares it to its last host's), and a constant is read without copying it.
    let key: ConnectionKey
    /// The TLS context for an https key (the one its key's TLS id stands for).
    var tls: TLSContext? { _read { yield self.prepared.tls } }
    /// The serialized head, encoded once (and shared by repeated requests).
    var head: [UInt8] { _read { yield self.prepared.head } }
    var body: [UInt8] { _read { yield self.prepared.body } }
    let isHead: Bool
    let isIdempotent: Bool
    var deadline: Deadline { self.prepared.deadline }
    /// When the response head must have come; distant future without a head timeout.
    var headDeadline: Deadline { self.prepared.headDeadline }
    /// The final response head has arrived (a head timeout no longer applies).
    @exclusivity(unchecked) var headReceived = false
    var readTimeout: Duration? { self.prepared.readTimeout }
    /// The longest the socket may refuse the request's bytes (nil: no limit).
    @exclusivity(unchecked) var writeTimeout: Duration?
    /// Where the response goes: the handler the task was made with, or the task itself. Not
    /// counted (it is read for every piece of every response): `otherHandler` owns a handler
    /// of another kind for the task's whole life, and the task is alive while it uses itself.
    @exclusivity(unchecked) unowned(unsafe) private(set) var handler: (any ResponseHandler)!
    private let otherHandler: (any ResponseHandler)?
    @exclusivity(unchecked) var phase: Phase = .queued
    /// Set once the request has been retried on a fresh connection.
    @exclusivity(unchecked) var retried = false
    /// Pool waiter id while queued.
    @exclusivity(unchecked) var waiterID = 0
    /// When the request stops waiting for a connection (or in a pipeline's line): the pool
    /// wait timeout, or its head or total deadline if sooner.
    @exclusivity(unchecked) var waitDeadline = Deadline.distantFuture
    /// When the request joined a pool's queue (0: it is not waiting). A request that moves to
    /// another loop keeps it, and its wait deadline: it has waited that long already.
    @exclusivity(unchecked) var queuedAt = Deadline(nanoseconds: 0)
    /// The caller sent `Connection: close`: the connection is not reused after this request.
    var closeAfter: Bool { self.prepared.closeAfter }
    /// A body that is produced while it is sent (a stream or a file), instead of `body`.
    var stream: StreamSource? { _read { yield self.prepared.stream } }
    /// The request asked for `Expect: 100-continue`: its body waits for the interim answer.
    var expectsContinue: Bool { self.prepared.expectsContinue }
    /// How long the body waits for 100 Continue before it goes anyway.
    let continueTimeout: Duration
    /// The client that sent the request: it sends a redirect's next request. Let go of when
    /// the request is over (``letGo()``): a handle kept by the caller must not keep the client.
    @exclusivity(unchecked) private var client: HTTPClient?
    /// The request as sent (the one a Location is resolved against) and its options: what a
    /// redirect's next request is made from.
    var request: HTTPRequest { _read { yield self.prepared.request } }
    var options: HTTPClient.RequestOptions { _read { yield self.prepared.options } }
    /// How redirects are followed; nil when they are not.
    var redirectPolicy: RedirectPolicy? { _read { yield self.prepared.redirects } }
    /// The redirects of the chain so far, made at the chain's first redirect response and
    /// handed from each request to the next; nil until then (most responses are not redirects).
    @exclusivity(unchecked) var redirectChain: RedirectChain?
    /// Where placement counted the request as on its way to its loop; told (and dropped) when
    /// the request gets there.
    @exclusivity(unchecked) var arrival: HostBudget.ShardCounts?
    /// The caller's handle on the request, which follows it if it moves to another loop: the
    /// task itself when it collects its response (held as a flag, not a reference to itself;
    /// the base's own `task` does hold it while it runs — a cycle `finished()` breaks). A
    /// task that is not its own handle (a stream's, a redirect's next) has a base it never
    /// uses: cancelling through it does nothing.
    var cancellation: CancellationState? {
        get { self.isOwnHandle ? self : self.otherHandle }
        set {
            self.isOwnHandle = newValue === self
            self.otherHandle = self.isOwnHandle ? nil : newValue
        }
    }
    @exclusivity(unchecked) private var otherHandle: CancellationState?
    @exclusivity(unchecked) private var isOwnHandle = false
    /// The body as the caller gave it, told when the request is over (`requestEnded()`).
    var requestBody: HTTPBody? { _read { yield self.prepared.requestBody } }
    /// Limits for decoding a gzip or deflate body; nil when the body goes as sent.
    var decoding: ContentDecoder.Limits? { _read { yield self.prepared.decoding } }
    /// Told of each head as it arrived (``HTTPClient/RequestOptions/headObserver``).
    @exclusivity(unchecked) var headObserver: (@Sendable (ReceivedHead) -> Void)?
    /// The decoder of this response's body, when it has a content coding.
    @exclusivity(unchecked) private var decoder: ContentDecoder?
    /// The handler asked to pause during the last decoded piece.
    @exclusivity(unchecked) private var handlerPaused = false
    /// The response ended while decoded data still waited for a paused handler: its end
    /// (with these trailers) is delivered once that data is.
    @exclusivity(unchecked) private var deferredEnd: HTTPFields??
    /// A redirect this response announced: sent once the response (whose body is skipped) ends.
    @exclusivity(unchecked) private var redirect: (request: HTTPRequest, keepBody: Bool)?
    /// A redirect that must not be followed: reported once the response ends, so the
    /// connection stays usable.
    @exclusivity(unchecked) private var redirectError: HTTPClientError?
    /// `redirect` or `redirectError` is set (read per response: a Bool, not two optionals).
    @exclusivity(unchecked) private(set) var isSkippingToRedirect = false
    /// Bytes of a redirect's body read and dropped so far.
    @exclusivity(unchecked) private var skippedBytes = 0
    @exclusivity(unchecked) private var abandonedRedirectBody = false
    /// More than this of a redirect's body is not read: its connection closes instead.
    static let maxSkippedRedirectBody = 1 << 20

    // MARK: Collecting (a task made without a handler; see RequestTask+Collecting.swift)

    @exclusivity(unchecked) var collectedHead: ParsedHead?
    @exclusivity(unchecked) var collectedBody: [UInt8] = []
    let maxBodySize: Int
    @exclusivity(unchecked) var delivery: Delivery
    /// The result for an awaiting caller, held until the loop's turn ends (see
    /// ``EventLoop/deferToEndOfTurn(_:)``).
    @exclusivity(unchecked) var heldResult: Result<HTTPClientResponse, HTTPClientError>?
    /// How the awaiting caller is resumed (see ``EventLoop/resume(fromPool:priority:)``).
    @exclusivity(unchecked) var callerResumption = CallerResumption()

    // MARK: Metrics: clock readings (0 until known) and counters, no allocation.

    /// When the caller made the request (the first of a redirect chain).
    @exclusivity(unchecked) var startedAt = Deadline(nanoseconds: 0)
    /// When a connection took it.
    @exclusivity(unchecked) var runAt = Deadline(nanoseconds: 0)
    @exclusivity(unchecked) var firstByteAt = Deadline(nanoseconds: 0)
    @exclusivity(unchecked) var headAt = Deadline(nanoseconds: 0)
    @exclusivity(unchecked) var bytesSent = 0
    @exclusivity(unchecked) var bytesReceived = 0
    @exclusivity(unchecked) var bodyBytesDelivered = 0
    @exclusivity(unchecked) var reusedConnection = false
    /// The phases of the connection opened for this request (nil on a reused one).
    @exclusivity(unchecked) var connectionSetup: ConnectionSetup?
    /// The version the response came in.
    @exclusivity(unchecked) var version = HTTPVersion.http1_1
    /// The content coding being decoded, when one is.
    @exclusivity(unchecked) private var decodedCoding: String?
    /// Interim (1xx) responses so far, those of the chain's earlier requests included.
    @exclusivity(unchecked) var interim: [HTTPResponse] = []
    /// Why a redirect was delivered rather than followed, when it was.
    @exclusivity(unchecked) private var unfollowedRedirect: String?

    /// A streamed body: its producer, and its length when announced (else it goes chunked).
    struct StreamSource: Sendable {
        var length: Int?
        var replayable: Bool
        var produce: @Sendable (HTTPBodyWriter) async throws -> Void
    }

    /// RFC 9110 §9.2.2; POST and PATCH are never replayed automatically.
    static func isIdempotent(_ method: HTTPRequest.Method) -> Bool {
        method == .get || method == .head || method == .options || method == .trace || method == .put || method == .delete
    }

    /// Whether the request may be sent again on a fresh connection.
    var isReplayable: Bool { self.stream?.replayable ?? true }

    /// The redirects one request has been through, shared by the requests of its chain.
    final class RedirectChain {
        var state: RedirectState
        /// The redirects followed so far: each request and the 3xx that answered it.
        var hops: [RedirectHop] = []
        /// Bytes the earlier requests of the chain sent and received.
        var carriedBytes = (sent: 0, received: 0)

        init(policy: RedirectPolicy) {
            self.state = RedirectState(policy: policy)
        }
    }

    /// A task whose response goes to `handler`, placed on `loop`. Takes over `prepared`
    /// (moved, not copied).
    convenience init(_ prepared: consuming HTTPClient.Prepared, client: HTTPClient, loop: EventLoop, handler: any ResponseHandler) {
        self.init(consume prepared, client: client, loop: loop, handler: handler, maxBodySize: .max, delivery: .awaiting)
    }

    /// A task that collects its response (up to `maxBodySize` bytes) and delivers it.
    convenience init(_ prepared: consuming HTTPClient.Prepared, client: HTTPClient, loop: EventLoop,
                     collectingUpTo maxBodySize: Int, delivery: Delivery) {
        self.init(consume prepared, client: client, loop: loop, handler: nil, maxBodySize: maxBodySize, delivery: delivery)
    }

    private init(_ prepared: consuming HTTPClient.Prepared, client: HTTPClient, loop: EventLoop,
                 handler: (any ResponseHandler)?, maxBodySize: Int, delivery: Delivery) {
        let method = prepared.request.method
        self.isHead = method == .head
        self.isIdempotent = Self.isIdempotent(method)
        self.key = prepared.key
        self.otherHandler = handler
        self.client = client
        self.startedAt = prepared.startedAt
        self.continueTimeout = client.configuration.expectContinueTimeout
        self.headObserver = prepared.options.headObserver
        self.writeTimeout = prepared.options.writeTimeout ?? client.configuration.writeTimeout
        self.arrival = prepared.arrival
        self.maxBodySize = maxBodySize
        self.delivery = delivery
        // Told once, through `arrival`; the copy kept in `prepared` would be a second count.
        prepared.arrival = nil
        self.prepared = prepared
        super.init(loop: loop, client: client)
        self.handler = handler ?? self
    }

    /// Tells placement the request reached the loop it was placed on (or never will); true
    /// if it had been placed there from outside the loops.
    func settleArrival() -> Bool {
        guard let arrival = self.arrival else { return false }
        self.arrival = nil
        arrival.arrived()
        return true
    }

    /// Which deadline ended a wait that passed ``waitDeadline`` at `now`.
    func waitExpiry(at now: Deadline) -> HTTPClientError.Code {
        now >= self.deadline ? .totalTimeout : now >= self.headDeadline ? .headTimeout : .poolWaitTimeout
    }

    /// `.pool` while the request waits for a connection (nothing of it sent), else nil.
    var waitingPhase: HTTPClientError.Phase? {
        switch self.phase {
        case .queued, .moving: .pool
        case .running, .pipelined, .finished: nil
        }
    }

    var isFinished: Bool {
        if case .finished = self.phase { return true }
        return false
    }

    /// Ends the request with an error, once.
    func fail(_ error: HTTPClientError) {
        guard !self.isFinished else { return }
        self.phase = .finished
        if self.abandonedRedirectBody {
            // The connection closed because a redirect's body was too long to skip: the
            // redirect (or its refusal) stands.
            if let redirect = self.redirect {
                self.follow(redirect)
                return
            }
            if let refusal = self.redirectError {
                self.requestBody?.requestEnded()
                self.handler.didFail(refusal.with(host: self.key.host))
                return
            }
        }
        self.requestBody?.requestEnded()
        self.handler.didFail(error.with(host: self.key.host))
    }

    // MARK: The response, from the connection (loop thread)

    func receiveInformational(_ head: HTTPResponse) {
        self.interim.append(head)
    }

    func receiveHead(_ head: ParsedHead) throws(HTTPClientError) {
        if let policy = self.redirectPolicy, RedirectState.isRedirect(head.status.code) {
            let chain = self.redirectChain ?? RedirectChain(policy: policy)
            self.redirectChain = chain
            do {
                switch try chain.state.decide(
                    request: self.request, status: head.status.code, location: head.fields.firstValue(ofTracked: .location),
                    hasBody: self.requestBody != nil, replayableBody: self.requestBody?.isReplayable ?? true) {
                case .deliver:
                    break
                case .deliverUnfollowed(let reason):
                    self.unfollowedRedirect = reason
                case .follow(let next, let keepBody):
                    chain.hops.append(RedirectHop(request: self.request, response: head.response))
                    chain.carriedBytes.sent += self.bytesSent
                    chain.carriedBytes.received += self.bytesReceived
                    self.redirect = (next, keepBody)
                    self.isSkippingToRedirect = true
                    return
                }
            } catch {
                self.redirectError = error
                self.isSkippingToRedirect = true
                return
            }
        }
        if let limits = self.decoding, let coding = head.fields.joinedValues(for: .contentEncoding), !self.isHead,
           head.status.code != 204, head.status.code != 304 {
            self.decoder = try ContentDecoder.make(contentEncoding: coding, limits: limits)
            self.decodedCoding = coding
        }
        self.headReceived = true
        if self.handler.wantsDetailsAtHead {
            self.handler.noteDetails(self.details(endedAt: nil))
        }
        try self.handler.didReceiveHead(head)
    }

    /// What the handler is told besides the head; `endedAt` once the body has ended.
    func details(endedAt end: Deadline?) -> ResponseDetails {
        ResponseDetails(version: self.version, metrics: self.metrics(endedAt: end), extras: self.extras())
    }

    /// What most responses lack: none of it is made for a response without redirects,
    /// interim responses or a decoded coding.
    private func extras() -> ExchangeExtras {
        guard self.redirectChain != nil || !self.interim.isEmpty || self.decodedCoding != nil else { return ExchangeExtras() }
        var extras = ExchangeExtras.Values()
        if let chain = self.redirectChain {
            // The URLs on the way, when there was a way: more than one, or a redirect not followed.
            if chain.state.chain.count > 1 || self.unfollowedRedirect != nil { extras.redirectChain = chain.state.chain }
            extras.unfollowedRedirect = self.unfollowedRedirect
            extras.redirects = chain.hops
            if !chain.hops.isEmpty { extras.effectiveRequest = self.request }
        }
        extras.interimResponses = self.interim
        extras.decodedContentEncoding = self.decodedCoding
        return ExchangeExtras(extras)
    }

    /// The metrics so far; `endedAt` once the body has ended.
    func metrics(endedAt end: Deadline?) -> TransportMetrics {
        func span(_ from: Deadline, _ to: Deadline?) -> Duration? {
            guard let to, from.nanoseconds != 0, to.nanoseconds != 0, to >= from else { return nil }
            return .nanoseconds(Int64(to.nanoseconds - from.nanoseconds))
        }
        let carried = self.redirectChain?.carriedBytes ?? (sent: 0, received: 0)
        return TransportMetrics(
            queueWait: span(self.startedAt, self.runAt), dnsLookup: self.connectionSetup?.dnsLookup,
            connect: self.connectionSetup?.connect, tlsHandshake: self.connectionSetup?.tlsHandshake,
            tlsResumed: self.connectionSetup?.tlsResumed, reusedConnection: self.reusedConnection,
            timeToFirstByte: span(self.startedAt, self.firstByteAt), timeToHead: span(self.startedAt, self.headAt),
            total: span(self.startedAt, end), requestBytesSent: carried.sent + self.bytesSent,
            responseBytesReceived: carried.received + self.bytesReceived, bodyBytesDelivered: self.bodyBytesDelivered,
            redirects: self.redirectChain?.hops.count ?? 0)
    }

    private func deliverDecoded(_ piece: UnsafeRawBufferPointer) throws(HTTPClientError) -> Bool {
        self.bodyBytesDelivered += piece.count
        let more = try self.handler.didReceiveBody(piece)
        if !more { self.handlerPaused = true }
        return more
    }


    /// Gives up the rest of a redirect's body (one that would end only when the server
    /// closes): the connection is closed and the redirect followed at once. The error is
    /// what closes the connection; the task follows the redirect instead of failing.
    func abandonRedirectBody(_ reason: String) -> HTTPClientError {
        self.abandonedRedirectBody = true
        return HTTPClientError.cancelled(.internal, phase: .readBody, detail: reason)
    }

    /// Body bytes; false pauses reading.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) -> Bool {
        // The body of a redirect being followed (or refused) is read and dropped, up to a
        // bound; past it the connection is closed instead of reading on.
        if self.redirect != nil || self.redirectError != nil {
            self.skippedBytes += bytes.count
            if self.skippedBytes > Self.maxSkippedRedirectBody {
                throw self.abandonRedirectBody("redirect body too long to skip")
            }
            return true
        }
        guard let decoder = self.decoder else {
            self.bodyBytesDelivered += bytes.count
            return try self.handler.didReceiveBody(bytes)
        }
        self.handlerPaused = false
        let consumedAll = try decoder.decode(bytes) { (piece) throws(HTTPClientError) -> Bool in try self.deliverDecoded(piece) }
        return consumedAll && !self.handlerPaused
    }

    private func follow(_ redirect: (request: HTTPRequest, keepBody: Bool)) {
        guard let client = self.client else {
            // Let go of only once the request is over, which a redirect to follow is not.
            self.handler.didFail(.cancelled(.internal, phase: .request, detail: "redirect after the request ended"))
            return
        }
        client.follow(redirect.request, keepBody: redirect.keepBody, after: self)
    }

    /// The request is over, but the task may live on as the caller's handle (a
    /// ``RequestHandle`` kept as long as the caller likes): let go of what is large or keeps
    /// others alive — the client, the request's body and options, decoding and redirect state.
    /// The key and the phase stay: the pool may still read them.
    func letGo() {
        self.client = nil
        // Only what is there: most requests have no body, stream, decoder or redirects, and
        // storing nil over nil still destroys the old value through its type's witnesses.
        if !self.prepared.body.isEmpty { self.prepared.body = [] }
        if self.prepared.stream != nil { self.prepared.stream = nil }
        if self.prepared.requestBody != nil { self.prepared.requestBody = nil }
        self.prepared.options = HTTPClient.RequestOptions()
        if self.decoder != nil { self.decoder = nil }
        if self.redirectChain != nil { self.redirectChain = nil }
        if !self.interim.isEmpty { self.interim = [] }
        if self.headObserver != nil { self.headObserver = nil }
    }

    /// The response ended; the connection has already gone back to the pool (or closed),
    /// so a redirect to the same host can take it. `now`: the loop's clock for this turn.
    func finish(trailers: HTTPFields?, at now: Deadline) {
        guard !self.isFinished else { return }
        if let error = self.redirectError {
            self.fail(error)
            return
        }
        self.phase = .finished
        if let redirect = self.redirect {
            self.follow(redirect)
            return
        }
        // A success: a body still being written was answered before it was all sent.
        self.requestBody?.requestEnded(.serverAnsweredEarly)
        self.completeBody(trailers: trailers, at: now)
    }

    /// Hands over the end of the body (once a decoder has delivered all it holds), which
    /// ended at `now` (no clock read per response: the loop's turn has one).
    private func completeBody(trailers: HTTPFields?, at now: Deadline) {
        if let decoder = self.decoder {
            if decoder.hasPendingInput {
                // The handler paused with decoded data still to come: end after it.
                self.deferredEnd = .some(trailers)
                return
            }
            do {
                try decoder.finish { (piece) throws(HTTPClientError) -> Bool in try self.deliverDecoded(piece) }
            } catch {
                self.handler.didFail(error.with(host: self.key.host))
                return
            }
        }
        self.handler.didFinish(trailers: trailers, details: self.details(endedAt: max(now, self.startedAt)))
    }

    /// Asks the connection to read again after a handler paused it.
    func resumeReadingOnLoop() {
        if let decoder = self.decoder, decoder.hasPendingInput {
            self.handlerPaused = false
            do {
                let drained = try decoder.resume { (piece) throws(HTTPClientError) -> Bool in try self.deliverDecoded(piece) }
                guard drained, !self.handlerPaused else { return }
            } catch {
                if case .running(let connection) = self.phase {
                    connection.fail(error)
                } else {
                    // The response had ended; only its decoding was left.
                    self.deferredEnd = nil
                    self.handler.didFail(error.with(host: self.key.host))
                }
                return
            }
            if let trailers = self.deferredEnd {
                self.deferredEnd = nil
                self.completeBody(trailers: trailers, at: .now())
                return
            }
        }
        if case .running(let connection) = self.phase {
            connection.resumeReading()
        }
    }
}
