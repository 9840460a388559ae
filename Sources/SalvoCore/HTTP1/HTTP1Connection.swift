@_spi(Benchmarks) import SalvoTransport
import CSalvo
import HTTPTypes

/// One connection speaking HTTP/1.1, driven by its event loop.
///
/// The protocol decisions live in ``HTTP1ConnectionStateMachine``; this class carries them out
/// over the pieces it owns: a ``SocketConnector`` while connecting, then a ``Socket`` (plain or
/// TLS — the same code either way), a ``RequestWriter`` for the request going out, a
/// ``ResponseDecoder`` parsing in place what comes in, and one timer for the earliest of its
/// ``ConnectionDeadlines``, recomputed after every event.
///
/// This file: life, events and timers. Reading is in `HTTP1Connection+Reading.swift`,
/// writing in `HTTP1Connection+Writing.swift`. Loop-confined: every method runs on `loop`'s
/// thread.
/// Stored properties are `@exclusivity(unchecked)`: the object is touched by its loop's thread
/// only, and no access to a property spans a call that could reach it again, so Swift's
/// dynamic exclusivity checks (12% of the API path's user CPU) buy nothing here.
final class HTTP1Connection: Selectable, TimerTarget, ResponseDecoderDelegate {
    enum Life {
        case resolving
        /// Connecting to an address, or in the TLS handshake.
        case connecting
        case open
        case closed
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
    @exclusivity(unchecked) var socket = Socket.none
    @exclusivity(unchecked) var machine = HTTP1ConnectionStateMachine()
    let decoder: ResponseDecoder
    @exclusivity(unchecked) var task: RequestTask?
    @exclusivity(unchecked) var writer = RequestWriter()
    /// The consumer asked for no more bytes for now; the socket is not read meanwhile.
    @exclusivity(unchecked) var readPaused = false
    /// The connection must not carry another request (the caller said so, or it is out of step).
    @exclusivity(unchecked) var mustClose = false
    /// What a handler threw inside a parser callback, reported once the parser returns.
    @exclusivity(unchecked) var handlerError: HTTPClientError?
    /// The response ended inside a parser callback: acted on once the parser returns.
    @exclusivity(unchecked) var pendingEnd: (trailers: HTTPFields?, keepAlive: Bool)?
    @exclusivity(unchecked) var pendingTrailers: HTTPFields?
    /// `100 Continue` arrived during a parse: the body goes once the parser returns.
    @exclusivity(unchecked) var continueArrived = false
    /// The errno of a failed write, while what the server sent before it went away is read.
    @exclusivity(unchecked) var sendFailure: Int32 = 0
    /// The response is complete and the request waits for its body's producer to end, until
    /// then (see ``producerGrace``).
    @exclusivity(unchecked) var producerEndDeadline: Deadline?
    /// How long a complete exchange waits for a streamed body's producer to end after its
    /// last announced byte: long enough for a producer that is about to throw or end, short
    /// enough that one which never ends does not hold the request.
    static let producerGrace: Duration = .seconds(1)
    /// When a byte last came in, or the connection last changed hands.
    @exclusivity(unchecked) var lastActivity: Deadline
    private let idleTimeout: Duration
    /// How long the server said it keeps an idle connection (`Keep-Alive: timeout=N`), less
    /// a margin: the connection is retired before the server would drop it under a request.
    @exclusivity(unchecked) var serverIdleLimit: Duration?
    /// The deadline of the one timer this connection relies on. Timers are never cancelled:
    /// a new one is armed only when the connection needs waking earlier than `armedTimer`,
    /// and a timer that fires for any other deadline is stale. So a connection keeps one or
    /// two heap entries, not one per request.
    @exclusivity(unchecked) private var armedTimer: Deadline?
    /// Maintained by the pool: whether a request holds this connection (or is about to).
    @exclusivity(unchecked) var isLeased = false
    /// Where the host's addresses come from.
    private let resolver: HostResolver
    /// The server closed the connection, or asked for it closed (for the pool's counters).
    @exclusivity(unchecked) var closedByPeer = false
    /// Since when the socket has refused the request's bytes (nil: it is not refusing).
    @exclusivity(unchecked) var writeBlockedSince: Deadline?
    /// How long this connection took to set up, for the metrics of its first request.
    @exclusivity(unchecked) private var setup: ConnectionSetup
    /// Requests written (or being written) behind ``task``, answered in this order
    /// (`HTTP1Connection+Pipelining.swift`).
    @exclusivity(unchecked) var pipeline: [PipelinedRequest] = []
    /// The last response kept the connection alive over HTTP/1.1: pipelining may follow.
    @exclusivity(unchecked) var keptAliveOverHTTP11 = false
    /// A request in line was given up after its bytes went out: the connection serves the
    /// ones ahead of it, then closes (its answer would be taken for another's).
    @exclusivity(unchecked) var closeWhenPipelineDrains = false
    /// The connection ends by a failure: requests in line that went out spend their retry.
    @exclusivity(unchecked) var pipelineFailed = false

    init(id: Int, key: ConnectionKey, loop: EventLoop, pool: HostPool,
         connectTimeout: Duration, idleTimeout: Duration, limits: ResponseHeadLimits, resolver: HostResolver, tls: TLSContext? = nil) {
        self.id = id
        self.resolver = resolver
        self.key = key
        self.loop = loop
        self.pool = pool
        self.idleTimeout = idleTimeout
        let now = loop.refreshNow()
        self.lastActivity = now
        self.setup = ConnectionSetup(createdAt: now)
        self.connector = SocketConnector(host: key.host, port: key.port, tls: tls,
                                         resumption: tls == nil ? nil : pool.tlsResumption, deadline: now + connectTimeout,
                                         proxy: key.proxy)
        self.decoder = ResponseDecoder(limits: limits)
        self.decoder.delegate = self
    }

    var requestsServed: Int { self.machine.requestsServed }

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
                    ?? .failure(HTTPClientError(.dnsFailure, host: key.host, phase: .resolve,
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

    private func resolved(_ result: Result<[SocketAddress], HTTPClientError>) {
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
            self.setup.opened(at: self.loop.refreshNow(), tcpConnectedAt: self.connector.tcpConnectedAt,
                              tls: socket.tls.map { $0.resumed })
            if socket.tls?.resumed == true {
                self.pool.owner.tlsResumed += 1
                self.pool.counters.tlsResumed += 1
            }
            self.socket.setInterest(.read, on: self.loop)
            self.lastActivity = self.loop.now
            self.pool.connectionEstablished(self)
        case .failed(let error):
            self.connectFailed(error)
        }
    }

    private func connectFailed(_ error: HTTPClientError) {
        self.connector.abandon(loop: self.loop)
        self.life = .closed
        self.armedTimer = nil
        self.pool.connectionFailed(self, error: error)
    }

    // MARK: Requests

    /// Runs `task` on this idle, open connection.
    func run(_ task: RequestTask) {
        precondition(self.task == nil && self.machine.isIdle)
        if !task.isIdempotent, !self.socket.isQuietAndOpen {
            self.closedByPeer = true
            // The server closed this idle connection (or sent something unasked) since it was
            // opened or last answered, and the request could not be sent again once it may
            // have been processed: it goes on a fresh connection instead.
            self.closeSocket()
            self.pool.connectionClosed(self, retry: task)
            return
        }
        defer { self.rearm() }
        task.reusedConnection = self.machine.requestsServed > 0
        if !task.reusedConnection { task.connectionSetup = self.setup }
        self.takeOn(task, writer: RequestWriter(for: task, now: self.loop.now))
        if case .write = self.machine.startRequest() {
            self.writeRequest()
        }
    }

    /// Makes `task` the current request: its writer (new, or how far a pipelined one got),
    /// the decoder ready for its response, every per-exchange flag cleared.
    func takeOn(_ task: RequestTask, writer: RequestWriter) {
        self.task = task
        task.phase = .running(self)
        task.runAt = self.loop.now
        self.readPaused = false
        self.mustClose = task.closeAfter
        self.handlerError = nil
        self.pendingEnd = nil
        self.pendingTrailers = nil
        self.continueArrived = false
        self.sendFailure = 0
        self.producerEndDeadline = nil
        self.writeBlockedSince = nil
        self.writer = writer
        self.decoder.prepareForNextResponse(expectNoBody: task.isHead, capturingHeads: task.headObserver != nil)
        self.lastActivity = self.loop.now
    }

    /// The pool parked this connection: close it if it stays idle past the idle timeout.
    func parked() {
        self.lastActivity = self.loop.now
        self.rearm()
    }

    // MARK: Events

    func ready(events: UInt32) {
        defer { self.rearm() }
        switch self.life {
        case .resolving, .closed:
            return
        case .connecting:
            self.connectorStepped(self.connector.ready(loop: self.loop, target: self))
            return
        case .open:
            break
        }
        if events & salvo_EPOLLOUT != 0, self.task != nil {
            self.writeRequest()
        }
        // Records TLS read ahead wait inside OpenSSL, which epoll does not see: a read that
        // had to write first (and so stopped) goes on when the socket takes the write.
        guard events & (salvo_EPOLLIN | salvo_EPOLLRDHUP | salvo_EPOLLHUP | salvo_EPOLLERR) != 0
                || !self.socket.drainedByShortRead else { return }
        if !self.readPaused {
            self.readable()
        } else if events & (salvo_EPOLLHUP | salvo_EPOLLERR) != 0 {
            // epoll reports HUP and ERR whatever the interest, so a paused connection whose
            // peer went away would wake the loop forever. Step out of epoll until the
            // consumer asks for more; the read then finds the end.
            self.socket.detachFromEpoll(on: self.loop)
        }
    }

    // MARK: Timers

    /// What the connection waits for now, and until when: a function of its state alone.
    var deadlines: ConnectionDeadlines {
        switch self.life {
        case .resolving, .connecting:
            return ConnectionDeadlines(connect: self.connector.wakeUp)
        case .open:
            guard let task = self.task else {
                let idle = self.serverIdleLimit.map { Swift.min($0, self.idleTimeout) } ?? self.idleTimeout
                return self.machine.isIdle ? ConnectionDeadlines(idle: self.lastActivity + idle) : .none
            }
            let total = self.pipeline.isEmpty ? task.deadline : min(task.deadline, self.pipelineDeadline)
            var deadlines = ConnectionDeadlines(total: total, producerEnd: self.producerEndDeadline,
                                                expectContinue: self.writer.continueDeadline)
            if !task.headReceived && task.headDeadline != .distantFuture { deadlines.head = task.headDeadline }
            // The write timeout waits for the socket to take bytes, not for our producer.
            if let writeTimeout = task.writeTimeout, let blocked = self.writeBlockedSince {
                deadlines.write = max(blocked, self.writer.lastProgress ?? blocked) + writeTimeout
            }
            // The read timeout waits for the server: not for a consumer that paused reading,
            // nor for our own body's producer, nor once the response is all here.
            if let readTimeout = task.readTimeout, !self.readPaused, !self.writer.waitingForProducer,
               self.machine.isAwaitingResponse {
                let activity = max(self.lastActivity, self.writer.lastProgress ?? self.lastActivity)
                deadlines.read = activity + readTimeout
            }
            return deadlines
        case .closed:
            return .none
        }
    }

    /// Keeps a timer armed for the earliest deadline. Called at the end of every event.
    func rearm() {
        guard let next = self.deadlines.next else { return }
        if let armed = self.armedTimer, armed <= next { return }
        self.armedTimer = next
        self.loop.scheduleTimer(at: next, target: self, token: next.nanoseconds)
    }

    func timerIsCurrent(token: UInt64) -> Bool {
        self.armedTimer?.nanoseconds == token
    }

    func timerFired(token: UInt64, now: Deadline) {
        guard let armed = self.armedTimer, armed.nanoseconds == token else { return }
        self.armedTimer = nil
        defer { self.rearm() }
        let phase: HTTPClientError.Phase = self.decoder.inBody ? .readBody : .readHead
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
            if let task = self.task, task.deadline > now {
                // A pipelined request's deadline, not the current one's.
                self.expirePipelined(at: now)
            } else {
                self.fail(HTTPClientError(.totalTimeout, phase: phase))
            }
        case .head:
            self.fail(HTTPClientError(.headTimeout, phase: .readHead))
        case .producerEnd:
            // Everything announced went out and the response is here: the request stands,
            // and the producer's further writes are refused.
            self.writer.end(.serverAnsweredEarly)
            self.act(self.machine.writeFinished())
        case .expectContinue:
            // No 100 Continue in time: send the body anyway (RFC 9110 §10.1.1).
            self.writer.releaseBody()
            self.writeRequest()
        case .write:
            self.fail(HTTPClientError(.writeTimeout, phase: .write, detail: "the server took no request bytes for that long"))
        case .read:
            self.fail(HTTPClientError(.readTimeout, phase: phase))
        case .idle:
            self.act(self.machine.failed())
        }
    }

    // MARK: Ending

    /// Ends the current request with `error` (or closes an idle connection).
    func fail(_ error: HTTPClientError) {
        switch self.machine.failed() {
        case .failRequest:
            self.finishFailure(error)
        case .close:
            self.closeSocket()
            self.pool.connectionClosed(self, retry: nil)
        default:
            break
        }
    }

    func finishFailure(_ error: HTTPClientError) {
        let task = self.task
        self.task = nil
        // The connection broke under requests in line: their bytes may have been processed,
        // so this counts as their one retry.
        self.pipelineFailed = true
        if task != nil { self.pool.requestEnded(failed: true) }
        self.writer.end()
        self.closeSocket()
        task?.fail(error)
        self.pool.connectionClosed(self, retry: nil)
    }

    func act(_ action: HTTP1ConnectionStateMachine.Action) {
        switch action {
        case .none, .write, .forwardHead:
            break
        case .succeedRequest(let reuse):
            self.succeed(reuse: reuse)
        case .failRequest:
            self.finishFailure(self.handlerError ?? HTTPClientError(.readFailed))
        case .close:
            self.closeSocket()
            self.pool.connectionClosed(self, retry: nil)
        }
    }

    private func succeed(reuse: Bool) {
        guard let task = self.task else { return }
        // When the response ended, for its metrics: this turn's clock reading (taken as the
        // loop woke to read it), read before handing the connection on can refresh it.
        let end = self.loop.now
        self.pool.requestEnded(failed: false)
        task.bytesSent = self.writer.bytesWritten
        self.task = nil
        self.writer.end(.serverAnsweredEarly)
        if self.readPaused {
            // The consumer paused reading, but the response ended within the bytes already
            // read: the next request must find the connection reading.
            self.readPaused = false
            // Bytes TLS read ahead past the response's end (a close_notify, or something
            // unasked) are out of epoll's sight: such a connection is not carried on.
            if !self.socket.isRegistered || !self.socket.drainedByShortRead { self.mustClose = true }
            self.socket.setInterest(.read, on: self.loop)
        }
        let trailers = self.pendingTrailers
        self.pendingTrailers = nil
        if let tls = self.socket.tls, self.machine.requestsServed == 1, let resumption = tls.resumption() {
            // After the first response a TLS 1.3 server has sent its ticket: keep it for
            // the next connection to this host.
            self.pool.tlsResumption = resumption
        }
        // Back to the pool before the request hears it ended: a next request started from
        // its completion (or a redirect to the same host) finds the connection free.
        if reuse && !self.mustClose {
            self.lastActivity = self.loop.now
            self.keptAliveOverHTTP11 = self.decoder.version == .http1_1
            // The next request in line, if one was pipelined; else back to the pool.
            if self.promotePipelined() {
                self.pool.pipelineHasRoom(self)
            } else if self.closeWhenPipelineDrains {
                self.closeSocket()
                self.pool.connectionClosed(self, retry: nil)
            } else {
                self.pool.connectionReleased(self)
            }
        } else {
            self.closeSocket()
            self.pool.connectionClosed(self, retry: nil)
        }
        task.finish(trailers: trailers, at: end)
    }

    func closeSocket() {
        self.releasePipeline()
        self.socket.close(on: self.loop)
        self.connector.abandon(loop: self.loop)
        self.armedTimer = nil
        self.life = .closed
    }

    /// Closes the connection now, failing its request if it has one.
    func close(failingWith error: HTTPClientError) {
        if self.task != nil {
            self.fail(error)
        } else {
            self.closeSocket()
        }
    }
}
