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
/// the same kind, on a connection that has already kept a response alive. Their bytes follow
/// the current request's once it is all written; each response that ends hands the connection
/// to the next request in line, and bytes read past a response are its. When the connection
/// ends early — it failed, the server closed it, a pipelined request was cancelled or timed
/// out (its answer would be taken for the next one's) — the requests left unanswered go back
/// to the pool, once, for a fresh connection.
extension HTTP1Connection {
    /// Whether `next` can be written behind what this connection carries now.
    func canPipeline(_ next: RequestTask, depth: Int) -> Bool {
        guard case .open = self.life, let current = self.task, !self.mustClose,
              self.pipeline.count + 1 < depth, self.machine.requestsServed > 0 else { return false }
        return Self.isPipelinable(current) && Self.isPipelinable(next)
    }

    private static func isPipelinable(_ task: RequestTask) -> Bool {
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
        self.task = task
        task.phase = .running(self)
        task.runAt = self.loop.now
        self.readPaused = false
        self.mustClose = false
        self.handlerError = nil
        self.pendingEnd = nil
        self.pendingTrailers = nil
        self.continueArrived = false
        self.producerEndDeadline = nil
        self.writeBlockedSince = nil
        self.writer = next.writer
        self.decoder.prepareForNextResponse(expectNoBody: task.isHead, capturingHeads: task.headObserver != nil)
        self.lastActivity = self.loop.now
        _ = self.machine.startRequest()
        // Usually all written already; else the rest goes first, then the others behind it.
        self.writeRequest()
        return true
    }

    /// The connection ends with requests still in line: each goes back to the pool for a
    /// fresh connection, or fails when it had its second chance already.
    func releasePipeline(_ error: HTTPClientError) {
        guard !self.pipeline.isEmpty else { return }
        let unanswered = self.pipeline
        self.pipeline = []
        for entry in unanswered {
            var writer = entry.writer
            writer.end()
            if entry.task.retried {
                self.pool.requestEnded(failed: true)
                entry.task.fail(error)
            } else {
                entry.task.retried = true
                self.pool.submit(entry.task, fresh: true)
            }
        }
    }

    /// A pipelined request was cancelled or timed out: it fails now, and since its answer
    /// would be taken for the next request's, the others go back to the pool and the
    /// connection closes once the current response is in.
    func dropPipelined(_ task: RequestTask, error: HTTPClientError) {
        guard let index = self.pipeline.firstIndex(where: { $0.task === task }) else { return }
        defer { self.rearm() }
        self.pipeline[index].writer.end()
        self.pipeline.remove(at: index)
        self.pool.requestEnded(failed: true)
        task.fail(error)
        self.mustClose = true
        let others = self.pipeline
        self.pipeline = []
        for entry in others {
            var writer = entry.writer
            writer.end()
            // Not their failure: they keep their second chance.
            self.pool.submit(entry.task, fresh: true)
        }
    }

    /// The earliest deadline of the pipelined requests (distant future when none).
    var pipelineDeadline: Deadline {
        var earliest = Deadline.distantFuture
        for entry in self.pipeline where entry.task.deadline < earliest { earliest = entry.task.deadline }
        return earliest
    }

    /// Fails the pipelined requests whose own deadline passed.
    func expirePipelined(at now: Deadline) {
        while let entry = self.pipeline.first(where: { $0.task.deadline <= now }) {
            self.dropPipelined(entry.task, error: HTTPClientError(.totalTimeout, phase: .readHead,
                                                                  detail: "pipelined behind a response that did not come in time"))
        }
    }
}
