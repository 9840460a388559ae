@_spi(Benchmarks) import SalvoTransport
import CSalvo
import HTTPTypes

/// One connection speaking HTTP/2, driven by its event loop: many requests at once, each on a
/// stream of its own (``HTTP2Stream``).
///
/// It begins as an ``HTTP1Connection`` — the same resolver, connector, proxy tunnel and TLS
/// handshake — which hands its open socket over when ALPN chose `h2` (or the request asked for
/// HTTP/2 with prior knowledge over cleartext). From there this class owns the socket and an
/// ``HTTP2Session`` (nghttp2, without I/O of its own): bytes read go into the session, what the
/// session has to send goes out as the socket takes it, and what happened on each stream goes
/// to that stream's request owner — head, body, end, or how it broke. Like the HTTP/1.1
/// connection it decides nothing about a request: a stream the server refused unprocessed is
/// reported so (``ExchangeFacts/refusedUnprocessed``), and the owner decides whether it goes
/// again. The pool hears first that a stream's place is free, then the owner of its end.
///
/// Its timer covers every stream's deadlines (total, head, read) and the connection's own:
/// the idle timeout, and a PING after ``HTTP2Settings/pingInterval`` without a byte from the
/// server (idle or not), its answer due
/// within ``HTTP2Settings/pingTimeout``.
///
/// Loop-confined: every method runs on `loop`'s thread. Stored properties are
/// `@exclusivity(unchecked)`: touched by the loop's thread only, and no access spans a call that
/// could reach it again.
final class HTTP2Connection: Selectable, TimerTarget {
    let id: Int
    let key: ConnectionKey
    /// Not counted: the connection's methods run on its loop's thread, inside that loop's
    /// `run()`, which keeps the loop alive throughout (as for ``HTTP1Connection``).
    unowned(unsafe) let loop: EventLoop
    unowned let pool: HostPool
    let endpoints: ConnectionEndpoints
    @exclusivity(unchecked) private var socket: Socket
    private let session: HTTP2Session
    private let settings: HTTP2Settings
    private let idleTimeout: Duration
    /// How the connection was set up, for the metrics of its first stream.
    private let setup: ConnectionSetup
    /// Whether the observer heard this connection open (so that it hears it close).
    let reportedOpen: Bool

    /// The streams under way, by id.
    @exclusivity(unchecked) private(set) var streams: [Int32: HTTP2Stream] = [:]
    /// How many streams the server allows at once (its SETTINGS_MAX_CONCURRENT_STREAMS; 100
    /// until it says, as RFC 9113 §6.5.2 suggests as a floor).
    @exclusivity(unchecked) private(set) var maxStreams = 100
    /// Streams started on this connection so far.
    @exclusivity(unchecked) private(set) var streamsStarted = 0
    /// The server sent GOAWAY, or the client is closing: no new stream starts here.
    @exclusivity(unchecked) private(set) var goingAway = false
    @exclusivity(unchecked) private(set) var isClosed = false
    /// The server closed or reset the connection (for the pool's counters).
    @exclusivity(unchecked) private(set) var closedByPeer = false
    /// Bytes the session made that the socket has not taken yet, from `outputOffset`.
    @exclusivity(unchecked) private var output: [UInt8] = []
    @exclusivity(unchecked) private var outputOffset = 0
    /// Set while events are being handled: a nested flush only notes that it is needed.
    @exclusivity(unchecked) private var flushing = false
    /// Set while the socket is being read: what the reads make (window updates, the requests
    /// their completions start) goes out in one write at the end, not one per TLS record.
    @exclusivity(unchecked) private var batchingWrites = false
    @exclusivity(unchecked) private var flushAgain = false
    /// When a byte last came in: a PING is due after a quiet interval.
    @exclusivity(unchecked) private var lastHeard: Deadline
    /// When the connection last carried no stream: the idle timeout counts from there (PINGs
    /// and their answers do not make a connection busy).
    @exclusivity(unchecked) private var idleSince: Deadline
    /// When the unanswered PING went out.
    @exclusivity(unchecked) private var pingSentAt: Deadline?
    /// The one timer relied on, armed for the earliest deadline of any stream or of the connection.
    @exclusivity(unchecked) private var timer = ArmedTimer()

    init(id: Int, key: ConnectionKey, loop: EventLoop, pool: HostPool, socket: Socket, endpoints: ConnectionEndpoints,
         setup: ConnectionSetup, reportedOpen: Bool, settings: HTTP2Settings, idleTimeout: Duration) throws(TransportError) {
        self.id = id
        self.key = key
        self.loop = loop
        self.pool = pool
        self.socket = socket
        self.endpoints = endpoints
        self.setup = setup
        self.reportedOpen = reportedOpen
        self.settings = settings
        self.idleTimeout = idleTimeout
        self.lastHeard = loop.now
        self.idleSince = loop.now
        self.session = try HTTP2Session(settings: settings)
    }

    /// Takes the socket over from the loop's point of view and sends the connection preface.
    func start() throws(TransportError) {
        do {
            try self.socket.register(on: self.loop, target: self, interest: .read)
        } catch {
            throw TransportError(.connectFailed, host: self.key.host, phase: .connect, detail: "cannot watch the socket: \(error)")
        }
        self.flush()
        self.rearm()
    }

    /// Whether another stream may start here now (not after a GOAWAY, even one still being
    /// handled: the session has seen it).
    var hasRoom: Bool {
        !self.isGoingAway && self.streams.count < self.maxStreams
    }

    /// Whether no new stream will ever start here (closed, or told to go away).
    var isGoingAway: Bool {
        self.goingAway || self.isClosed || self.session.isGoingAway
    }

    // MARK: Requests

    /// Starts `owner`'s request on a new stream (the pool checked ``hasRoom``).
    func run(_ owner: RequestOwner) {
        let now = self.loop.now
        let reused = self.streamsStarted > 0
        let stream = HTTP2Stream(connection: self, owner: owner, reusedConnection: reused, now: now)
        self.streamsStarted += 1
        owner.connectionTook(stream, reused: reused, fromIdle: reused, setup: reused ? nil : self.setup, at: now)
        guard let block = HTTP2HeaderBlock(encodedHead: owner.head, scheme: self.key.scheme.rawValue, authority: self.key.authority) else {
            owner.exchangeFailed(TransportError(.invalidRequest, phase: .request, detail: "the request head has no HTTP/2 form"),
                                 facts: stream.facts(closedByPeer: false))
            return
        }
        let body: HTTP2Session.RequestBody?
        if let source = owner.stream {
            body = .streamed
            stream.body = StreamedBody(loop: self.loop, length: source.length, connection: stream, chunked: false)
        } else if !owner.body.isEmpty {
            body = .bytes(owner.body)
            stream.bytesSent += owner.body.count
        } else {
            body = nil
        }
        do {
            stream.id = try self.session.submit(block, body: body)
        } catch {
            stream.body?.cancel(.requestEnded)
            let refused = error.code == .remoteClosed
            if refused {
                // The server went away (or the stream ids ran out): nothing new starts here,
                // and this request, never sent, may go elsewhere — its owner decides.
                self.goingAway = true
                self.pool.connectionGoingAway(self)
            }
            owner.exchangeFailed(error, facts: stream.facts(closedByPeer: false, refused: refused))
            self.closeIfDone()
            return
        }
        stream.bytesSent += block.storage.count + 9
        owner.metrics.streamID = Int(stream.id)
        owner.metrics.concurrentRequests = self.streams.count
        self.streams[stream.id] = stream
        // Told once the stream is in place: whatever the caller does from there (cancel) finds it.
        owner.connectionStarted(on: stream, reused: reused)
        guard self.streams[stream.id] === stream else { return }
        if let source = owner.stream, let streamed = stream.body {
            streamed.start(source.produce)
        }
        self.flush()
        self.rearm()
    }

    /// The stream's producer queued data, finished or failed.
    func bodyChanged(_ stream: HTTP2Stream) {
        guard self.streams[stream.id] === stream else { return }
        self.feedBody(of: stream)
        self.flush()
        self.rearm()
    }

    /// Hands what the producer queued to the session, when the session has sent all it had.
    private func feedBody(of stream: HTTP2Stream) {
        guard let body = stream.body, stream.bodyWanted, !stream.bodyHandedOver else { return }
        if let failure = body.failure {
            self.failStream(stream, error: failure, reset: true)
            return
        }
        var bytes: [UInt8] = []
        while let front = body.front {
            let rest = front.count - body.frontOffset
            bytes += front[body.frontOffset...]
            body.consumed(rest)
        }
        if !bytes.isEmpty {
            stream.bodyWanted = false
            stream.bytesSent += bytes.count
            self.session.provide(bytes, to: stream.id)
        }
        // Every byte handed over, and the producer ended well — or every announced byte, its
        // producer not ended yet: the stream ends now (as HTTP/1.1 sends an announced length
        // and reads the answer), so a producer that never returns holds nothing up.
        if body.isComplete || body.isSent {
            stream.bodyWanted = false
            stream.bodyHandedOver = true
            self.session.finishBody(of: stream.id)
        }
    }

    /// The caller wants more of a paused body: the stream's window opens by what it took.
    func resumeStream(_ stream: HTTP2Stream) {
        guard self.streams[stream.id] === stream, stream.paused else { return }
        stream.paused = false
        stream.lastActivity = self.loop.now
        self.session.consume(stream.unconsumed, of: stream.id)
        stream.unconsumed = 0
        self.flush()
        self.rearm()
    }

    /// Ends `stream` with `error`: reset (`reset`) when the server should stop sending it.
    func failStream(_ stream: HTTP2Stream, error: TransportError, reset: Bool, closedByPeer: Bool = false, refused: Bool = false) {
        guard self.streams[stream.id] === stream else { return }
        self.streams[stream.id] = nil
        stream.body?.cancel(.requestEnded)
        if reset, !self.isClosed { self.session.cancel(streamID: stream.id) }
        if self.streams.isEmpty { self.idleSince = self.loop.now }
        self.pool.streamEnded(on: self)
        stream.owner.exchangeFailed(error, facts: stream.facts(closedByPeer: closedByPeer, refused: refused))
        self.flush()
        self.rearm()
        self.closeIfDone()
    }

    // MARK: Events

    func ready(events: UInt32) {
        defer { self.rearm() }
        guard !self.isClosed else { return }
        if events & salvo_EPOLLOUT != 0 { self.flush() }
        guard events & (salvo_EPOLLIN | salvo_EPOLLRDHUP | salvo_EPOLLHUP | salvo_EPOLLERR) != 0
                || !self.socket.drainedByShortRead else { return }
        self.readable()
    }

    private func readable() {
        let buffer = self.loop.readBuffer
        self.batchingWrites = true
        defer {
            self.batchingWrites = false
            if !self.isClosed { self.flush() }
        }
        while !self.isClosed {
            switch self.socket.read(into: buffer) {
            case .bytes(let count):
                // Any byte says the peer is alive: an unanswered PING is answered enough.
                self.lastHeard = self.loop.now
                self.pingSentAt = nil
                let events: [HTTP2Session.Event]
                do {
                    events = try self.session.receive(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
                } catch {
                    // nghttp2 queued a GOAWAY saying why: it goes out before the close.
                    self.batchingWrites = false
                    self.flush()
                    self.connectionFailed(TransportError(.http2ProtocolError, phase: self.phase, detail: error.detail))
                    return
                }
                self.handle(events)
                if count < buffer.count && self.socket.drainedByShortRead { return }
            case .wouldBlock(let wantsWrite):
                if wantsWrite { self.socket.setInterest([.read, .write], on: self.loop) }
                return
            case .closed:
                self.closedByPeer = true
                self.connectionFailed(TransportError(self.streams.isEmpty ? .remoteClosed : .readFailed, phase: self.phase,
                                                     detail: "the server closed the HTTP/2 connection"), closedByPeer: true)
                return
            case .failed(let errno, let detail):
                self.closedByPeer = true
                self.connectionFailed(TransportError(.readFailed, phase: self.phase, errno: errno == 0 ? nil : errno, detail: detail),
                                      closedByPeer: true)
                return
            }
        }
    }

    /// The phase a connection-wide failure is reported in: reading the head while any stream
    /// still waits for one.
    private var phase: TransportError.Phase {
        self.streams.values.contains { !$0.headReceived } ? .readHead : .readBody
    }

    /// Writes what the session has to send while the socket takes it; handles the events
    /// writing made (a body asking for more, a stream the session reset).
    func flush() {
        if self.batchingWrites { return }
        if self.flushing {
            self.flushAgain = true
            return
        }
        self.flushing = true
        defer { self.flushing = false }
        repeat {
            self.flushAgain = false
            while !self.isClosed {
                if self.outputOffset == self.output.count {
                    self.output = self.session.output()
                    self.outputOffset = 0
                    let events = self.session.drainEvents()
                    if !events.isEmpty { self.handle(events) }
                    if self.output.isEmpty { break }
                }
                let result = self.output.withUnsafeBytes { bytes in
                    self.socket.write(UnsafeRawBufferPointer(rebasing: bytes[self.outputOffset...]))
                }
                switch result {
                case .wrote(let count):
                    self.outputOffset += count
                case .wouldBlock(let wantsRead):
                    self.socket.setInterest(wantsRead ? .read : [.read, .write], on: self.loop)
                    return
                case .failed(let errno, let detail):
                    self.closedByPeer = true
                    self.connectionFailed(TransportError(.writeFailed, phase: .write, errno: errno == 0 ? nil : errno, detail: detail),
                                          closedByPeer: true)
                    return
                }
            }
            if !self.isClosed, self.socket.interest.contains(.write) { self.socket.setInterest(.read, on: self.loop) }
        } while self.flushAgain && !self.isClosed
        self.closeIfDone()
    }

    // MARK: What the session reports

    private func handle(_ events: [HTTP2Session.Event]) {
        for event in events {
            switch event {
            case .head(let id, let head, let endStream):
                guard let stream = self.streams[id] else { continue }
                self.headArrived(head, on: stream)
                if endStream, self.streams[id] === stream { self.remoteEnded(stream) }
            case .informational(let id, let response):
                guard let stream = self.streams[id] else { continue }
                stream.lastActivity = self.loop.now
                if let observer = stream.owner.headObserver {
                    observer(ReceivedHead(kind: .interim, raw: Self.rawHead(response), head: response))
                }
                stream.owner.receiveInformational(response)
            case .data(let id, let bytes, let endStream):
                guard let stream = self.streams[id] else { continue }
                if !bytes.isEmpty { self.bodyArrived(bytes, on: stream) }
                if endStream, self.streams[id] === stream { self.remoteEnded(stream) }
            case .trailers(let id, let fields):
                guard let stream = self.streams[id] else { continue }
                stream.trailers = fields
                self.remoteEnded(stream)
            case .streamClosed(let id, let code):
                guard let stream = self.streams[id] else { continue }
                self.streamClosed(stream, code: code)
            case .goAway:
                // nghttp2 closes the streams above the last stream id itself, with
                // REFUSED_STREAM (reported below as never processed); those at or below it
                // finish, or end with the connection.
                self.goingAway = true
                self.closedByPeer = true
                self.pool.connectionGoingAway(self)
            case .settings(let maxConcurrentStreams):
                let before = self.maxStreams
                self.maxStreams = min(maxConcurrentStreams ?? 100, 1 << 20)
                if self.maxStreams > before { self.pool.streamEnded(on: self) }
            case .bodyWanted(let id):
                guard let stream = self.streams[id] else { continue }
                // All it was given went out: the server's window let it through.
                stream.lastActivity = self.loop.now
                stream.bodyWanted = true
                self.feedBody(of: stream)
            case .pingAcknowledged:
                self.pingSentAt = nil
            }
        }
    }

    private func headArrived(_ head: HTTP2Session.Head, on stream: HTTP2Stream) {
        stream.lastActivity = self.loop.now
        stream.headReceived = true
        stream.bytesReceived += head.size
        stream.owner.received(byteCount: head.size, at: self.loop.now)
        if let observer = stream.owner.headObserver {
            let response = head.response
            observer(ReceivedHead(kind: .response, raw: Self.rawHead(response), head: response))
        }
        do {
            try stream.owner.receiveHead(head.parsed, version: .http2, bytesSent: stream.bytesSent, at: self.loop.now)
        } catch {
            self.failStream(stream, error: error, reset: true)
        }
    }

    private func bodyArrived(_ bytes: [UInt8], on stream: HTTP2Stream) {
        stream.lastActivity = self.loop.now
        stream.bytesReceived += bytes.count
        stream.owner.received(byteCount: bytes.count, at: self.loop.now)
        let delivered = bytes.withUnsafeBytes { raw in
            Result { () throws(TransportError) -> Bool in try stream.owner.receiveBody(raw) }
        }
        switch delivered {
        case .success(let more):
            if more && !stream.paused {
                self.session.consume(bytes.count, of: stream.id)
            } else {
                // The caller paused: the window stays shut on these bytes until it reads on.
                stream.paused = true
                stream.unconsumed += bytes.count
            }
        case .failure(let error):
            self.failStream(stream, error: error, reset: true)
        }
    }

    /// The server ended its side of the stream: the response is whole. A request body still
    /// going out is not needed any more (RFC 9113 §8.1): the stream is reset with NO_ERROR.
    private func remoteEnded(_ stream: HTTP2Stream) {
        guard self.streams[stream.id] === stream else { return }
        guard stream.headReceived else {
            self.failStream(stream, error: TransportError(.emptyResponse, phase: .readHead, detail: "the HTTP/2 stream ended without a response head"),
                            reset: true)
            return
        }
        self.streams[stream.id] = nil
        if let body = stream.body, !stream.bodyHandedOver { body.cancel(.serverAnsweredEarly) }
        self.session.finishEarly(streamID: stream.id)
        let end = self.loop.now
        if self.streams.isEmpty { self.idleSince = end }
        let owner = stream.owner
        self.pool.requestEnded(status: owner.metrics.status, startedAt: owner.metrics.startedAt, end: end)
        // Its place first (a request started from the completion handler finds it free), then the owner.
        self.pool.streamEnded(on: self)
        owner.exchangeSucceeded(trailers: stream.trailers, bytesSent: stream.bytesSent, at: end)
        self.closeIfDone()
    }

    /// nghttp2 closed a stream before its response ended: the server reset it, or the session did.
    private func streamClosed(_ stream: HTTP2Stream, code: UInt32) {
        let refused = code == Self.refusedStream
        let error: TransportError
        if refused {
            error = TransportError(.remoteClosed, phase: .pool, detail: "the server refused the stream (REFUSED_STREAM): it did not process the request")
        } else {
            error = TransportError(.http2StreamReset, phase: stream.headReceived ? .readBody : .readHead,
                                   detail: "the HTTP/2 stream was reset (\(Self.errorName(code)))")
        }
        self.failStream(stream, error: error, reset: false, closedByPeer: true, refused: refused)
    }

    static let refusedStream: UInt32 = 0x7

    /// RFC 9113 §7's name for an error code.
    static func errorName(_ code: UInt32) -> String {
        let names = ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
                     "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
                     "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"]
        return code < names.count ? names[Int(code)] : "error 0x\(String(code, radix: 16))"
    }

    /// A head as curl shows an HTTP/2 one: `HTTP/2 200`, then the fields with their names in
    /// lowercase, CRLF ends and a blank line.
    static func rawHead(_ response: HTTPResponse) -> [UInt8] {
        var text = "HTTP/2 \(response.status.code) \r\n"
        for field in response.headerFields {
            text += "\(field.name.canonicalName): \(field.value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    // MARK: Ending

    /// The connection broke: every stream fails with `error` (each owner decides whether its
    /// request goes again), after the pool heard the connection is gone.
    func connectionFailed(_ error: TransportError, closedByPeer: Bool = false) {
        guard !self.isClosed else { return }
        let streams = self.streams.values.sorted { $0.id < $1.id }
        self.streams.removeAll()
        self.closeSocket()
        self.pool.connectionClosed(self)
        for stream in streams {
            stream.body?.cancel(.requestEnded)
            stream.owner.exchangeFailed(error, facts: stream.facts(closedByPeer: closedByPeer))
        }
    }

    /// Closes a connection that is going away once its last stream ended.
    private func closeIfDone() {
        guard !self.isClosed, self.goingAway, self.streams.isEmpty, self.outputOffset == self.output.count else { return }
        self.closeSocket()
        self.pool.connectionClosed(self)
    }

    private func closeSocket() {
        self.isClosed = true
        self.goingAway = true
        self.timer.disarm()
        self.socket.close(on: self.loop)
    }

    /// Closes the connection now (the pool is shutting down, or gave its place away): its
    /// streams fail with `error`; the server hears GOAWAY first.
    func close(failingWith error: TransportError) {
        guard !self.isClosed else { return }
        self.session.goAway()
        self.flush()
        let streams = self.streams.values.sorted { $0.id < $1.id }
        self.streams.removeAll()
        self.closeSocket()
        for stream in streams {
            stream.body?.cancel(.requestEnded)
            stream.owner.exchangeFailed(error, facts: stream.facts(closedByPeer: false))
        }
    }

    // MARK: Time

    /// The earliest of the streams' deadlines and the connection's own.
    private var nextDeadline: Deadline? {
        guard !self.isClosed else { return nil }
        var earliest = Deadline.distantFuture
        for stream in self.streams.values {
            if let next = stream.deadlines.next, next < earliest { earliest = next }
        }
        if self.streams.isEmpty {
            earliest = min(earliest, self.idleSince + self.idleTimeout)
        }
        if let sent = self.pingSentAt {
            earliest = min(earliest, sent + self.settings.pingTimeout)
        } else if let interval = self.settings.pingInterval {
            earliest = min(earliest, max(self.idleSince, self.lastHeard) + interval)
        }
        return earliest == .distantFuture ? nil : earliest
    }

    func rearm() {
        guard let next = self.nextDeadline else { return }
        self.timer.arm(at: next, on: self.loop, for: self)
    }

    func timerIsCurrent(token: UInt64) -> Bool {
        self.timer.isCurrent(token)
    }

    func timerFired(token: UInt64, now: Deadline) {
        guard !self.isClosed, self.timer.fired(token) else { return }
        defer { self.rearm() }
        for stream in self.streams.values.sorted(by: { $0.id < $1.id }) {
            switch stream.deadlines.expired(at: now) {
            case .total:
                self.failStream(stream, error: TransportError(.totalTimeout, phase: stream.headReceived ? .readBody : .readHead), reset: true)
            case .head:
                self.failStream(stream, error: TransportError(.headTimeout, phase: .readHead), reset: true)
            case .read:
                self.failStream(stream, error: TransportError(.readTimeout, phase: stream.headReceived ? .readBody : .readHead), reset: true)
            default:
                break
            }
        }
        if let sent = self.pingSentAt, now >= sent + self.settings.pingTimeout {
            // The server stopped answering: whatever runs here is failed, the connection closed.
            self.connectionFailed(TransportError(.readTimeout, phase: self.phase, detail: "no answer to an HTTP/2 PING in \(self.settings.pingTimeout)"))
            return
        }
        guard !self.isClosed else { return }
        if self.streams.isEmpty, now >= self.idleSince + self.idleTimeout {
            self.goingAway = true
            self.session.goAway()
            self.flush()
            self.closeSocket()
            self.pool.connectionClosed(self)
        } else if let interval = self.settings.pingInterval, self.pingSentAt == nil, now >= max(self.idleSince, self.lastHeard) + interval {
            self.pingSentAt = now
            self.session.ping()
            self.flush()
        }
    }
}
