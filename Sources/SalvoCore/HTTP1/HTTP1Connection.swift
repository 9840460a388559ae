@_spi(Benchmarks) import SalvoTransport
import CSalvo
import HTTPTypes

/// One connection speaking HTTP/1.1, driven by its event loop.
///
/// The protocol decisions live in ``HTTP1ConnectionStateMachine``; this class carries out
/// every action it gets back, over the pieces it owns: a ``SocketConnector`` while
/// connecting, then a ``Socket`` (plain or TLS — the same code either way), a
/// ``ResponseDecoder`` parsing in place what comes in, one ``Exchange`` value for the request
/// it carries now (replaced whole for the next one), and one timer for the earliest of its
/// ``ConnectionDeadlines``, recomputed after every event.
///
/// It decides nothing about the request itself: what happened — the head, the body, the end,
/// or how the exchange broke (``ExchangeFacts``) — goes to the request's ``RequestOwner``,
/// which alone sends a request again or follows a redirect. The pool hears first that the
/// connection is free or gone, then the owner what became of its request.
///
/// This file: life, events and timers. Writing (and the ``Exchange`` value) is in
/// `HTTP1Connection+Writing.swift`, reading in `+Reading`, pipelining in `+Pipelining`. Loop-confined:
/// every method runs on `loop`'s thread. Stored properties are `@exclusivity(unchecked)`:
/// the object is touched by its loop's thread only, and no access to a property spans a call
/// that could reach it again, so Swift's dynamic exclusivity checks buy nothing here.
final class HTTP1Connection: Selectable, TimerTarget, ResponseDecoderDelegate, ExchangeCarrier, StreamedBodyConsumer {
    enum Life {
        case resolving
        /// Connecting to an address, or in the TLS handshake.
        case connecting
        case open
        case closed
    }

    /// What became of a request handed to ``run(_:)``.
    enum Start {
        /// It runs here; `reused`: on a connection that carried an earlier one.
        case started(reused: Bool)
        /// The idle connection was found closed (or holding bytes nobody asked for) before
        /// anything was written: it is closed now, and the request is its owner's again.
        case stale
    }

    let id: Int
    let key: ConnectionKey
    /// Not counted (a checked `unowned` reference costs two atomic operations per use, and
    /// this one is used a dozen times per request): the connection's methods run on its
    /// loop's thread only, inside that loop's `run()`, which keeps the loop alive throughout.
    unowned(unsafe) let loop: EventLoop
    unowned let pool: HostPool
    @exclusivity(unchecked) private(set) var life: Life = .resolving

    @exclusivity(unchecked) private var connector: SocketConnector
    /// Whether the observer heard this connection open (so that it hears it close).
    @exclusivity(unchecked) var reportedOpen = false
    @exclusivity(unchecked) var socket = Socket.none
    /// Its addresses, read once it is open.
    @exclusivity(unchecked) private(set) var endpoints = ConnectionEndpoints()
    @exclusivity(unchecked) var machine = HTTP1ConnectionStateMachine()
    let decoder: ResponseDecoder
    /// The request carried now, and what the connection keeps of its exchange.
    @exclusivity(unchecked) var owner: RequestOwner?
    @exclusivity(unchecked) var exchange = Exchange()
    /// How long a complete exchange waits for a streamed body's producer to end after its
    /// last announced byte: long enough for a producer that is about to throw or end, short
    /// enough that one which never ends does not hold the request.
    static let producerGrace: Duration = .seconds(1)
    /// When a byte last came in, or the connection last changed hands.
    @exclusivity(unchecked) var lastActivity: Deadline
    private let idleTimeout: Duration
    /// How long the server said it keeps an idle connection (`Keep-Alive: timeout=N`), less
    /// a margin: the connection is retired before the server would drop it under a request.
    @exclusivity(unchecked) var serverIdleLimit: Duration? {
        didSet { self.idleLimit = Self.nanoseconds(of: self.serverIdleLimit.map { Swift.min($0, self.idleTimeout) } ?? self.idleTimeout) }
    }
    /// How long the connection may stay idle — the smaller of the two above — in nanoseconds:
    /// read at every event of an idle connection, converted once.
    @exclusivity(unchecked) private var idleLimit: UInt64
    /// The one timer this connection relies on, armed for its earliest deadline.
    @exclusivity(unchecked) private var timer = ArmedTimer()
    /// The loop is in one of this connection's events (readiness, its timer): the deadlines
    /// are looked at once, as it ends, however often they changed during it (a response that
    /// ends, the connection parked, the next request started on it from the completion).
    @exclusivity(unchecked) private var inEvent = false
    /// Maintained by the pool: whether a request holds this connection (or is about to).
    @exclusivity(unchecked) var isLeased = false
    /// The connection has waited in the pool, unused for a while: the server may have closed
    /// it meanwhile (its idle close), whether or not it had carried a request.
    @exclusivity(unchecked) private(set) var hasWaitedIdle = false
    /// Where the host's addresses come from.
    private let resolver: HostResolver
    /// The server closed the connection, or asked for it closed (for the pool's counters).
    @exclusivity(unchecked) var closedByPeer = false
    /// How long this connection took to set up, for the metrics of its first request.
    @exclusivity(unchecked) private var setup: ConnectionSetup
    /// Requests written (or being written) behind ``owner``'s, answered in this order
    /// (`HTTP1Connection+Pipelining.swift`).
    @exclusivity(unchecked) var line: [LinedRequest] = []
    /// The last response kept the connection alive over HTTP/1.1: pipelining may follow.
    @exclusivity(unchecked) var keptAliveOverHTTP11 = false
    /// A request in line was given up after its bytes went out: the connection serves the
    /// ones ahead of it, then closes (its answer would be taken for another's).
    @exclusivity(unchecked) var closeWhenLineDrains = false

    init(id: Int, key: ConnectionKey, loop: EventLoop, pool: HostPool,
         connectTimeout: Duration, idleTimeout: Duration, limits: ResponseHeadLimits, resolver: HostResolver, tls: TLSContext? = nil) {
        self.id = id
        self.resolver = resolver
        self.key = key
        self.loop = loop
        self.pool = pool
        self.idleTimeout = idleTimeout
        self.idleLimit = Self.nanoseconds(of: idleTimeout)
        let now = loop.refreshNow()
        self.lastActivity = now
        self.setup = ConnectionSetup(createdAt: now)
        self.connector = SocketConnector(host: key.host, port: key.port, tls: tls,
                                         resumption: tls == nil ? nil : pool.tlsResumption, deadline: now + connectTimeout,
                                         proxy: key.proxy, applicationProtocols: key.httpVersion.applicationProtocols)
        self.decoder = ResponseDecoder(limits: limits)
        self.decoder.delegate = self
    }

    var requestsServed: Int { self.machine.requestsServed }

    /// Whether the connection comes from the pool's idle ones (it served a request, or waited
    /// unused): the server may have closed it while it waited.
    var fromIdle: Bool { self.machine.requestsServed > 0 || self.hasWaitedIdle }

    // MARK: Connecting

    /// Starts connecting. Always returns before anything is reported to the pool: the
    /// work begins on the loop's next turn, so a connect that fails at once (EMFILE, an
    /// unreachable network) cannot recurse through the pool into the next attempt.
    func connect() {
        self.rearm()
        let connection = LoopBound(self, loop: self.loop)
        let loop = self.loop
        let key = self.key
        let resolver = self.resolver
        loop.execute {
            guard case .resolving = connection.value.life else { return }
            if let path = key.unixSocketPath {
                // A path that cannot be a socket address is an unresolvable name (curl: 6).
                connection.value.resolved(SocketAddress(unixPath: path).map { .success([$0]) }
                    ?? .failure(TransportError(.dnsFailure, host: key.host, phase: .resolve,
                                                detail: "Unix socket path \"\(path)\" is empty, too long (107 bytes at most) or holds a NUL")))
                return
            }
            guard let proxy = key.proxy else {
                resolver.resolve(host: key.host, port: key.port, on: loop) { result in
                    // Runs on the loop: at once for numeric hosts, else after the lookup.
                    connection.value.resolved(result)
                }
                return
            }
            // Through a proxy, only the proxy's name is looked up (the proxy resolves the origin).
            resolver.resolve(host: proxy.host, port: proxy.port, on: loop) { result in
                connection.value.resolved(result.mapError { proxy.nameFailure($0) })
            }
        }
    }

    private func resolved(_ result: Result<[SocketAddress], TransportError>) {
        guard case .resolving = self.life else { return }
        self.setup.resolvedAt = self.loop.refreshNow()
        defer { self.rearm() }
        switch result {
        case .success(let addresses):
            self.life = .connecting
            self.connectorStepped(self.connector.connect(to: addresses, loop: self.loop, target: self))
        case .failure(let error):
            self.connectFailed(error)
        }
    }

    private func connectorStepped(_ step: SocketConnector.Step) {
        switch step {
        case .pending:
            break
        case .opened(let socket):
            self.socket = socket
            self.life = .open
            self.endpoints = ConnectionEndpoints(remote: SocketAddress.peer(of: socket.fd)?.endpoint,
                                                 local: SocketAddress.local(of: socket.fd)?.endpoint)
            self.setup.opened(at: self.loop.refreshNow(), tcpConnectedAt: self.connector.tcpConnectedAt,
                              tls: socket.tls.map { $0.resumed })
            if socket.tls?.resumed == true {
                self.pool.owner.tlsResumed += 1
                self.pool.counters.tlsResumed += 1
            }
            if let observer = self.pool.observer {
                self.reportedOpen = true
                observer.connectionOpened(id: self.id, resumedTLS: socket.tls?.resumed == true)
            }
            self.socket.setInterest(.read, on: self.loop)
            self.lastActivity = self.loop.now
            self.pool.connectionEstablished(self)
        case .failed(let error):
            self.connectFailed(error)
        }
    }

    private func connectFailed(_ error: TransportError) {
        self.connector.abandon(loop: self.loop)
        self.life = .closed
        self.timer.disarm()
        self.pool.connectionFailed(self, error: error)
    }

    /// Whether the connection that just opened goes on in HTTP/2: ALPN chose `h2`, or the key
    /// asks for HTTP/2 with prior knowledge over cleartext (not through a proxy that forwards
    /// requests, which would be the one to speak it).
    var negotiatedHTTP2: Bool {
        if let tls = self.socket.tls { return tls.negotiatedProtocol == "h2" }
        guard self.key.httpVersion.cleartextHTTP2 else { return false }
        return self.key.proxy.map { $0.tunnelsPlainHTTP } ?? true
    }

    /// Gives the open socket up to the ``HTTP2Connection`` that carries on from here: out of
    /// epoll (its new owner registers it), and this connection closed without closing it.
    func handOver() -> (socket: Socket, setup: ConnectionSetup) {
        var socket = self.socket
        socket.detachFromEpoll(on: self.loop)
        self.socket = .none
        self.life = .closed
        self.timer.disarm()
        return (socket, self.setup)
    }

    var httpVersion: HTTPVersion { .http1_1 }

    // MARK: Requests

    /// Runs `owner`'s request on this idle, open connection.
    func run(_ owner: RequestOwner) -> Start {
        let reused = self.machine.requestsServed > 0
        if self.fromIdle, !owner.isIdempotent, !self.socket.isQuietAndOpen {
            // The server closed this idle connection (or sent something unasked) since it was
            // opened or last answered, and a request that must not be sent twice should not
            // meet it. A connection handed over as it opens is not checked: the server has had
            // no time to close it for idleness. (Over TLS the peek opens what waits, so the
            // session tickets a server sends after its handshake are not taken for a close.)
            self.closedByPeer = true
            self.closeSocket()
            return .stale
        }
        defer { self.rearm() }
        owner.connectionTook(self, reused: reused, fromIdle: self.fromIdle, setup: reused ? nil : self.setup, at: self.loop.now)
        self.takeOn(owner, writer: RequestWriter(for: owner, now: self.loop.now))
        self.act(self.machine.startRequest())
        if self.owner === owner { owner.connectionStarted(on: self, reused: reused) }
        return .started(reused: reused)
    }

    /// Makes `owner`'s request the current one: a new exchange (its writer new, or how far a
    /// pipelined one got), and the decoder ready for its response.
    func takeOn(_ owner: RequestOwner, writer: RequestWriter) {
        self.owner = owner
        self.exchange.begin(writer: writer, mustClose: owner.closeAfter)
        self.decoder.prepareForNextResponse(expectNoBody: owner.isHead, capturingHeads: owner.headObserver != nil)
        self.lastActivity = self.loop.now
    }

    /// The pool parked this connection: close it if it stays idle past the idle timeout.
    func parked() {
        self.hasWaitedIdle = true
        self.lastActivity = self.loop.now
        self.rearm()
    }

    // MARK: Events

    func ready(events: UInt32) {
        self.inEvent = true
        defer {
            self.inEvent = false
            self.rearm()
        }
        switch self.life {
        case .resolving, .closed:
            return
        case .connecting:
            self.connectorStepped(self.connector.ready(loop: self.loop, target: self))
            return
        case .open:
            break
        }
        if events & salvo_EPOLLOUT != 0, self.owner != nil {
            self.writeRequest()
        }
        // Records TLS read ahead wait inside OpenSSL, which epoll does not see: a read that
        // had to write first (and so stopped) goes on when the socket takes the write.
        guard events & (salvo_EPOLLIN | salvo_EPOLLRDHUP | salvo_EPOLLHUP | salvo_EPOLLERR) != 0
                || !self.socket.drainedByShortRead else { return }
        if !self.exchange.readPaused {
            self.readable()
        } else if events & (salvo_EPOLLHUP | salvo_EPOLLERR) != 0 {
            // epoll reports HUP and ERR whatever the interest, so a paused connection whose
            // peer went away would wake the loop forever. Step out of epoll until the
            // consumer asks for more; the read then finds the end.
            self.socket.detachFromEpoll(on: self.loop)
        }
    }

    // MARK: Timers

    private static func nanoseconds(of duration: Duration) -> UInt64 { duration.nanosecondsClamped }

    /// What the connection waits for now, and until when: a function of its state alone.
    var deadlines: ConnectionDeadlines {
        switch self.life {
        case .resolving, .connecting:
            return ConnectionDeadlines(connect: self.connector.wakeUp)
        case .open:
            guard let owner = self.owner else {
                return self.machine.isIdle ? ConnectionDeadlines(idle: self.lastActivity.adding(nanoseconds: self.idleLimit)) : .none
            }
            let total = self.line.isEmpty ? owner.deadline : min(owner.deadline, self.lineDeadline)
            var deadlines = ConnectionDeadlines(total: total, producerEnd: self.exchange.producerEndDeadline,
                                                expectContinue: self.exchange.writer.continueDeadline)
            if !owner.reception.headReceived, owner.headDeadline != .distantFuture, let headTimeout = owner.headTimeout {
                // Due within the head timeout of the call, but not while the request is still
                // going out (an upload has its write and read bounds then), nor sooner than the
                // head timeout after its last byte: the server cannot answer before it has it all.
                if !self.machine.isWritingRequest {
                    let sent = self.exchange.writer.lastProgress ?? owner.headDeadline
                    deadlines.head = max(owner.headDeadline, sent + headTimeout)
                }
            }
            // The write timeout waits for the socket to take bytes, not for our producer.
            if let writeTimeout = owner.writeTimeout, let blocked = self.exchange.writeBlockedSince {
                deadlines.write = max(blocked, self.exchange.writer.lastProgress ?? blocked) + writeTimeout
            }
            // The read timeout waits for the server: not for a consumer that paused reading,
            // nor for our own body's producer, nor once the response is all here.
            if let readTimeout = owner.readTimeout, !self.exchange.readPaused, !self.exchange.writer.waitingForProducer,
               self.machine.isAwaitingResponse {
                let activity = max(self.lastActivity, self.exchange.writer.lastProgress ?? self.lastActivity)
                deadlines.read = activity + readTimeout
            }
            return deadlines
        case .closed:
            return .none
        }
    }

    /// Keeps a timer armed for the earliest deadline. Called at the end of every event — and
    /// by whatever changes the deadlines from outside one; within one of the connection's own
    /// events (``inEvent``), the event's end rearms once for all.
    func rearm() {
        guard !self.inEvent, let next = self.deadlines.next else { return }
        self.timer.arm(at: next, on: self.loop, for: self)
    }

    func timerIsCurrent(token: UInt64) -> Bool {
        self.timer.isCurrent(token)
    }

    func timerFired(token: UInt64, now: Deadline) {
        guard self.timer.fired(token) else { return }
        self.inEvent = true
        defer {
            self.inEvent = false
            self.rearm()
        }
        let phase: TransportError.Phase = self.decoder.inBody ? .readBody : .readHead
        switch self.deadlines.expired(at: now) {
        case nil:
            break
        case .connect:
            // The deadline, or the next address's turn to race the others.
            if case .connecting = self.life {
                self.connectorStepped(self.connector.timeElapsed(loop: self.loop, target: self))
            } else {
                self.connectFailed(self.connector.timeoutError)
            }
        case .total:
            if let owner = self.owner, owner.deadline > now {
                // A lined-up request's deadline, not the current one's.
                self.expireLine(at: now)
            } else {
                self.fail(TransportError(.totalTimeout, phase: phase))
            }
        case .head:
            self.fail(TransportError(.headTimeout, phase: .readHead))
        case .producerEnd:
            // Everything announced went out and the response is here: the request stands,
            // and the producer's further writes are refused.
            self.exchange.writer.end(.serverAnsweredEarly)
            self.act(self.machine.writeFinished())
        case .expectContinue:
            // No 100 Continue in time: send the body anyway (RFC 9110 §10.1.1).
            self.exchange.writer.releaseBody()
            self.writeRequest()
        case .write:
            self.fail(TransportError(.writeTimeout, phase: .write, detail: "the server took no request bytes for that long"))
        case .read:
            self.fail(TransportError(.readTimeout, phase: phase))
        case .idle:
            self.act(self.machine.failed())
        }
    }

    // MARK: Carrying out the machine's actions

    /// Does what the state machine said. Every action is carried out here, so no caller
    /// branches on the protocol's state itself.
    func act(_ action: HTTP1ConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .write:
            self.writeRequest()
        case .forwardHead:
            // Only where the head is parsed (decoderReceivedHead), which carries it out with the head.
            assertionFailure("a head to forward without the head")
        case .succeedRequest(let reuse):
            self.succeed(reuse: reuse)
        case .failRequest:
            self.finishFailure(self.exchange.ownerError ?? TransportError(.readFailed), closedByPeer: false)
        case .close:
            self.closeSocket()
            self.pool.connectionClosed(self)
        }
    }

    /// Ends the current request with `error` (or closes an idle connection): a timeout, a
    /// cancellation, a protocol error — the connection's own reasons, not the peer's close.
    func fail(_ error: TransportError) {
        switch self.machine.failed() {
        case .failRequest:
            self.finishFailure(error, closedByPeer: false)
        case let other:
            self.act(other)
        }
    }

    /// The exchange broke: the connection closes, the pool hears it is gone, then the
    /// request's owner (and the owners of requests in line) learn what happened to theirs.
    func finishFailure(_ error: TransportError, closedByPeer: Bool) {
        let owner = self.owner
        let facts = ExchangeFacts(reusedConnection: self.fromIdle,
                                  requestBytesWritten: self.exchange.writer.bytesWritten,
                                  responseBytesRead: self.decoder.bytesOfCurrentResponse, closedByPeer: closedByPeer,
                                  requestSent: owner.map { self.exchange.writer.hasSentAll(of: $0) } ?? false)
        self.owner = nil
        self.exchange.writer.end()
        let line = self.takeLine()
        self.closeSocket()
        self.pool.connectionClosed(self)
        // The requests in line first (the connection broke under them: those whose bytes went
        // out spend their one send-again), then the current one: a request any of them sends
        // again goes first in the pool's queue, so the current one stays ahead of its line; and
        // none is between two places when a completion handler runs and cancels it.
        self.lineLeft(line, connectionFailed: true)
        owner?.exchangeFailed(error, facts: facts)
    }

    private func succeed(reuse: Bool) {
        guard let owner = self.owner else { return }
        // When the response ended, for its metrics: this turn's clock reading (taken as the
        // loop woke to read it), read before handing the connection on can refresh it.
        let end = self.loop.now
        self.pool.requestEnded(status: owner.metrics.status, startedAt: owner.metrics.startedAt, end: end)
        let bytesSent = self.exchange.writer.bytesWritten
        let trailers = self.exchange.trailers
        self.owner = nil
        self.exchange.writer.end(.serverAnsweredEarly)
        var mustClose = self.exchange.mustClose
        if self.exchange.readPaused {
            // The consumer paused reading, but the response ended within the bytes already
            // read: the next request must find the connection reading.
            // Bytes TLS read ahead past the response's end (a close_notify, or something
            // unasked) are out of epoll's sight: such a connection is not carried on.
            if !self.socket.isRegistered || !self.socket.drainedByShortRead { mustClose = true }
            self.socket.setInterest(.read, on: self.loop)
        }
        self.exchange.end()
        if let tls = self.socket.tls, self.machine.requestsServed == 1, let resumption = tls.resumption() {
            // After the first response a TLS 1.3 server has sent its ticket: keep it for
            // the next connection to this host.
            self.pool.tlsResumption = resumption
        }
        // Back to the pool before the request hears it ended: a next request started from
        // its completion (or a redirect to the same host) finds the connection free.
        if reuse && !mustClose {
            self.lastActivity = self.loop.now
            self.keptAliveOverHTTP11 = self.decoder.version == .http1_1
            // The next request in line, if one was pipelined; else back to the pool.
            if self.promoteLined() {
                self.pool.lineHasRoom(self)
            } else if self.closeWhenLineDrains {
                self.closeSocket()
                self.pool.connectionClosed(self)
            } else {
                self.pool.connectionReleased(self)
            }
            owner.exchangeSucceeded(trailers: trailers, bytesSent: bytesSent, at: end)
        } else {
            let line = self.takeLine()
            self.closeSocket()
            self.pool.connectionClosed(self)
            // Closed in order after an answer: the requests in line keep their send-again (and
            // are back in the pool before the caller hears of this one).
            self.lineLeft(line, connectionFailed: false)
            owner.exchangeSucceeded(trailers: trailers, bytesSent: bytesSent, at: end)
        }
    }

    /// Closes the socket; what the connection carried is its callers' to report.
    func closeSocket() {
        self.socket.close(on: self.loop)
        self.connector.abandon(loop: self.loop)
        self.timer.disarm()
        self.life = .closed
    }

    /// Closes the connection now (the pool gave its place away, or is shutting down),
    /// failing its request if it has one.
    func close(failingWith error: TransportError) {
        if self.owner != nil {
            self.fail(error)
        } else {
            let line = self.takeLine()
            self.closeSocket()
            self.lineLeft(line, connectionFailed: false)
        }
    }
}
