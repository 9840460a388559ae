import CLLHTTP
import CSalvo
import SalvoCore
#if canImport(Glibc)
import Glibc
#endif

/// One connection of a load run, on its worker's loop.
///
/// The hot path of the load generator: a response is read into the loop's buffer, parsed
/// in place by llhttp with callbacks that only count (no header is materialized), timed
/// into the worker's histogram, and answered by writing the next request from bytes that
/// were serialized once for the whole run. Nothing here allocates, locks or leaves the
/// loop thread per request.
///
/// With pipelining, up to `depth` requests are in flight; their send times wait in a ring.
/// The request buffer holds `depth + 1` copies of the request back to back, so any run of
/// up to `depth` requests starting at any offset within a copy is one contiguous write.
final class LoadConnection: Selectable, TimerTarget {
    enum State { case closed, connecting, handshaking, open }

    unowned let worker: LoadWorker
    private(set) var state: State = .closed
    private var fd: Int32 = -1
    private var token: UInt64 = 0
    private var interest: IOInterest = .none

    let parser: UnsafeMutablePointer<llhttp_t>
    /// Send times (ns) of the requests in flight, oldest first.
    private let sendTimes: UnsafeMutablePointer<UInt64>
    private var ringStart = 0
    private(set) var inFlight = 0
    /// Bytes of the current write batch, as a range of the worker's request buffer.
    private var writeOffset = 0
    private var writeEnd = 0
    /// Whether a request already went over this connection (for the reuse count).
    private var carriedRequest = false
    /// Whether a response came over this connection (to take its TLS session once).
    private var carriedResponse = false
    /// Set by the parser callbacks during one read.
    var status = 0
    var mustReconnect = false
    /// The clock reading for the responses of the current read.
    var readTime: UInt64 = 0
    /// Rate mode: when this connection's next request is due (ns).
    private var nextDue: UInt64 = 0
    private var waitingForDue = false
    private var connectStarted: UInt64 = 0
    /// The TLS session of an https connection.
    private var session: TLSSession?

    init(worker: LoadWorker, settings: UnsafeMutablePointer<llhttp_settings_t>) {
        self.worker = worker
        self.parser = .allocate(capacity: 1)
        self.sendTimes = .allocate(capacity: worker.depth)
        llhttp_init(self.parser, HTTP_RESPONSE, settings)
        self.parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        self.parser.deallocate()
        self.sendTimes.deallocate()
    }

    // MARK: Connecting

    func connect(now: UInt64) {
        var address = self.worker.address
        let fd = socket(address.family, salvo_SOCK_STREAM_NONBLOCK_CLOEXEC, 0)
        guard fd >= 0 else {
            self.worker.connectFailed(self)
            return
        }
        self.fd = fd
        self.connectStarted = now
        let rc = withUnsafePointer(to: &address.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
        }
        if rc != 0 && salvo_errno() != EINPROGRESS {
            self.closeSocket()
            self.worker.connectFailed(self)
            return
        }
        do {
            self.token = try self.worker.loop.register(fd, self, interest: .write)
            self.interest = .write
            self.state = .connecting
        } catch {
            self.closeSocket()
            self.worker.connectFailed(self)
        }
    }

    private func connected() {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(self.fd, SOL_SOCKET, SO_ERROR, &error, &length)
        guard error == 0 else {
            self.closeSocket()
            self.worker.connectFailed(self)
            return
        }
        var one: Int32 = 1
        setsockopt(self.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if let context = self.worker.tls {
            do {
                let session = try TLSSession(context: context, fd: self.fd, host: self.worker.host)
                if self.worker.resumeSessions, let resumption = self.worker.resumption { session.offer(resumption) }
                self.session = session
            } catch {
                self.closeSocket()
                self.worker.connectFailed(self)
                return
            }
            self.state = .handshaking
            self.handshake()
            return
        }
        self.opened()
    }

    private func handshake() {
        guard let session = self.session else { return }
        do {
            switch try session.handshake() {
            case .done:
                if session.resumed { self.worker.statistics.tlsResumed += 1 }
                self.opened()
            case .wantRead: self.setInterest(.read)
            case .wantWrite: self.setInterest(.write)
            }
        } catch {
            self.closeSocket()
            self.worker.connectFailed(self)
        }
    }

    private func opened() {
        self.state = .open
        self.carriedRequest = false
        self.carriedResponse = false
        self.inFlight = 0
        self.ringStart = 0
        self.writeOffset = 0
        self.writeEnd = 0
        llhttp_init(self.parser, HTTP_RESPONSE, self.worker.settings)
        self.parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        self.worker.statistics.connectionsOpened += 1
        self.setInterest(.read)
        self.fill(now: LoadClock.now())
    }

    /// Whether the connection is stuck: its oldest request is older than the timeout, or it
    /// has been connecting for longer than the connect timeout.
    func isOverdue(now: UInt64) -> Bool {
        switch self.state {
        case .connecting, .handshaking:
            return now &- self.connectStarted > self.worker.connectTimeoutNanoseconds
        case .open:
            return self.inFlight > 0 && now &- self.sendTimes[self.ringStart] > self.worker.timeoutNanoseconds
        case .closed:
            return false
        }
    }

    // MARK: Sending

    /// Sends as many requests as the pipeline depth, the budget and (in rate mode) the
    /// schedule allow.
    func fill(now: UInt64) {
        guard self.state == .open else { return }
        var count = 0
        if let interval = self.worker.rateInterval {
            guard self.inFlight == 0, !self.waitingForDue else { return }
            if self.nextDue == 0 { self.nextDue = now &+ self.worker.initialOffset(interval) }
            if self.nextDue > now {
                // Early: wait for the request's turn.
                self.waitingForDue = true
                self.worker.loop.scheduleTimer(at: Deadline(nanoseconds: self.nextDue), target: self, token: self.nextDue)
                return
            }
            guard self.worker.takeBudget(1) == 1 else { return }
            // Latency counts from when the request was due, however late it goes out.
            self.sendTimes[(self.ringStart + self.inFlight) % self.worker.depth] = self.nextDue
            self.inFlight += 1
            self.nextDue &+= interval
            count = 1
        } else {
            let room = self.worker.depth - self.inFlight
            guard room > 0 else { return }
            count = self.worker.takeBudget(room)
            guard count > 0 else { return }
            for i in 0..<count {
                self.sendTimes[(self.ringStart + self.inFlight + i) % self.worker.depth] = now
            }
            self.inFlight += count
        }
        if self.carriedRequest { self.worker.statistics.connectionsReused += count } else {
            self.worker.statistics.connectionsReused += count - 1
            self.carriedRequest = true
        }
        let length = self.worker.requestLength
        if self.writeOffset == self.writeEnd {
            self.writeOffset = 0
            self.writeEnd = count * length
        } else {
            // The buffer repeats the request, so the unwritten rest starts as well at the
            // same offset within the first copy.
            let pending = self.writeEnd - self.writeOffset
            self.writeOffset %= length
            self.writeEnd = self.writeOffset + pending + count * length
        }
        self.flush()
    }

    private func flush() {
        if self.session != nil {
            self.flushTLS()
            return
        }
        let buffer = self.worker.requestBuffer
        while self.writeOffset < self.writeEnd {
            let n = salvo_send(self.fd, buffer + self.writeOffset, self.writeEnd - self.writeOffset)
            if n > 0 {
                self.writeOffset += n
                continue
            }
            let err = salvo_errno()
            if n < 0 && err == EINTR { continue }
            if n < 0 && (err == EAGAIN || err == EWOULDBLOCK) {
                self.setInterest([.read, .write])
                return
            }
            self.worker.statistics.errors.write += 1
            self.reconnect()
            return
        }
        self.writeOffset = 0
        self.writeEnd = 0
        if self.interest != .read { self.setInterest(.read) }
    }

    // MARK: Receiving

    func ready(events: UInt32) {
        switch self.state {
        case .connecting:
            self.connected()
        case .handshaking:
            self.handshake()
        case .open:
            if events & salvo_EPOLLOUT != 0 { self.flush() }
            if self.state == .open, events & (salvo_EPOLLIN | salvo_EPOLLRDHUP | salvo_EPOLLHUP | salvo_EPOLLERR) != 0 {
                self.readable()
            }
        case .closed:
            break
        }
    }

    private func flushTLS() {
        guard let session = self.session else { return }
        let buffer = self.worker.requestBuffer
        while self.writeOffset < self.writeEnd {
            let result = session.write(UnsafeRawBufferPointer(start: buffer + self.writeOffset, count: self.writeEnd - self.writeOffset))
            if result.error != nil {
                self.worker.statistics.errors.write += 1
                self.reconnect()
                return
            }
            if result.written > 0 {
                self.writeOffset += result.written
                continue
            }
            self.setInterest(result.progress == .wantRead ? .read : [.read, .write])
            return
        }
        self.writeOffset = 0
        self.writeEnd = 0
        if self.interest != .read { self.setInterest(.read) }
    }

    /// Parses `n` bytes just read and sends what the answered requests make room for.
    /// Returns false when the connection was replaced (a parse error, or no keep-alive).
    @inline(__always)
    private func consume(_ buffer: UnsafeMutableRawBufferPointer, _ n: Int) -> Bool {
        self.worker.statistics.bytesRead += n
        self.readTime = LoadClock.now()
        let before = self.inFlight
        let rc = llhttp_execute(self.parser, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), n)
        if rc != HPE_OK {
            self.worker.statistics.errors.protocol += 1
            self.reconnect()
            return false
        }
        if self.mustReconnect {
            self.reconnect()
            return false
        }
        if self.inFlight < before { self.fill(now: self.readTime) }
        return true
    }

    /// Reads through TLS until OpenSSL wants the socket again.
    private func readableTLS() {
        guard let session = self.session else { return }
        let buffer = self.worker.loop.readBuffer
        while self.state == .open {
            switch session.read(into: buffer) {
            case .bytes(let n):
                guard self.consume(buffer, n) else { return }
                if n < buffer.count && !session.hasBufferedBytes { return }
            case .wantRead:
                return
            case .wantWrite:
                self.setInterest([.read, .write])
                return
            case .closed, .uncleanEOF:
                self.readTime = LoadClock.now()
                _ = llhttp_finish(self.parser)
                if self.inFlight > 0 { self.worker.statistics.errors.read += 1 }
                self.reconnect()
                return
            case .failed:
                self.worker.statistics.errors.read += 1
                self.reconnect()
                return
            }
        }
    }

    private func readable() {
        if self.session != nil {
            self.readableTLS()
            return
        }
        let buffer = self.worker.loop.readBuffer
        while true {
            let n = Glibc.read(self.fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                guard self.consume(buffer, n) else { return }
                if n < buffer.count { return }
                continue
            }
            if n == 0 {
                // The server closed: a close-delimited response may end here.
                self.readTime = LoadClock.now()
                _ = llhttp_finish(self.parser)
                if self.inFlight > 0 { self.worker.statistics.errors.read += 1 }
                self.reconnect()
                return
            }
            let err = salvo_errno()
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return }
            self.worker.statistics.errors.read += 1
            self.reconnect()
            return
        }
    }

    /// Called by the parser callback for each final response.
    @inline(__always)
    func responseCompleted(keepAlive: Bool) {
        guard self.inFlight > 0 else {
            // A response nobody asked for: the connection is out of step.
            self.worker.statistics.errors.protocol += 1
            self.mustReconnect = true
            return
        }
        if !self.carriedResponse {
            self.carriedResponse = true
            // After the first response a TLS 1.3 server has sent its ticket: keep it.
            if self.worker.resumeSessions, let session = self.session, let resumption = session.resumption() {
                self.worker.resumption = resumption
            }
        }
        let sent = self.sendTimes[self.ringStart]
        self.ringStart = (self.ringStart + 1) % self.worker.depth
        self.inFlight -= 1
        self.worker.record(status: self.status, latencyNanoseconds: self.readTime &- sent)
        if !keepAlive { self.mustReconnect = true }
    }

    // MARK: Timers and closing

    func timerIsCurrent(token: UInt64) -> Bool {
        self.waitingForDue && token == self.nextDue
    }

    func timerFired(token: UInt64, now: Deadline) {
        guard self.waitingForDue, token == self.nextDue else { return }
        self.waitingForDue = false
        self.fill(now: LoadClock.now())
    }

    /// Drops the connection (requests in flight are abandoned) and starts a new one,
    /// unless the run is over.
    func reconnect() {
        self.closeSocket()
        // Requests that got no response go back to the budget: -n counts responses.
        self.worker.returnBudget(self.inFlight)
        self.inFlight = 0
        self.ringStart = 0
        self.mustReconnect = false
        self.waitingForDue = false
        self.worker.connectionClosed(self)
    }

    func close() {
        self.closeSocket()
    }

    private func setInterest(_ interest: IOInterest) {
        guard interest != self.interest, self.fd >= 0 else { return }
        self.interest = interest
        try? self.worker.loop.reregister(self.fd, token: self.token, interest: interest)
    }

    private func closeSocket() {
        guard self.fd >= 0 else { return }
        if let session = self.session {
            if self.state == .open { session.shutdown() }
            self.session = nil
        }
        if self.token != 0 {
            self.worker.loop.deregister(self.fd, token: self.token)
            self.token = 0
        }
        Glibc.close(self.fd)
        self.fd = -1
        self.interest = .none
        self.state = .closed
        self.writeOffset = 0
        self.writeEnd = 0
    }
}

/// The monotonic clock in nanoseconds, read fresh (not the loop's cached time): latency
/// needs the moment the bytes arrived.
enum LoadClock {
    @inline(__always)
    static func now() -> UInt64 { Deadline.now().nanoseconds }
}
