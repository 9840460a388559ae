import CLLHTTP
import CSalvo
import SalvoCore
import SalvoTransport
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
/// Stored properties are `@exclusivity(unchecked)`, as the engine's loop-confined objects':
/// one thread touches them, and no access spans a call that could reach them again.
final class LoadConnection: Selectable, TimerTarget {
    enum State { case closed, connecting, open }

    unowned let worker: LoadWorker
    @exclusivity(unchecked) private(set) var state: State = .closed
    /// The engine's socket seam: plain or TLS, the same calls (see ``Socket``).
    @exclusivity(unchecked) private var socket = Socket.none
    @exclusivity(unchecked) private var connector: SocketConnector?

    let parser: UnsafeMutablePointer<llhttp_t>
    /// The parser's callbacks, and (a scripted run) those that also hand over a head's fields
    /// piece by piece: the worker's, kept here so that switching costs no visit to it.
    let parserSettings: UnsafeMutablePointer<llhttp_settings_t>
    let fieldSettings: UnsafeMutablePointer<llhttp_settings_t>?
    /// Send times (ns) of the requests in flight, oldest first.
    let sendTimes: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) var ringStart = 0
    @exclusivity(unchecked) var inFlight = 0
    /// Where the requests are written from: the worker's request buffer, or a scripted
    /// user's own (see `LoadConnection+Script.swift`).
    @exclusivity(unchecked) var writeBase: UnsafeRawPointer
    /// Bytes of the current write batch, as a range from `writeBase`.
    @exclusivity(unchecked) var writeOffset = 0
    @exclusivity(unchecked) var writeEnd = 0
    /// Whether a request already went over this connection (for the reuse count).
    @exclusivity(unchecked) var carriedRequest = false
    /// Whether a response came over this connection (to take its TLS session once).
    @exclusivity(unchecked) private var carriedResponse = false
    /// Set by the parser callbacks during one read.
    @exclusivity(unchecked) var status = 0
    @exclusivity(unchecked) var mustReconnect = false
    /// The clock reading for the responses of the current read.
    @exclusivity(unchecked) var readTime: UInt64 = 0
    /// Rate mode: when this connection's next request is due (ns); for a scripted user
    /// thinking between calls, when its next call may go.
    @exclusivity(unchecked) var nextDue: UInt64 = 0
    @exclusivity(unchecked) var waitingForDue = false
    @exclusivity(unchecked) private var connectStarted: UInt64 = 0
    /// HTTP/2: the session, while the connection is open (see `LoadHTTP2Session`).
    @exclusivity(unchecked) private(set) var http2: LoadHTTP2Session?
    /// HTTP/2: when a response last ended (streams end out of order: no ring of send times).
    @exclusivity(unchecked) var lastProgress: UInt64 = 0
    /// A scripted run: this connection's virtual user, and what the parser keeps of the
    /// response in flight for its checks — its fields, its body (up to the run's limit) and
    /// the body's whole length.
    let script: VirtualUser?
    /// (In memory of its own: changed three times a field, a class's stored property would
    /// be checked for exclusive access each time.)
    let responseFields: UnsafeMutablePointer<FieldRecords>
    let responseBody: ScriptBuffer?
    @exclusivity(unchecked) var responseBodyCount = 0
    @exclusivity(unchecked) var keepsResponseBody = false
    /// The fields of the response in flight its user reads: only those are recorded.
    @exclusivity(unchecked) var fieldSelection = FieldSelection.none
    /// A scripted run reads each head in one pass once llhttp has accepted it: the current
    /// read's bytes, how many messages ended in it, whether the message being parsed began
    /// with it (its head is walked, not handed over in pieces), and what earlier reads held
    /// of a head that spans several.
    @exclusivity(unchecked) var readStart: UnsafeRawPointer?
    @exclusivity(unchecked) var readEnd: UnsafeRawPointer?
    @exclusivity(unchecked) var messagesThisRead = 0
    @exclusivity(unchecked) var walkingHead = false
    let headCarry: ScriptBuffer?
    /// Whether the request in flight is a HEAD (its response has no body).
    @exclusivity(unchecked) var requestIsHead: Bool
    /// A scripted run over HTTP/2: the server refused the last call unprocessed
    /// (REFUSED_STREAM, or a GOAWAY below it), and it goes again as it was built.
    @exclusivity(unchecked) var resendsCall = false

    init(worker: LoadWorker, settings: UnsafeMutablePointer<llhttp_settings_t>, script: VirtualUser? = nil) {
        self.worker = worker
        self.script = script
        self.responseBody = script == nil ? nil : ScriptBuffer(capacity: 4096)
        self.headCarry = script == nil ? nil : ScriptBuffer(capacity: 64)
        self.responseFields = .allocate(capacity: 1)
        self.responseFields.initialize(to: FieldRecords())
        self.requestIsHead = worker.isHead
        self.writeBase = UnsafeRawPointer(worker.requestBuffer)
        self.parser = .allocate(capacity: 1)
        self.parserSettings = settings
        self.fieldSettings = worker.fieldSettings
        self.sendTimes = .allocate(capacity: worker.depth)
        llhttp_init(self.parser, HTTP_RESPONSE, settings)
        self.parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        self.responseFields.deinitialize(count: 1)
        self.responseFields.deallocate()
        self.parser.deallocate()
        self.sendTimes.deallocate()
    }

    // MARK: Connecting

    func connect(now: UInt64) {
        self.connectStarted = now
        self.state = .connecting
        var connector = SocketConnector(
            host: self.worker.host, port: self.worker.port, tls: self.worker.tls,
            resumption: self.worker.resumeSessions ? self.worker.resumption : nil, deadline: .distantFuture,
            proxy: self.worker.proxy, applicationProtocols: self.worker.http2 == nil ? nil : ["h2"])
        let step = connector.connect(to: [self.worker.address], loop: self.worker.loop, target: self)
        self.connector = connector
        self.connectorStepped(step)
    }

    private func connectorStepped(_ step: SocketConnector.Step) {
        switch step {
        case .pending:
            break
        case .opened(let socket):
            self.connector = nil
            self.socket = socket
            if socket.tls?.resumed == true { self.worker.statistics.tlsResumed += 1 }
            self.opened()
        case .failed:
            self.connector = nil
            self.state = .closed
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
        llhttp_init(self.parser, HTTP_RESPONSE, self.parserSettings)
        self.parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        self.walkingHead = false
        self.headCarry?.count = 0
        if let block = self.worker.http2 {
            // Over TLS the server must have chosen h2 (the only protocol offered).
            if let tls = self.socket.tls, tls.negotiatedProtocol != "h2" {
                self.worker.statistics.errors.protocol += 1
                self.closeSocket()
                self.worker.connectFailed(self)
                return
            }
            do {
                self.http2 = try LoadHTTP2Session(connection: self, block: block, body: self.worker.body, maxStreams: self.worker.depth)
            } catch {
                self.closeSocket()
                self.worker.connectFailed(self)
                return
            }
            self.lastProgress = LoadClock.now()
        }
        self.worker.statistics.connectionsOpened += 1
        self.socket.setInterest(.read, on: self.worker.loop)
        self.fill(now: LoadClock.now())
    }

    /// Whether the connection is stuck: its oldest request is older than the timeout, or it
    /// has been connecting for longer than the connect timeout.
    func isOverdue(now: UInt64) -> Bool {
        switch self.state {
        case .connecting:
            return now &- self.connectStarted > self.worker.connectTimeoutNanoseconds
        case .open:
            if self.http2 != nil { return self.inFlight > 0 && now &- self.lastProgress > self.worker.timeoutNanoseconds }
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
        if let script = self.script { return self.fillScripted(now: now, script: script) }
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
            if let http2 = self.http2 {
                if self.inFlight == 0 { self.lastProgress = now }
                guard http2.submit(sentAt: self.nextDue) else { return self.streamRefused(1) }
            }
            self.sendTimes[(self.ringStart + self.inFlight) % self.worker.depth] = self.nextDue
            self.inFlight += 1
            self.nextDue &+= interval
            count = 1
        } else {
            let room = self.worker.depth - self.inFlight
            guard room > 0 else { return }
            if let http2 = self.http2, !http2.acceptsStreams {
                // The server is going away: its streams finish, then a new connection carries on.
                if self.inFlight == 0 { self.reconnect() }
                return
            }
            count = self.worker.takeBudget(room)
            guard count > 0 else { return }
            if let http2 = self.http2 {
                // Overdue counts from the last response, or from now for a connection that
                // had none in flight.
                if self.inFlight == 0 { self.lastProgress = now }
                for i in 0..<count where !http2.submit(sentAt: now) {
                    self.inFlight += i
                    return self.streamRefused(count - i)
                }
            }
            for i in 0..<count where self.http2 == nil {
                self.sendTimes[(self.ringStart + self.inFlight + i) % self.worker.depth] = now
            }
            self.inFlight += count
        }
        if self.carriedRequest { self.worker.statistics.connectionsReused += count } else {
            self.worker.statistics.connectionsReused += count - 1
            self.carriedRequest = true
        }
        if self.http2 != nil {
            self.flush()
            return
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

    func flush() {
        if let http2 = self.http2 {
            switch http2.flush(to: self.socket) {
            case .done:
                if self.socket.interest != .read { self.socket.setInterest(.read, on: self.worker.loop) }
            case .blocked(let wantsRead):
                self.socket.setInterest(wantsRead ? .read : [.read, .write], on: self.worker.loop)
            case .failed:
                self.worker.statistics.errors.write += 1
                self.reconnect()
            }
            return
        }
        let buffer = self.writeBase
        while self.writeOffset < self.writeEnd {
            switch self.socket.write(UnsafeRawBufferPointer(start: buffer + self.writeOffset, count: self.writeEnd - self.writeOffset)) {
            case .wrote(let count):
                self.writeOffset += count
            case .wouldBlock(let wantsRead):
                self.socket.setInterest(wantsRead ? .read : [.read, .write], on: self.worker.loop)
                return
            case .failed:
                self.worker.statistics.errors.write += 1
                self.reconnect()
                return
            }
        }
        self.writeOffset = 0
        self.writeEnd = 0
        if self.socket.interest != .read { self.socket.setInterest(.read, on: self.worker.loop) }
    }

    // MARK: Receiving

    func ready(events: UInt32) {
        switch self.state {
        case .connecting:
            guard var connector = self.connector else { return }
            let step = connector.ready(loop: self.worker.loop, target: self)
            self.connector = connector
            self.connectorStepped(step)
        case .open:
            if events & salvo_EPOLLOUT != 0 { self.flush() }
            // Also when TLS holds records read ahead, which epoll does not see (a read that had
            // to write first stopped there).
            if self.state == .open, events & (salvo_EPOLLIN | salvo_EPOLLRDHUP | salvo_EPOLLHUP | salvo_EPOLLERR) != 0
                || !self.socket.drainedByShortRead {
                self.readable()
            }
        case .closed:
            break
        }
    }

    /// Parses `n` bytes just read and sends what the answered requests make room for.
    /// Returns false when the connection was replaced (a parse error, or no keep-alive).
    @inline(__always)
    private func consume(_ buffer: UnsafeMutableRawBufferPointer, _ n: Int) -> Bool {
        self.worker.statistics.bytesRead += n
        self.readTime = LoadClock.now()
        let before = self.inFlight
        if let http2 = self.http2 {
            // New requests and the session's answers go out once the reads are done
            // (``http2ReadsDone()``): a TLS read hands over one record, often one response,
            // and a write per record would be a send per request.
            guard http2.receive(UnsafeRawBufferPointer(start: buffer.baseAddress, count: n)) else {
                self.worker.statistics.errors.protocol += 1
                self.reconnect()
                return false
            }
            return self.state == .open
        }
        if self.script != nil {
            self.readStart = UnsafeRawPointer(buffer.baseAddress!)
            self.readEnd = self.readStart! + n
            self.messagesThisRead = 0
        }
        var rc = llhttp_execute(self.parser, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), n)
        if rc == HPE_OK, self.walkingHead, !self.carryHead() { rc = HPE_USER }
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

    /// Reads until the socket has nothing more (a short read drains a plain socket; TLS may
    /// hold decrypted bytes, so there only `wouldBlock` ends the loop).
    private func readable() {
        let buffer = self.worker.loop.readBuffer
        defer { if self.http2 != nil, self.state == .open { self.http2ReadsDone() } }
        while self.state == .open {
            switch self.socket.read(into: buffer) {
            case .bytes(let count):
                guard self.consume(buffer, count) else { return }
                if count < buffer.count && self.socket.drainedByShortRead { return }
            case .wouldBlock(let wantsWrite):
                if wantsWrite { self.socket.setInterest([.read, .write], on: self.worker.loop) }
                return
            case .closed:
                // The server closed: a close-delimited response may end here.
                self.readTime = LoadClock.now()
                if self.http2 == nil { _ = llhttp_finish(self.parser) }
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

    /// The parser's callbacks, on the connection they are for: borrowed, no count taken.
    @inline(__always)
    static func borrowed(_ parser: UnsafeMutablePointer<llhttp_t>?, _ body: (LoadConnection) -> Int32) -> Int32 {
        Unmanaged<LoadConnection>.fromOpaque(parser!.pointee.data)._withUnsafeGuaranteedRef(body)
    }

    /// A head has been parsed (llhttp's `on_headers_complete`): what llhttp should do with
    /// its body.
    @inline(__always)
    func headersCompleted() -> Int32 {
        let status = Int(self.parser.pointee.status_code)
        self.status = status
        if status == 101 { return -1 }
        if self.script != nil, !self.scriptedHeadCompleted() { return -1 }
        // 1 skips the body a HEAD answer announces; 1xx, 204 and 304 never have one.
        return self.requestIsHead || status == 204 || status == 304 ? 1 : 0
    }

    /// A message has ended (llhttp's `on_message_complete`): an interim response, or the
    /// answer to the oldest request in flight.
    @inline(__always)
    func messageCompleted(keepAlive: Bool) {
        self.messagesThisRead &+= 1
        if self.status >= 200 { self.responseCompleted(keepAlive: keepAlive) }
    }

    /// Called for each final response.
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
            if self.worker.resumeSessions, let session = self.socket.tls, let resumption = session.resumption() {
                self.worker.resumption = resumption
            }
        }
        let sent = self.sendTimes[self.ringStart]
        self.ringStart = (self.ringStart + 1) % self.worker.depth
        self.inFlight -= 1
        if let script = self.script { self.deliver(to: script, sentAt: sent) }
        self.worker.record(status: self.status, latencyNanoseconds: self.readTime &- sent)
        if !keepAlive { self.mustReconnect = true }
    }

    /// HTTP/2: a stream ended — with its response's `status`, or nil when it was reset.
    @inline(__always)
    func http2StreamClosed(status: Int?, sentAt: UInt64) {
        guard self.inFlight > 0 else { return }
        self.inFlight -= 1
        self.lastProgress = self.readTime
        if let status {
            if let script = self.script {
                self.status = status
                self.deliver(to: script, sentAt: sentAt)
            }
            self.worker.record(status: status, latencyNanoseconds: self.readTime &- sentAt)
        } else {
            // Reset before its response ended: an error, and not a response — the request goes
            // back to the budget, as a broken connection's do (-n counts responses).
            if let script = self.script { script.abandoned() }
            self.worker.statistics.errors.read += 1
            self.worker.returnBudget(1)
        }
    }

    /// HTTP/2: what the reads of one wake-up answered makes room for new requests, sent with
    /// the session's own answers (SETTINGS and PING acknowledgements, window updates) in one go.
    private func http2ReadsDone() {
        self.fill(now: self.readTime)
        if self.state == .open && self.http2 != nil { self.flush() }
        if self.state == .open, let http2 = self.http2, !http2.isAlive {
            // GOAWAY (or the session's own end): a new connection carries on.
            self.reconnect()
        }
    }

    /// HTTP/2: the server refused a stream it never processed (above its GOAWAY's last
    /// stream, or REFUSED_STREAM): the request goes back to the budget, not counted as an error.
    func http2StreamRefused() {
        guard self.inFlight > 0 else { return }
        self.inFlight -= 1
        self.worker.returnBudget(1)
        // A scripted call goes again as it was built (its user's code does not run twice).
        if self.script != nil { self.resendsCall = true }
    }

    /// HTTP/2: the session took no new stream (the server went away): the requests not
    /// started go back, and a new connection carries on.
    private func streamRefused(_ notStarted: Int) {
        self.worker.returnBudget(notStarted)
        self.reconnect()
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
        // A scripted call that gets no answer fails its checks (as a response that never came).
        if self.inFlight > 0, let script = self.script { script.abandoned() }
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

    private func closeSocket() {
        if var connector = self.connector {
            connector.abandon(loop: self.worker.loop)
            self.connector = nil
        }
        self.socket.close(on: self.worker.loop)
        self.http2 = nil
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
