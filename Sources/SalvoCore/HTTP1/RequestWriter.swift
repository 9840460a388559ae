import SalvoTransport
/// Writes one request through a ``Socket``: the head, then the body, whether it is held in
/// memory (sent with the head: one `sendmsg`, or over TLS one record when both fit in one)
/// or streamed from its producer through a ``StreamedBody``; with `Expect: 100-continue` the
/// body waits until the connection says it may go.
///
/// The write half of a connection's per-request state: ``HTTP1Connection`` calls ``write``
/// whenever the socket, the producer or the `100 Continue` may let it progress, and acts on
/// the ``Progress`` it gets back. Plain and TLS sockets go through the same code. Loop-confined.
struct RequestWriter {
    /// Bytes of the request written to the socket so far, head and body as framed.
    private(set) var bytesWritten = 0
    enum Progress: Equatable {
        /// Every byte is written (and a streamed body's producer ended well).
        case finished
        /// Every announced byte is written; the producer has not ended yet, and its end still
        /// decides whether the request succeeds.
        case sent
        /// The socket takes no more for now: wait for writability (or readability, for TLS).
        case blocked(wantsRead: Bool)
        /// The head is out; the body waits for `100 Continue`, a final answer or its timer.
        case awaitingContinue
        /// Everything queued is out; the producer owes more.
        case awaitingProducer
        /// A final answer came before `100 Continue`: the body is never sent.
        case withheld
        /// The socket failed. The server may have answered before it went away: read first.
        case socketFailed(errno: Int32, detail: String?)
        /// The producer failed, or gave more or fewer bytes than it announced.
        case bodyFailed(TransportError)
    }

    /// Bytes of head and in-memory body written.
    private var offset = 0
    private(set) var streamedBody: StreamedBody?
    /// The body waits for `100 Continue` until ``continueDeadline``.
    private(set) var awaitingContinue = false
    private(set) var continueDeadline: Deadline?
    private var withheld = false
    /// The last write left the socket waiting for the producer, not the other way round.
    private(set) var waitingForProducer = false
    /// When a byte last went out: a slow upload that progresses is not a silent server.
    private(set) var lastProgress: Deadline?

    /// Starts writing `owner`'s request.
    init(for owner: RequestOwner, now: Deadline) {
        if owner.expectsContinue {
            self.awaitingContinue = true
            self.continueDeadline = now + owner.continueTimeout
        }
    }

    /// Nothing to write.
    init() {}

    /// Whether every byte of `owner`'s head and in-memory body is out.
    func hasWrittenAll(of owner: RequestOwner) -> Bool {
        self.offset >= owner.head.count + owner.body.count && owner.stream == nil
    }

    /// Whether the whole request is out: head, in-memory body, and a streamed body to its end.
    func hasSentAll(of owner: RequestOwner) -> Bool {
        guard self.offset >= owner.head.count + owner.body.count else { return false }
        guard let streamed = self.streamedBody else { return owner.stream == nil }
        return streamed.isAllWritten
    }

    /// `100 Continue` arrived, or its timer passed: the body may go.
    mutating func releaseBody() {
        self.awaitingContinue = false
        self.continueDeadline = nil
    }

    /// A final answer arrived before `100 Continue`: the body stays unsent (RFC 9110 §10.1.1).
    mutating func withholdBody() {
        guard self.awaitingContinue else { return }
        self.releaseBody()
        self.withheld = true
    }

    /// The request is over for this connection: stop a producer that may still run, telling
    /// it why.
    mutating func end(_ reason: TransportError.CancellationReason = .requestEnded) {
        self.streamedBody?.cancel(reason)
        self.streamedBody = nil
        self.waitingForProducer = false
        self.awaitingContinue = false
        self.continueDeadline = nil
    }

    /// Writes what can be written now.
    mutating func write(_ owner: RequestOwner, to socket: Socket, for connection: HTTP1Connection) -> Progress {
        if self.withheld { return .withheld }
        self.waitingForProducer = false
        let limit = owner.head.count + (self.awaitingContinue ? 0 : owner.body.count)
        while self.offset < limit {
            let offset = self.offset
            let result = owner.head.withUnsafeBytes { head in
                owner.body.withUnsafeBytes { body in
                    let headPart = UnsafeRawBufferPointer(rebasing: head[min(offset, head.count)...])
                    let bodyStart = max(0, offset - head.count)
                    let bodyPart = UnsafeRawBufferPointer(rebasing: body[bodyStart..<(limit - head.count)])
                    return socket.write(headPart, bodyPart, joiningIn: connection.loop.recordBuffer)
                }
            }
            switch result {
            case .wrote(let count):
                self.offset += count
                self.bytesWritten += count
                self.lastProgress = connection.loop.now
            case .wouldBlock(let wantsRead):
                return .blocked(wantsRead: wantsRead)
            case .failed(let errno, let detail):
                return .socketFailed(errno: errno, detail: detail)
            }
        }
        if self.awaitingContinue { return .awaitingContinue }
        guard let source = owner.stream else { return .finished }
        let body: StreamedBody
        if let started = self.streamedBody {
            body = started
        } else {
            body = StreamedBody(loop: connection.loop, length: source.length, connection: connection)
            self.streamedBody = body
            body.start(source.produce)
        }
        return self.writeStreamed(body, to: socket, now: connection.loop.now)
    }

    /// Writes the queued chunks of a streamed body.
    private mutating func writeStreamed(_ body: StreamedBody, to socket: Socket, now: Deadline) -> Progress {
        while true {
            if let failure = body.failure { return .bodyFailed(failure) }
            guard let chunk = body.front else {
                if body.isComplete { return .finished }
                if body.isSent { return .sent }
                self.waitingForProducer = true
                return .awaitingProducer
            }
            let offset = body.frontOffset
            let result = chunk.withUnsafeBytes { socket.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch result {
            case .wrote(let count):
                body.consumed(count)
                self.bytesWritten += count
                self.lastProgress = now
            case .wouldBlock(let wantsRead):
                return .blocked(wantsRead: wantsRead)
            case .failed(let errno, let detail):
                return .socketFailed(errno: errno, detail: detail)
            }
        }
    }
}
