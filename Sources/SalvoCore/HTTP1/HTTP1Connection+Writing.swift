@_spi(Benchmarks) import SalvoTransport
import CSalvo
import HTTPTypes

/// Writing: the request goes out through the exchange's ``RequestWriter``, and what it
/// reports decides what the connection waits for next.
extension HTTP1Connection {
    /// Writes what the request has ready, and acts on how far it got.
    func writeRequest() {
        guard let owner = self.owner else { return }
        let reading: IOInterest = self.exchange.readPaused ? .none : .read
        let progress = self.exchange.writer.write(owner, to: self.socket, for: self)
        if case .blocked = progress {
            if self.exchange.writeBlockedSince == nil { self.exchange.writeBlockedSince = self.loop.now }
        } else {
            self.exchange.writeBlockedSince = nil
        }
        switch progress {
        case .finished:
            self.socket.setInterest(reading, on: self.loop)
            self.act(self.machine.writeFinished())
            if !self.line.isEmpty, self.machine.isWriteDone { self.flushLine() }
        case .sent:
            self.socket.setInterest(reading, on: self.loop)
            self.act(self.machine.bodySent())
        case .blocked(let wantsRead):
            self.socket.setInterest(wantsRead ? .read : reading.union(.write), on: self.loop)
        case .awaitingContinue, .awaitingProducer, .withheld:
            self.socket.setInterest(reading, on: self.loop)
        case .socketFailed(let errno, let detail):
            self.writeFailed(errno: errno, detail: detail)
        case .bodyFailed(let error):
            self.fail(error)
        }
    }

    /// The streamed body's producer queued data, finished or failed.
    func streamedBodyChanged() {
        guard self.owner != nil, self.exchange.writer.streamedBody != nil else { return }
        defer { self.rearm() }
        self.writeRequest()
    }

    /// The socket refused the request's bytes. The server may have answered and gone away (an
    /// early 413, then a reset): what already arrived is read first, over TLS as over TCP, and
    /// only a connection with no answer fails the request.
    private func writeFailed(errno: Int32, detail: String?) {
        self.exchange.sendFailure = errno
        self.socket.setInterest(.read, on: self.loop)
        if !self.exchange.readPaused { self.readable() }
        guard self.owner != nil, !self.machine.isClosed else { return }
        if errno == EPIPE || errno == ECONNRESET {
            self.remoteClosed(errno: errno, duringWrite: true)
        } else {
            self.fail(TransportError(.writeFailed, phase: .write, errno: errno == 0 ? nil : errno, detail: detail))
        }
    }
}

/// What a connection keeps of the exchange it carries now: started afresh when a request
/// starts on it (``begin(writer:mustClose:)``) and when it ends (``end()``), every field
/// at once — in place, and the fields that hold references only when they hold one (storing
/// nil over nil still runs their destruction), which a whole new value would not do.
struct Exchange {
    /// The request going out: how far it got, and its streamed body's producer.
    var writer = RequestWriter()
    /// The caller asked for no more bytes for now (or the response is all here and the
    /// producer's end is awaited): the socket is not read meanwhile.
    var readPaused = false
    /// The connection must not carry another request after this one (the caller said so, the
    /// server did, or it is out of step).
    var mustClose = false
    /// What the owner threw inside a parser callback, reported once the parser returns.
    var ownerError: TransportError? {
        get { self.ownerFailed ? self.ownerThrew : nil }
        set {
            self.ownerThrew = newValue
            self.ownerFailed = newValue != nil
        }
    }
    /// Whether the owner threw: what is asked of every exchange, as a flag — asking an
    /// optional `TransportError` whether it holds one goes through its type's witnesses.
    private(set) var ownerFailed = false
    private var ownerThrew: TransportError?
    /// The response ended inside a parser callback: acted on once the parser returns.
    var pendingEnd: (trailers: HTTPFields?, keepAlive: Bool)?
    /// The trailers of the response that ended.
    var trailers: HTTPFields?
    /// `100 Continue` arrived during a parse: the body goes once the parser returns.
    var continueArrived = false
    /// The errno of a failed write, while what the server sent before it went away is read.
    var sendFailure: Int32 = 0
    /// The response is complete and the request waits for its body's producer to end, until
    /// then (see ``HTTP1Connection/producerGrace``).
    var producerEndDeadline: Deadline?
    /// Since when the socket has refused the request's bytes (nil: it is not refusing).
    var writeBlockedSince: Deadline?

    @inline(__always)
    init() {}

    /// A request starts: every field as a new exchange has it, but the writer and `mustClose`.
    @inline(__always)
    mutating func begin(writer: RequestWriter, mustClose: Bool) {
        self.clear(mustClose: mustClose)
        self.writer = writer
    }

    /// The exchange is over: every field as a new exchange has it.
    @inline(__always)
    mutating func end() {
        self.clear(mustClose: false)
        self.writer = RequestWriter()
    }

    /// Every field but the writer as a new exchange has it (keep in step with the fields above).
    @inline(__always)
    private mutating func clear(mustClose: Bool) {
        self.readPaused = false
        self.mustClose = mustClose
        if self.ownerFailed { self.ownerError = nil }
        if self.pendingEnd != nil { self.pendingEnd = nil }
        if self.trailers != nil { self.trailers = nil }
        self.continueArrived = false
        self.sendFailure = 0
        self.producerEndDeadline = nil
        self.writeBlockedSince = nil
    }
}
