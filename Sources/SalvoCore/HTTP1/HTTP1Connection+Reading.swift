@_spi(Benchmarks) import SalvoTransport
import CSalvo
import HTTPTypes

/// Reading: bytes from the socket into the loop's shared buffer, parsed there in place, and
/// the ways a response ends (its last byte, the peer's close, an error).
extension HTTP1Connection {
    /// Reads until the socket has nothing more, the consumer pauses or the connection ends.
    /// A short read means a plain socket is drained (the read that would say EAGAIN is saved);
    /// TLS may still hold decrypted bytes, so there only `wouldBlock` ends the loop.
    func readable() {
        let buffer = self.loop.readBuffer
        while case .open = self.life, !self.exchange.readPaused {
            switch self.socket.read(into: buffer) {
            case .bytes(let count):
                self.lastActivity = self.loop.now
                self.received(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
                if count < buffer.count && self.socket.drainedByShortRead { return }
            case .wouldBlock(let wantsWrite):
                if wantsWrite { self.socket.setInterest([.read, .write], on: self.loop) }
                return
            case .closed(let clean):
                if !clean && self.owner != nil && self.decoder.bodyEndsAtClose {
                    // TLS without close_notify: a body that runs to the close cannot be known
                    // complete (someone may have cut the connection).
                    self.fail(TransportError(.truncatedBody, phase: .readBody,
                                              detail: "the server closed the TLS connection without close_notify"))
                    return
                }
                self.remoteClosed(errno: 0)
                return
            case .failed(let errno, let detail):
                self.readFailed(errno: errno, detail: detail)
                return
            }
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        var bytes = bytes
        // Bytes past a response are the answer to the next request in line.
        while let rest = self.receivedOne(bytes) {
            bytes = rest
        }
    }

    /// Parses `bytes` for the current response; returns what is left past its end when a
    /// lined-up request has taken over and should parse it.
    private func receivedOne(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let owner = self.owner else {
            // Bytes on an idle connection: nothing asked for them, so it cannot be trusted.
            self.act(self.machine.failed())
            return nil
        }
        owner.received(byteCount: bytes.count, at: self.loop.now)
        let result: ResponseDecoder.FeedResult
        do {
            result = try self.decoder.feed(bytes)
        } catch {
            if let partial = self.decoder.partialRawHead, let observer = owner.headObserver {
                observer(ReceivedHead(kind: .failed, raw: partial, head: nil))
            }
            self.fail(self.exchange.ownerError ?? error)
            return nil
        }
        var rest: UnsafeRawBufferPointer? = nil
        let nextInLine = self.line.first?.owner
        if case .complete(let consumed) = result, consumed < bytes.count {
            if nextInLine == nil {
                // Bytes after the response, and nothing asked for them: out of step.
                self.exchange.mustClose = true
            } else {
                rest = UnsafeRawBufferPointer(rebasing: bytes[consumed...])
                owner.belongToNextInLine(byteCount: bytes.count - consumed)
            }
        }
        if self.exchange.continueArrived {
            self.exchange.continueArrived = false
            self.writeRequest()
        }
        self.deliverEnd()
        // Parsed on only if the next request in line did take over.
        guard let rest, let next = self.owner, next === nextInLine, case .open = self.life else {
            if rest != nil, self.owner == nil, case .open = self.life { self.act(self.machine.failed()) }
            return nil
        }
        return rest
    }

    private func deliverEnd() {
        guard let end = self.exchange.pendingEnd else { return }
        self.exchange.pendingEnd = nil
        if !end.keepAlive { self.closedByPeer = true }   // the server's Connection: close
        self.act(self.machine.responseEnded(keepAlive: end.keepAlive && !self.exchange.mustClose))
        if self.owner != nil, !self.machine.isAwaitingResponse, !self.machine.isClosed {
            // The response is all here and the request waits for its body's producer to end:
            // nothing more is read until then (not even the server closing, which it may).
            self.exchange.readPaused = true
            self.socket.setInterest(self.socket.interest.subtracting(.read), on: self.loop)
            self.exchange.producerEndDeadline = self.loop.now + Self.producerGrace
        }
    }

    private func readFailed(errno: Int32, detail: String?) {
        self.closedByPeer = true
        if errno == ECONNRESET && self.decoder.bytesOfCurrentResponse == 0 {
            self.remoteClosed(errno: errno)
            return
        }
        self.fail(TransportError(.readFailed, phase: self.decoder.inBody ? .readBody : .readHead,
                                  errno: errno == 0 ? nil : errno, detail: detail))
    }

    /// The peer ended the stream (`errno` 0) or reset it. What the response needed decides:
    /// a body that runs to the close ends here; anything else is cut short.
    func remoteClosed(errno readErrno: Int32, duringWrite: Bool = false) {
        self.closedByPeer = true
        // A write that failed first says how the peer went (a reset), even when the read
        // that followed found only the end of the stream.
        let duringWrite = duringWrite || self.exchange.sendFailure != 0
        let errno = readErrno != 0 ? readErrno : self.exchange.sendFailure
        guard self.owner != nil else {
            self.act(self.machine.remoteClosed())
            return
        }
        if readErrno == 0 {
            // The stream ended without a reset on the read side: a body that runs to the
            // close ends here.
            do {
                if try self.decoder.finish() {
                    self.exchange.mustClose = true
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
                ? TransportError(.writeFailed, phase: .write, errno: errno)
                : TransportError(.readFailed, phase: .readHead, errno: errno)
        } else if errno != 0 {
            error.errno = errno
        }
        self.failOnClose(error)
    }

    /// The peer's close cut the response short: the request's owner hears it, with what the
    /// connection saw, and decides whether it goes again.
    private func failOnClose(_ error: TransportError) {
        if error.phase == .readHead, let observer = self.owner?.headObserver {
            // The lines of a head the close cut short, as curl shows them.
            self.decoder.keepPartialHead(endingBefore: self.decoder.captured.count)
            if let partial = self.decoder.partialRawHead, !partial.isEmpty {
                observer(ReceivedHead(kind: .failed, raw: partial, head: nil))
            }
        }
        switch self.machine.remoteClosed() {
        case .failRequest:
            self.finishFailure(error, closedByPeer: true)
        case let other:
            self.act(other)
        }
    }

    /// Lets a paused response stream read again.
    func resumeReading() {
        guard self.exchange.readPaused, self.machine.isAwaitingResponse else { return }
        defer { self.rearm() }
        self.exchange.readPaused = false
        self.lastActivity = self.loop.now
        if !self.socket.isRegistered && self.socket.isOpen {
            // Out of epoll after a hang-up while paused: the data left, then the end, is
            // still in the socket; read it now.
            self.readable()
            return
        }
        let writing = self.socket.interest.contains(.write)
        self.socket.setInterest(writing ? [.read, .write] : .read, on: self.loop)
        // Records TLS read ahead before the pause are not in the socket: epoll would not
        // report them.
        if !self.socket.drainedByShortRead { self.readable() }
    }

    // MARK: Decoder callbacks (inside llhttp_execute: record, act after it returns)

    func decoderReceivedInformational(_ head: HTTPResponse) {
        if head.status.code == 100 && self.exchange.writer.awaitingContinue {
            self.exchange.writer.releaseBody()
            self.exchange.continueArrived = true
        }
        guard let owner = self.owner else { return }
        if let observer = owner.headObserver {
            observer(ReceivedHead(kind: .interim, raw: self.decoder.lastRawHead, head: head))
        }
        owner.receiveInformational(head)
    }

    func decoderReceivedHead(_ head: ParsedHead) -> Bool {
        guard let owner = self.owner else { return false }
        if let observer = owner.headObserver {
            observer(ReceivedHead(kind: .response, raw: self.decoder.lastRawHead, head: head.response))
        }
        if let keepAlive = head.fields.firstValue(ofTracked: .keepAlive) {
            self.serverIdleLimit = Self.idleLimit(keepAlive)
            if self.serverIdleLimit == .zero { self.exchange.mustClose = true }
        }
        // A final answer before 100 Continue: the body is not sent (RFC 9110 §10.1.1), so
        // the connection cannot carry another request.
        self.exchange.writer.withholdBody()
        switch self.machine.headReceived() {
        case .forwardHead:
            self.forward(head, to: owner)
        case let other:
            self.act(other)
        }
        // Parsing goes on unless the owner refused the head (or its body).
        return !self.exchange.ownerFailed
    }

    /// Hands the head just parsed to the request's owner (the machine's `.forwardHead`).
    private func forward(_ head: ParsedHead, to owner: RequestOwner) {
        do {
            try owner.receiveHead(head, version: self.decoder.version, bytesSent: self.exchange.writer.bytesWritten,
                                  at: self.loop.now)
            if owner.reception.skippingBody, !owner.isHead, self.decoder.bodyEndsAtClose {
                // A redirect whose body ends only at the close (no length, not chunked): not
                // waited for — the server may keep the connection open regardless.
                self.exchange.ownerError = owner.abandonSkippedBody("redirect body without length")
            }
        } catch {
            self.exchange.ownerError = error
        }
    }

    /// Retired this long before the server's announced idle timeout would drop it.
    static let idleMargin: Duration = .milliseconds(500)

    /// The idle time a `Keep-Alive: timeout=N, max=M` value leaves for reuse: N seconds less
    /// the margin (zero when that is nothing: the connection is then not reused); nil when
    /// the value names no usable timeout.
    static func idleLimit(_ value: String) -> Duration? {
        for parameter in value.split(separator: ",") {
            let parts = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingOWS.lowercased() }
            guard parts.count == 2, parts[0] == "timeout", let seconds = Int(parts[1]), seconds >= 0, seconds < 1_000_000 else { continue }
            let limit = Duration.seconds(seconds) - Self.idleMargin
            return limit > .zero ? limit : .zero
        }
        return nil
    }

    func decoderReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let owner = self.owner else { return false }
        do {
            if try !owner.receiveBody(bytes) {
                self.exchange.readPaused = true
                self.socket.setInterest(self.socket.interest.subtracting(.read), on: self.loop)
            }
            return true
        } catch {
            self.exchange.ownerError = error
            return false
        }
    }

    func decoderReceivedEnd(trailers: HTTPFields?, keepAlive: Bool) {
        self.exchange.pendingEnd = (trailers, keepAlive)
        self.exchange.trailers = trailers
    }
}
