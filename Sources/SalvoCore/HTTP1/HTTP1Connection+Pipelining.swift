import SalvoTransport

/// A request written on a connection behind the one being answered.
struct PipelinedRequest {
    let task: RequestTask
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
/// head or total deadline): then, or when cancelled, it fails, and the requests behind it move
/// to the pool. When the connection ends with requests still in line they go back to the pool
/// in their order; a request whose bytes went out on a connection that failed has had its one
/// retry.
extension HTTP1Connection {
    /// Whether `next` can be written behind what this connection carries now.
    func canPipeline(_ next: RequestTask, depth: Int) -> Bool {
        guard case .open = self.life, let current = self.task, !self.mustClose, !self.closeWhenPipelineDrains,
              !self.readPaused, self.keptAliveOverHTTP11, self.pipeline.count + 1 < depth else { return false }
        // Not behind a response already streaming in (a download, an event stream): its end
        // may be far off.
        let behind = self.pipeline.isEmpty ? self.machine.isAwaitingHead : true
        return behind && Self.isPipelinable(current) && Self.isPipelinable(next)
    }

    static func isPipelinable(_ task: RequestTask) -> Bool {
        task.isIdempotent && task.stream == nil && !task.expectsContinue && !task.closeAfter
    }

    /// Writes `next` behind the current request (see ``canPipeline(_:depth:)``).
    func pipelined(_ next: RequestTask) {
        defer { self.rearm() }
        next.phase = .pipelined(self)
        next.reusedConnection = true
        self.pipeline.append(PipelinedRequest(task: next, writer: RequestWriter(for: next, now: self.loop.now)))
        if self.machine.isWriteDone { self.flushPipeline() }
    }

    /// Writes the pipelined requests' bytes, in order, once the current request's are out.
    /// Writes only: never reads (it may run while a read is being parsed).
    func flushPipeline() {
        let reading: IOInterest = self.readPaused ? .none : .read
        for index in self.pipeline.indices {
            let progress = self.pipeline[index].writer.write(self.pipeline[index].task, to: self.socket, for: self)
            switch progress {
            case .finished:
                continue
            case .blocked(let wantsRead):
                self.socket.setInterest(wantsRead ? .read : reading.union(.write), on: self.loop)
                return
            default:
                // The socket failed: the current response may still come; the rest go elsewhere.
                self.mustClose = true
                return
            }
        }
    }

    /// The current response ended and the connection stays: the next pipelined request
    /// becomes the current one. False when there is none.
    func promotePipelined() -> Bool {
        guard !self.pipeline.isEmpty else { return false }
        let next = self.pipeline.removeFirst()
        let task = next.task
        self.takeOn(task, writer: next.writer)
        _ = self.machine.startRequest()
        if self.writer.hasWrittenAll(of: task) {
            _ = self.machine.writeFinished()
            if !self.pipeline.isEmpty { self.flushPipeline() }
        } else {
            // The rest goes when the socket is writable: no write (and no read a failed write
            // would start) inside the read being parsed now.
            self.socket.setInterest([.read, .write], on: self.loop)
        }
        return true
    }

    /// The connection ends with requests still in line: they go back to the pool, first in
    /// the queue and in their order. One whose bytes went out on a connection that failed has
    /// spent its retry: a second time, it fails.
    func releasePipeline() {
        guard !self.pipeline.isEmpty else { return }
        let unanswered = self.pipeline
        self.pipeline = []
        self.requeue(unanswered[...], spendingRetries: self.pipelineFailed)
    }

    /// Sends requests taken out of the line back to the pool, first in its queue and in their
    /// order. With `spendingRetries` (the connection failed), one whose bytes went out has had
    /// its retry, or fails when it had it already.
    private func requeue(_ entries: ArraySlice<PipelinedRequest>, spendingRetries: Bool) {
        for entry in entries.reversed() {
            var writer = entry.writer
            writer.end()
            if spendingRetries && writer.bytesWritten > 0 {
                if entry.task.retried {
                    self.pool.requestEnded(failed: true)
                    entry.task.fail(HTTPClientError(.remoteClosed, phase: .readHead,
                                                    detail: "the connection failed before this pipelined request was answered, twice"))
                    continue
                }
                entry.task.retried = true
            }
            self.pool.submit(entry.task, fresh: false, urgent: true)
        }
    }

    /// A request in line was cancelled or timed out: it fails now. If none of it went out, it
    /// simply leaves the line. Otherwise its answer will come: the requests ahead of it keep
    /// their places, those behind it go back to the pool, and the connection closes once the
    /// ones ahead are answered.
    func dropPipelined(_ task: RequestTask, error: HTTPClientError) {
        guard let index = self.pipeline.firstIndex(where: { $0.task === task }) else { return }
        defer { self.rearm() }
        var dropped = self.pipeline.remove(at: index)
        dropped.writer.end()
        if dropped.writer.bytesWritten > 0 {
            // Decided before anyone hears of it: a callback that starts a request must not
            // find this connection open to pipelining.
            self.closeWhenPipelineDrains = true
            let behind = self.pipeline[index...]
            self.pipeline.removeSubrange(index...)
            // Not their failure: they keep their retry.
            self.requeue(behind, spendingRetries: false)
        }
        self.pool.requestEnded(failed: true)
        task.fail(error)
    }

    /// The earliest wait deadline of the requests in line (distant future when none): each
    /// came from the pool's queue, so it is the pool wait, or its head or total deadline.
    var pipelineDeadline: Deadline {
        var earliest = Deadline.distantFuture
        for entry in self.pipeline where entry.task.waitDeadline < earliest { earliest = entry.task.waitDeadline }
        return earliest
    }

    /// Fails the requests in line whose deadline passed.
    func expirePipelined(at now: Deadline) {
        while let entry = self.pipeline.first(where: { $0.task.waitDeadline <= now }) {
            let task = entry.task
            self.dropPipelined(task, error: HTTPClientError(task.waitExpiry(at: now), phase: .readHead,
                                                            detail: "waiting in line behind a response that did not come in time"))
        }
    }
}
