import SalvoTransport

/// A request written on a connection behind the one being answered.
struct LinedRequest {
    let owner: RequestOwner
    /// Its own writer: how much of it is on the wire, kept when it becomes the current request.
    var writer: RequestWriter
}

/// HTTP/1.1 pipelining (RFC 9112 §9.3.2): requests written before the response to the one
/// before them has come, answered in order.
///
/// Only idempotent requests whose bytes are all in memory go in, behind a current request of
/// the same kind whose head is still due, on a connection that has already kept an HTTP/1.1
/// response alive. Their bytes follow the current request's once it is all written; each
/// response that ends hands the connection to the next request in line, and bytes read past
/// a response are its. A request waits in line no longer than it may wait in the pool (or its
/// head or total deadline): then, or when cancelled, it fails, and the requests behind it
/// leave the line. When the connection ends with requests still in line, each owner hears how
/// far its request got (``RequestOwner/leftLine(bytesWritten:connectionFailed:)``) and decides
/// whether it goes again; the connection resubmits nothing itself.
extension HTTP1Connection {
    /// Whether `next` can be written behind what this connection carries now.
    func canPipeline(_ next: RequestOwner, depth: Int) -> Bool {
        guard case .open = self.life, let current = self.owner, !self.exchange.mustClose, !self.closeWhenLineDrains,
              !self.exchange.readPaused, self.keptAliveOverHTTP11, self.line.count + 1 < depth else { return false }
        // Not behind a response already streaming in (a download, an event stream): its end
        // may be far off.
        let behind = self.line.isEmpty ? self.machine.isAwaitingHead : true
        return behind && Self.isPipelinable(current) && Self.isPipelinable(next)
    }

    static func isPipelinable(_ owner: RequestOwner) -> Bool {
        owner.isIdempotent && owner.stream == nil && !owner.expectsContinue && !owner.closeAfter
    }

    /// Writes `next` behind the current request (see ``canPipeline(_:depth:)``).
    func addToLine(_ next: RequestOwner) {
        defer { self.rearm() }
        next.joinedLine(of: self)
        next.metrics.concurrentRequests = self.line.count + 1
        self.line.append(LinedRequest(owner: next, writer: RequestWriter(for: next, now: self.loop.now)))
        if self.machine.isWriteDone { self.flushLine() }
    }

    /// Writes the lined-up requests' bytes, in order, once the current request's are out.
    /// Writes only: never reads (it may run while a read is being parsed).
    func flushLine() {
        let reading: IOInterest = self.exchange.readPaused ? .none : .read
        for index in self.line.indices {
            let progress = self.line[index].writer.write(self.line[index].owner, to: self.socket, for: self)
            switch progress {
            case .finished:
                continue
            case .blocked(let wantsRead):
                self.socket.setInterest(wantsRead ? .read : reading.union(.write), on: self.loop)
                return
            default:
                // The socket failed: the current response may still come; the rest go elsewhere.
                self.exchange.mustClose = true
                return
            }
        }
    }

    /// The current response ended and the connection stays: the next request in line becomes
    /// the current one. False when there is none.
    func promoteLined() -> Bool {
        guard !self.line.isEmpty else { return false }
        let next = self.line.removeFirst()
        let owner = next.owner
        owner.lineMovedOn(to: self, at: self.loop.now)
        self.takeOn(owner, writer: next.writer)
        switch self.machine.startRequest() {
        case .write where self.exchange.writer.hasWrittenAll(of: owner):
            self.act(self.machine.writeFinished())
            if !self.line.isEmpty { self.flushLine() }
        case .write:
            // The rest goes when the socket is writable: no write (and no read a failed write
            // would start) inside the read being parsed now.
            self.socket.setInterest([.read, .write], on: self.loop)
        case let other:
            self.act(other)
        }
        return true
    }

    /// Takes the whole line off the connection (which is ending), for ``lineLeft(_:connectionFailed:)``.
    func takeLine() -> [LinedRequest] {
        guard !self.line.isEmpty else { return [] }
        let line = self.line
        self.line = []
        return line
    }

    /// Tells each owner of `line` that its request left the line unanswered, last first: each
    /// one its owner sends again goes first in the pool's queue, so together they keep their
    /// order.
    /// `connectionFailed`: the connection broke, rather than closed in order.
    func lineLeft(_ line: [LinedRequest], connectionFailed: Bool) {
        for var entry in line.reversed() {
            entry.writer.end()
            entry.owner.leftLine(bytesWritten: entry.writer.bytesWritten, connectionFailed: connectionFailed)
        }
    }

    /// A request in line was cancelled: it leaves the line (``dropLined(_:error:)``).
    func cancelWaiting(_ owner: RequestOwner, error: TransportError) {
        self.dropLined(owner, error: error)
    }

    /// A request in line was cancelled or timed out: it fails now. If none of it went out, it
    /// simply leaves the line. Otherwise its answer will come: the requests ahead of it keep
    /// their places, those behind it leave the line, and the connection closes once the ones
    /// ahead are answered.
    func dropLined(_ owner: RequestOwner, error: TransportError) {
        guard let index = self.line.firstIndex(where: { $0.owner === owner }) else { return }
        defer { self.rearm() }
        var dropped = self.line.remove(at: index)
        dropped.writer.end()
        var behind: [LinedRequest] = []
        if dropped.writer.bytesWritten > 0 {
            // Decided before anyone hears of it: a callback that starts a request must not
            // find this connection open to pipelining.
            self.closeWhenLineDrains = true
            behind = Array(self.line[index...])
            self.line.removeSubrange(index...)
        }
        // Not their failure: they keep their send-again; and they are back in the pool before
        // the dropped request's caller hears of it (and perhaps cancels one of them).
        self.lineLeft(behind, connectionFailed: false)
        var error = error
        if error.phase == nil {
            // Where the dropped request was: still waiting its turn to be written (nothing of
            // it sent), partly written, or all out and waiting for its answer.
            error.phase = dropped.writer.bytesWritten == 0 ? .pool : dropped.writer.hasSentAll(of: owner) ? .readHead : .write
        }
        owner.fail(error)
    }

    /// The earliest wait deadline of the requests in line (distant future when none): each
    /// came from the pool's queue, so it is the pool wait, or its head or total deadline.
    var lineDeadline: Deadline {
        var earliest = Deadline.distantFuture
        for entry in self.line where entry.owner.wait.deadline < earliest { earliest = entry.owner.wait.deadline }
        return earliest
    }

    /// Fails the requests in line whose deadline passed.
    func expireLine(at now: Deadline) {
        while let entry = self.line.first(where: { $0.owner.wait.deadline <= now }) {
            let owner = entry.owner
            self.dropLined(owner, error: TransportError(owner.waitExpiry(at: now), phase: .readHead,
                                                         detail: "waiting in line behind a response that did not come in time"))
        }
    }
}
