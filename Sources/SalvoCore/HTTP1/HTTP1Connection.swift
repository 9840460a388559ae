import CSalvo
import HTTPTypes
#if canImport(Glibc)
import Glibc
#endif

/// One TCP connection speaking HTTP/1.1, driven by its event loop.
///
/// The protocol decisions live in ``HTTP1ConnectionStateMachine``; this class does the
/// I/O they ask for: connecting (each resolved address in turn), writing the request with
/// one `sendmsg`, reading into the loop's shared buffer and parsing in place, timers.
/// Loop-confined: every method runs on `loop`'s thread.
final class HTTP1Connection: Selectable, TimerTarget, ResponseDecoderDelegate {
    enum Life {
        case resolving
        case connecting(addressIndex: Int)
        /// TCP is up; the TLS handshake is under way.
        case handshaking
        case open
        case closed
    }

    let id: Int
    let key: ConnectionKey
    unowned let loop: EventLoop
    unowned let pool: HostPool
    private(set) var life: Life = .resolving

    private var fd: Int32 = -1
    private var token: UInt64 = 0
    private var interest: IOInterest = .none
    private var addresses: [SocketAddress] = []
    private var lastConnectErrno: Int32 = 0
    private var connectDeadline: Deadline

    private var machine = HTTP1ConnectionStateMachine()
    private let decoder: ResponseDecoder
    private(set) var task: RequestTask?
    private var writeOffset = 0
    private var readPaused = false
    private var mustClose = false
    private var handlerError: HTTPClientError?
    private var pendingEnd: (trailers: HTTPFields?, keepAlive: Bool)?
    /// A streamed request body being sent, and whether the write side waits for its producer.
    private var streamedBody: StreamedBody?
    private var waitingForBody = false
    /// `Expect: 100-continue`: the head is sent and the body waits, until `continueDeadline`.
    private var awaitingContinue = false
    private var continueDeadline = Deadline.distantFuture
    /// 100 Continue arrived during a parse: the body goes once the parser returns.
    private var continueArrived = false
    /// A final answer came before the body was sent: it never is, and the connection closes.
    private var bodyWithheld = false
    private var lastActivity = Deadline(nanoseconds: 0)
    private let idleTimeout: Duration
    /// The client's TLS context for an https connection, and this connection's session.
    private let tlsContext: TLSContext?
    private var tls: TLSSession?
    /// The deadline of the one timer this connection relies on. Timers are never cancelled:
    /// a new one is armed only when the connection needs waking earlier than `armedTimer`,
    /// and a timer that fires for any other deadline is stale. So a connection keeps one or
    /// two heap entries, not one per request.
    private var armedTimer: Deadline?

    init(id: Int, key: ConnectionKey, loop: EventLoop, pool: HostPool,
         connectTimeout: Duration, idleTimeout: Duration, limits: ResponseHeadLimits, tls: TLSContext? = nil) {
        self.id = id
        self.key = key
        self.loop = loop
        self.pool = pool
        self.idleTimeout = idleTimeout
        self.tlsContext = tls
        self.connectDeadline = loop.refreshNow() + connectTimeout
        self.decoder = ResponseDecoder(limits: limits)
        self.decoder.delegate = self
    }

    var requestsServed: Int { self.machine.requestsServed }

    // MARK: Connecting

    /// Starts connecting. Always returns before anything is reported to the pool: the
    /// work begins on the loop's next turn, so a connect that fails at once (EMFILE, an
    /// unreachable network) cannot recurse through the pool into the next attempt.
    func connect() {
        self.updateTimer()
        let connection = LoopBound(self, loop: self.loop)
        let loop = self.loop
        let key = self.key
        loop.execute {
            guard case .resolving = connection.value.life else { return }
            Resolver.resolve(host: key.host, port: key.port, on: loop) { result in
                // Runs on the loop: at once for numeric hosts, else after the lookup.
                connection.value.resolved(result)
            }
        }
    }

    private func resolved(_ result: Result<[SocketAddress], HTTPClientError>) {
        guard case .resolving = self.life else { return }
        switch result {
        case .success(let addresses):
            self.addresses = addresses
            self.tryAddress(0)
        case .failure(let error):
            self.connectFailed(error)
        }
    }

    private func tryAddress(_ index: Int) {
        guard index < self.addresses.count else {
            let code: HTTPClientError.Code = self.lastConnectErrno == ECONNREFUSED ? .connectionRefused : .connectFailed
            self.connectFailed(HTTPClientError(code, host: self.key.host, phase: .connect, errno: self.lastConnectErrno,
                                               detail: "port \(self.key.port)"))
            return
        }
        var address = self.addresses[index]
        let fd = socket(address.family, salvo_SOCK_STREAM_NONBLOCK_CLOEXEC, 0)
        guard fd >= 0 else {
            self.lastConnectErrno = salvo_errno()
            self.tryAddress(index + 1)
            return
        }
        self.fd = fd
        let rc = withUnsafePointer(to: &address.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
        }
        let err = rc == 0 ? 0 : salvo_errno()
        if rc == 0 || err == EINPROGRESS {
            self.life = .connecting(addressIndex: index)
            do {
                self.interest = .write
                self.token = try self.loop.register(fd, self, interest: .write)
            } catch {
                self.lastConnectErrno = error.errno
                self.closeSocket()
                self.tryAddress(index + 1)
            }
            return
        }
        self.lastConnectErrno = err
        self.closeSocket()
        self.tryAddress(index + 1)
    }

    private func connectReady() {
        guard case .connecting(let index) = self.life else { return }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(self.fd, SOL_SOCKET, SO_ERROR, &error, &length)
        if error != 0 {
            self.lastConnectErrno = error
            self.closeSocket()
            self.tryAddress(index + 1)
            return
        }
        var one: Int32 = 1
        setsockopt(self.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if let context = self.tlsContext {
            do {
                let session = try TLSSession(context: context, fd: self.fd, host: self.key.host)
                if let resumption = self.pool.tlsResumption { session.offer(resumption) }
                self.tls = session
            } catch {
                self.connectFailed(error)
                return
            }
            self.life = .handshaking
            if let limit = context.configuration.handshakeTimeout {
                self.connectDeadline = min(self.connectDeadline, self.loop.refreshNow() + limit)
                self.updateTimer()
            }
            self.continueHandshake()
            return
        }
        self.life = .open
        self.setInterest(.read)
        self.pool.connectionEstablished(self)
    }

    private func continueHandshake() {
        guard case .handshaking = self.life, let tls = self.tls else { return }
        do {
            switch try tls.handshake() {
            case .done:
                if let pins = self.tlsContext?.configuration.pinnedPublicKeys, !pins.isEmpty {
                    let key = tls.peerPublicKeyPin
                    guard let key, pins.contains(key) else {
                        self.connectFailed(HTTPClientError(.tlsPinMismatch, host: self.key.host, phase: .connect,
                                                           detail: "server key sha256//\(key ?? "none") is not pinned"))
                        return
                    }
                }
                if tls.resumed { self.pool.owner.tlsResumed += 1 }
                self.life = .open
                self.setInterest(.read)
                self.pool.connectionEstablished(self)
            case .wantRead:
                self.setInterest(.read)
            case .wantWrite:
                self.setInterest(.write)
            }
        } catch {
            self.connectFailed(error.with(host: self.key.host))
        }
    }

    private func connectFailed(_ error: HTTPClientError) {
        self.closeSocket()
        self.life = .closed
        self.armedTimer = nil
        self.pool.connectionFailed(self, error: error)
    }

    // MARK: Requests

    /// Runs `task` on this idle, open connection.
    func run(_ task: RequestTask) {
        precondition(self.task == nil && self.machine.isIdle)
        self.task = task
        task.phase = .running(self)
        self.writeOffset = 0
        self.readPaused = false
        self.mustClose = task.closeAfter
        self.handlerError = nil
        self.pendingEnd = nil
        self.streamedBody = nil
        self.waitingForBody = false
        self.awaitingContinue = task.expectsContinue
        self.continueArrived = false
        self.bodyWithheld = false
        if task.expectsContinue { self.continueDeadline = self.loop.now + task.continueTimeout }
        self.decoder.prepareForNextResponse(expectNoBody: task.isHead)
        self.lastActivity = self.loop.now
        self.updateTimer()
        switch self.machine.startRequest() {
        case .write:
            self.writeRequest()
        default:
            break
        }
    }

    /// When the connection next needs attention, given what it is doing.
    private func nextDeadline() -> Deadline? {
        switch self.life {
        case .resolving, .connecting, .handshaking:
            return self.connectDeadline
        case .open:
            if let task = self.task {
                var deadline = task.deadline
                // The read timeout waits for the server, not for our own body producer.
                if let readTimeout = task.readTimeout, !self.readPaused, !self.waitingForBody {
                    deadline = min(deadline, self.lastActivity + readTimeout)
                }
                if self.awaitingContinue { deadline = min(deadline, self.continueDeadline) }
                return deadline
            }
            return self.machine.isIdle ? self.lastActivity + self.idleTimeout : nil
        case .closed:
            return nil
        }
    }

    private func updateTimer() {
        guard let deadline = self.nextDeadline(), deadline != .distantFuture else { return }
        if let armed = self.armedTimer, armed <= deadline { return }
        self.armedTimer = deadline
        self.loop.scheduleTimer(at: deadline, target: self, token: deadline.nanoseconds)
    }

    /// Writes what the request has ready: the head, then the body (held in memory, or
    /// streamed as its producer delivers), holding the body back while a 100 Continue is due.
    private func writeRequest() {
        guard let task = self.task, !self.bodyWithheld else { return }
        let limit = task.head.count + (self.awaitingContinue ? 0 : task.body.count)
        if self.writeOffset < limit {
            let done = self.tls.map { self.writeFixedTLS(task, upTo: limit, $0) } ?? self.writeFixed(task, upTo: limit)
            guard done else { return }
        }
        if self.awaitingContinue {
            // The head is out; the body waits for 100 Continue, a final answer or the timer.
            self.setInterest(self.readPaused ? .none : .read)
            self.updateTimer()
            return
        }
        if let source = task.stream {
            let body: StreamedBody
            if let started = self.streamedBody {
                body = started
            } else {
                body = StreamedBody(loop: self.loop, length: source.length, connection: self)
                self.streamedBody = body
                body.start(source.produce)
            }
            guard self.writeStreamed(body) else { return }
        }
        self.setInterest(self.readPaused ? .none : .read)
        self.act(self.machine.writeFinished())
    }

    /// Writes head (and in-memory body) bytes up to `limit`; true once all are written.
    private func writeFixed(_ task: RequestTask, upTo limit: Int) -> Bool {
        while self.writeOffset < limit {
            let sent = self.sendPending(task, upTo: limit)
            if sent > 0 {
                self.writeOffset += sent
                // A slow upload that makes progress is not a silent server.
                self.lastActivity = self.loop.now
                continue
            }
            let err = -sent
            if err == EAGAIN || err == EWOULDBLOCK {
                self.setInterest(self.readPaused ? .write : [.read, .write])
                return false
            }
            self.writeFailed(errno: Int32(err))
            return false
        }
        return true
    }

    private func writeFixedTLS(_ task: RequestTask, upTo limit: Int, _ tls: TLSSession) -> Bool {
        let headCount = task.head.count
        while self.writeOffset < limit {
            let offset = self.writeOffset
            let result = offset < headCount
                ? task.head.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
                : task.body.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[(offset - headCount)..<(limit - headCount)])) }
            if let error = result.error {
                self.fail(error)
                return false
            }
            if result.written > 0 {
                self.writeOffset += result.written
                self.lastActivity = self.loop.now
                continue
            }
            self.setInterest(result.progress == .wantRead ? .read : (self.readPaused ? .write : [.read, .write]))
            return false
        }
        return true
    }

    /// Writes queued chunks of a streamed body; true once the whole body is written.
    private func writeStreamed(_ body: StreamedBody) -> Bool {
        while true {
            if let failure = body.failure {
                self.fail(failure)
                return false
            }
            guard let chunk = body.front else {
                if body.isComplete { return true }
                // Everything queued is out: wait for the producer (it wakes us).
                self.waitingForBody = true
                self.setInterest(self.readPaused ? .none : .read)
                return false
            }
            let offset = body.frontOffset
            if let tls = self.tls {
                let result = chunk.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
                if let error = result.error {
                    self.fail(error)
                    return false
                }
                if result.written == 0 {
                    self.setInterest(result.progress == .wantRead ? .read : (self.readPaused ? .write : [.read, .write]))
                    return false
                }
                body.consumed(result.written)
            } else {
                let result = chunk.withUnsafeBytes { bytes -> Result<IOResult, SystemError> in
                    do throws(SystemError) {
                        return .success(try SystemCall.send(self.fd, bytes.baseAddress! + offset, bytes.count - offset))
                    } catch {
                        return .failure(error)
                    }
                }
                if case .failure(let error) = result {
                    self.writeFailed(errno: error.errno)
                    return false
                }
                guard case .success(.processed(let n)) = result else {
                    self.setInterest(self.readPaused ? .write : [.read, .write])
                    return false
                }
                body.consumed(n)
            }
            self.lastActivity = self.loop.now
        }
    }

    /// The streamed body's producer queued data, finished or failed.
    func streamedBodyChanged() {
        guard self.task != nil, let body = self.streamedBody else { return }
        if let failure = body.failure {
            self.fail(failure)
            return
        }
        guard self.waitingForBody else { return }
        self.waitingForBody = false
        self.lastActivity = self.loop.now
        self.writeRequest()
    }

    /// The request is over for this connection: stop a body producer that may still run.
    private func endStreamedBody() {
        self.streamedBody?.cancel()
        self.streamedBody = nil
        self.waitingForBody = false
        self.awaitingContinue = false
    }

    /// One sendmsg of what is left of head and body: bytes sent, or minus errno.
    private func sendPending(_ task: RequestTask, upTo limit: Int) -> Int {
        let headCount = task.head.count
        let offset = self.writeOffset
        let bodyEnd = limit - headCount
        return task.head.withUnsafeBytes { head in
            task.body.withUnsafeBytes { body in
                var vectors = (iovec(), iovec())
                return withUnsafeMutableBytes(of: &vectors) { raw -> Int in
                    let iov = raw.baseAddress!.assumingMemoryBound(to: iovec.self)
                    var count: Int32 = 0
                    if offset < headCount {
                        iov[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress! + offset),
                                       iov_len: headCount - offset)
                        count = 1
                    }
                    let bodyOffset = max(0, offset - headCount)
                    if bodyEnd > bodyOffset {
                        iov[Int(count)] = iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress! + bodyOffset),
                                                iov_len: bodyEnd - bodyOffset)
                        count += 1
                    }
                    while true {
                        let n = salvo_sendv(self.fd, iov, count)
                        if n >= 0 { return n }
                        let err = salvo_errno()
                        if err != EINTR { return -Int(err) }
                    }
                }
            }
        }
    }

    private func writeFailed(errno: Int32) {
        // The server may have answered and closed (an early 413, say): read what is there
        // before deciding how the request ends.
        self.setInterest(.read)
        self.readable()
        guard self.task != nil, !self.machine.isClosed else { return }
        if errno == EPIPE || errno == ECONNRESET {
            self.remoteClosed(errno: errno, duringWrite: true)
        } else {
            self.fail(HTTPClientError(.writeFailed, phase: .write, errno: errno))
        }
    }

    /// The pool parked this connection: close it if it stays idle past the idle timeout.
    func parked() {
        self.lastActivity = self.loop.now
        self.updateTimer()
    }

    /// Lets a paused response stream read again.
    func resumeReading() {
        guard self.readPaused, !self.machine.isClosed else { return }
        self.readPaused = false
        self.lastActivity = self.loop.now
        self.updateTimer()
        let writing = self.interest.contains(.write)
        if self.token == 0 && self.fd >= 0 {
            // Out of epoll after a hang-up while paused: the data left, then the end, is
            // still in the socket; read it now.
            self.readable()
            return
        }
        self.setInterest(writing ? [.read, .write] : .read)
    }

    // MARK: Events

    func ready(events: UInt32) {
        if case .connecting = self.life {
            self.connectReady()
            return
        }
        if case .handshaking = self.life {
            self.continueHandshake()
            return
        }
        if events & salvo_EPOLLOUT != 0, self.task != nil {
            self.writeRequest()
        }
        if events & (salvo_EPOLLIN | salvo_EPOLLRDHUP | salvo_EPOLLHUP | salvo_EPOLLERR) != 0 {
            if !self.readPaused {
                self.readable()
            } else if events & (salvo_EPOLLHUP | salvo_EPOLLERR) != 0, self.token != 0 {
                // epoll reports HUP and ERR whatever the interest, so a paused connection
                // whose peer went away would wake the loop forever. Step out of epoll until
                // the consumer asks for more; the read then finds the end.
                self.loop.deregister(self.fd, token: self.token)
                self.token = 0
                self.interest = .none
            }
        }
    }

    private func readable() {
        if self.tls != nil {
            self.readableTLS()
            return
        }
        let buffer = self.loop.readBuffer
        while case .open = self.life, !self.readPaused {
            let result: IOResult
            do {
                result = try SystemCall.read(self.fd, buffer.baseAddress!, buffer.count)
            } catch {
                self.readError(error.errno)
                return
            }
            switch result {
            case .wouldBlock:
                return
            case .processed(0):
                self.remoteClosed(errno: 0)
                return
            case .processed(let n):
                self.lastActivity = self.loop.now
                self.received(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n))
                // A short read means the socket is drained: save the read that would say EAGAIN.
                if n < buffer.count { return }
            }
        }
    }

    /// Reads through TLS until OpenSSL wants more from the socket. A record can hold more
    /// than one read's worth, so a short read says nothing here: only WANT_READ does.
    private func readableTLS() {
        let buffer = self.loop.readBuffer
        while case .open = self.life, !self.readPaused, let tls = self.tls {
            switch tls.read(into: buffer) {
            case .bytes(let n):
                self.lastActivity = self.loop.now
                self.received(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n))
                if n < buffer.count && !tls.hasBufferedBytes { return }
            case .wantRead:
                return
            case .wantWrite:
                self.setInterest([.read, .write])
                return
            case .closed:
                self.remoteClosed(errno: 0)
                return
            case .uncleanEOF:
                // No close_notify: a body that runs to the close cannot be known complete.
                if self.task != nil && self.decoder.bodyEndsAtClose {
                    self.fail(HTTPClientError(.truncatedBody, phase: .readBody,
                                              detail: "the server closed the TLS connection without close_notify"))
                    return
                }
                self.remoteClosed(errno: 0)
                return
            case .failed(let error):
                self.fail(error)
                return
            }
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard self.task != nil else {
            // Bytes on an idle connection: nothing asked for them, so it cannot be trusted.
            self.act(self.machine.failed())
            return
        }
        let result: ResponseDecoder.FeedResult
        do {
            result = try self.decoder.feed(bytes)
        } catch {
            self.fail(self.handlerError ?? error)
            return
        }
        if case .complete(let consumed) = result, consumed < bytes.count {
            // Bytes after the response: not pipelined, so the connection is out of step.
            self.mustClose = true
        }
        if self.continueArrived {
            self.continueArrived = false
            if !self.bodyWithheld { self.writeRequest() }
        }
        self.deliverEnd()
    }

    private func deliverEnd() {
        guard let end = self.pendingEnd else { return }
        self.pendingEnd = nil
        self.act(self.machine.responseEnded(keepAlive: end.keepAlive && !self.mustClose))
    }

    private func readError(_ errno: Int32) {
        if errno == ECONNRESET && self.decoder.bytesOfCurrentResponse == 0 {
            self.remoteClosed(errno: errno)
            return
        }
        self.fail(HTTPClientError(.readFailed, phase: self.decoder.inBody ? .readBody : .readHead, errno: errno))
    }

    private func remoteClosed(errno: Int32, duringWrite: Bool = false) {
        guard self.task != nil else {
            self.act(self.machine.remoteClosed(responseStarted: false))
            return
        }
        if errno == 0 {
            do {
                if try self.decoder.finish() {
                    self.mustClose = true
                    self.deliverEnd()
                    return
                }
            } catch {
                self.failOnClose(error)
                return
            }
        }
        var error = self.decoder.endOfStreamError()
        if errno != 0 && error.code == .emptyResponse {
            // Reset before any response: a send failure if the request was still going out
            // (curl's 55), a receive failure otherwise (56).
            error = duringWrite
                ? HTTPClientError(.writeFailed, phase: .write, errno: errno)
                : HTTPClientError(.readFailed, phase: .readHead, errno: errno)
        } else if errno != 0 {
            error.errno = errno
        }
        self.failOnClose(error)
    }

    private func failOnClose(_ error: HTTPClientError) {
        let action = self.machine.remoteClosed(responseStarted: self.decoder.bytesOfCurrentResponse > 0)
        if case .failRequest(let retryable) = action, retryable, let task = self.task, task.isIdempotent,
           task.isReplayable, !task.retried {
            self.task = nil
            self.endStreamedBody()
            self.closeSocket()
            self.pool.connectionClosed(self, retry: task)
            return
        }
        self.finishFailure(error)
    }

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

    private func finishFailure(_ error: HTTPClientError) {
        let task = self.task
        self.task = nil
        self.endStreamedBody()
        self.closeSocket()
        task?.fail(error)
        self.pool.connectionClosed(self, retry: nil)
    }

    private func act(_ action: HTTP1ConnectionStateMachine.Action) {
        switch action {
        case .none, .write, .forwardHead:
            break
        case .succeedRequest(let reuse):
            let task = self.task!
            self.task = nil
            self.endStreamedBody()
            if self.readPaused {
                // The consumer paused reading, but the response ended within the bytes
                // already read: the next request must find the connection reading.
                self.readPaused = false
                if self.token == 0 { self.mustClose = true }
                self.setInterest(.read)
            }
            let trailers = self.pendingTrailers
            self.pendingTrailers = nil
            if let tls = self.tls, self.machine.requestsServed == 1, let resumption = tls.resumption() {
                // After the first response a TLS 1.3 server has sent its ticket: keep it for
                // the next connection to this host.
                self.pool.tlsResumption = resumption
            }
            // Back to the pool before the request hears it ended: a next request started from
            // its completion (or a redirect to the same host) finds the connection free.
            if reuse && !self.mustClose {
                self.pool.connectionReleased(self)
            } else {
                self.closeSocket()
                self.pool.connectionClosed(self, retry: nil)
            }
            task.finish(trailers: trailers)
        case .failRequest:
            self.finishFailure(self.handlerError ?? HTTPClientError(.readFailed))
        case .close:
            self.closeSocket()
            self.pool.connectionClosed(self, retry: nil)
        }
    }

    private var pendingTrailers: HTTPFields?
    /// Maintained by the pool: whether a request holds this connection (or is about to).
    var isLeased = false

    // MARK: Decoder callbacks (inside llhttp_execute: record, act after it returns)

    func decoderReceivedInformational(_ head: HTTPResponse) {
        if head.status.code == 100 && self.awaitingContinue {
            self.awaitingContinue = false
            self.continueArrived = true
        }
        self.task?.receiveInformational(head)
    }

    func decoderReceivedHead(_ head: HTTPResponse) -> Bool {
        guard let task = self.task else { return false }
        if self.awaitingContinue {
            // A final answer before 100 Continue: the body is not sent (RFC 9110 §10.1.1),
            // so the connection cannot carry another request.
            self.awaitingContinue = false
            self.bodyWithheld = true
        }
        _ = self.machine.headReceived()
        do {
            try task.receiveHead(head)
            return true
        } catch {
            self.handlerError = error
            return false
        }
    }

    func decoderReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let task = self.task else { return false }
        do {
            if try !task.receiveBody(bytes) {
                self.readPaused = true
                self.setInterest(self.interest.subtracting(.read))
            }
            return true
        } catch {
            self.handlerError = error
            return false
        }
    }

    func decoderReceivedEnd(trailers: HTTPFields?, keepAlive: Bool) {
        self.pendingEnd = (trailers, keepAlive)
        self.pendingTrailers = trailers
    }

    // MARK: Timers

    func timerIsCurrent(token: UInt64) -> Bool {
        self.armedTimer?.nanoseconds == token
    }

    func timerFired(token: UInt64, now: Deadline) {
        guard let armed = self.armedTimer, armed.nanoseconds == token else { return }
        self.armedTimer = nil
        if let deadline = self.nextDeadline(), now < deadline {
            self.updateTimer()
            return
        }
        switch self.life {
        case .resolving, .connecting:
            self.connectFailed(HTTPClientError(.connectTimeout, host: self.key.host, phase: .connect))
        case .handshaking:
            self.connectFailed(HTTPClientError(.connectTimeout, host: self.key.host, phase: .connect,
                                               detail: "the TLS handshake did not finish in time"))
        case .open:
            if let task = self.task {
                if self.awaitingContinue && now >= self.continueDeadline && now < task.deadline {
                    // No 100 Continue in time: send the body anyway (RFC 9110 §10.1.1).
                    self.awaitingContinue = false
                    self.writeRequest()
                    self.updateTimer()
                    return
                }
                if now >= task.deadline {
                    self.fail(HTTPClientError(.totalTimeout, phase: self.decoder.inBody ? .readBody : .readHead))
                } else {
                    self.fail(HTTPClientError(.readTimeout, phase: self.decoder.inBody ? .readBody : .readHead))
                }
            } else if self.machine.isIdle {
                self.act(self.machine.failed())
            }
        case .closed:
            break
        }
    }

    // MARK: Closing

    private func setInterest(_ interest: IOInterest) {
        guard interest != self.interest, self.fd >= 0 else { return }
        self.interest = interest
        try? self.loop.reregister(self.fd, token: self.token, interest: interest)
    }

    private func closeSocket() {
        guard self.fd >= 0 else { return }
        if let tls = self.tls {
            // close_notify, best effort: the socket is closing either way.
            if case .open = self.life { tls.shutdown() }
            self.tls = nil
        }
        if self.token != 0 {
            self.loop.deregister(self.fd, token: self.token)
            self.token = 0
        }
        SystemCall.close(self.fd)
        self.fd = -1
        self.interest = .none
        // Between two addresses the connect deadline still stands, and so does its timer.
        if case .connecting = self.life { return }
        if case .resolving = self.life { return }
        self.armedTimer = nil
        self.life = .closed
    }

    /// Closes the connection now, failing its request if it has one.
    func close(failingWith error: HTTPClientError) {
        if self.task != nil {
            self.fail(error)
        } else {
            self.closeSocket()
            self.life = .closed
        }
    }
}
