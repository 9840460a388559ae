// The owner's response side: what a connection reports of a response, and where the owner
// hands it (a collecting caller, a completion handler, or a stream).
@_spi(Benchmarks) import SalvoTransport
import HTTPTypes

/// This hop's response as it arrives: what the owner keeps between the connection's reports.
/// Replaced whole when a redirect's next request starts.
struct Reception {
    /// The final head has arrived (a head timeout no longer applies).
    var headReceived = false
    /// The body is a redirect's, read and dropped (the machine decided so at the head).
    var skippingBody = false
    /// Bytes of a skipped body read so far.
    var skippedBytes = 0
    /// The decoder of the body, when it has a content coding, and that coding.
    var decoder: ContentDecoder?
    var decodedCoding: String?
    /// The caller paused during the last decoded piece.
    var callerPaused = false
    /// The response ended while decoded data still waited for a paused caller: its end
    /// (with these trailers) is delivered once that data is.
    var deferredEnd: HTTPFields??
    /// Why a redirect was delivered rather than followed, when it was.
    var unfollowedRedirect: String?

    /// More than this of a redirect's body is not read: its connection closes instead.
    static let maxSkippedBody = 1 << 20

    /// As new, in place: the fields that hold references are cleared only when they hold one.
    mutating func reset() {
        self.headReceived = false
        self.skippingBody = false
        self.skippedBytes = 0
        if self.decoder != nil { self.decoder = nil }
        if self.decodedCoding != nil { self.decodedCoding = nil }
        self.callerPaused = false
        if self.deferredEnd != nil { self.deferredEnd = nil }
        if self.unfollowedRedirect != nil { self.unfollowedRedirect = nil }
    }
}

/// Clock readings (0 until known) and counters for a call's metrics: no allocation.
struct ExchangeMetrics {
    /// When the caller made the call.
    var startedAt = Deadline(nanoseconds: 0)
    /// When a connection took this hop's request.
    var runAt = Deadline(nanoseconds: 0)
    var firstByteAt = Deadline(nanoseconds: 0)
    var headAt = Deadline(nanoseconds: 0)
    /// This hop's final status, once its head arrived.
    var status = 0
    var bytesSent = 0
    var bytesReceived = 0
    var bodyBytesDelivered = 0
    var reusedConnection = false
    /// Connections opened for the call so far, every hop and attempt counted.
    var connectionsOpened = 0
    /// The addresses of this hop's connection.
    var endpoints = ConnectionEndpoints()
    /// The phases of the connection opened for this hop (nil on a reused one).
    var connectionSetup: ConnectionSetup?
    /// The version the response came in.
    var version = HTTPVersion.http1_1
    /// HTTP/2: this hop's stream, and the other streams its connection carried when it began.
    var streamID: Int?
    var concurrentRequests = 0
    /// Interim (1xx) responses so far, those of the chain's earlier requests included.
    var interim: [HTTPResponse] = []
    /// The redirects followed so far, each request and the 3xx that answered it, and the
    /// bytes their exchanges moved: empty for most calls.
    var hops: [RedirectHop] = []
    var carriedBytes = (sent: 0, received: 0)

    var hasChainRecord: Bool { !self.hops.isEmpty || !self.interim.isEmpty }

    /// As new for a call made at `startedAt`, in place: the fields that hold references are
    /// cleared only when they hold one (the endpoints are set anew when a connection takes the
    /// request).
    mutating func restart(startedAt: Deadline) {
        self.startedAt = startedAt
        self.runAt = Deadline(nanoseconds: 0)
        self.firstByteAt = Deadline(nanoseconds: 0)
        self.headAt = Deadline(nanoseconds: 0)
        self.status = 0
        self.bytesSent = 0
        self.bytesReceived = 0
        self.bodyBytesDelivered = 0
        self.reusedConnection = false
        self.connectionsOpened = 0
        if self.connectionSetup != nil { self.connectionSetup = nil }
        self.version = .http1_1
        self.streamID = nil
        self.concurrentRequests = 0
        self.dropChainRecord()
        self.carriedBytes = (0, 0)
    }

    mutating func dropChainRecord() {
        if !self.hops.isEmpty { self.hops = [] }
        if !self.interim.isEmpty { self.interim = [] }
    }

    /// A redirect's next request starts: what the earlier one moved is carried over.
    mutating func startHop() {
        self.carriedBytes.sent += self.bytesSent
        self.carriedBytes.received += self.bytesReceived
        self.bytesSent = 0
        self.bytesReceived = 0
        self.bodyBytesDelivered = 0
        self.runAt = Deadline(nanoseconds: 0)
        self.firstByteAt = Deadline(nanoseconds: 0)
        self.headAt = Deadline(nanoseconds: 0)
        self.reusedConnection = false
        self.connectionSetup = nil
        self.version = .http1_1
        self.streamID = nil
        self.concurrentRequests = 0
    }
}

/// The response, as the connection reports it (loop thread).
extension RequestOwner {
    /// Bytes of the response came in (the first one starts the time to first byte).
    func received(byteCount: Int, at now: Deadline) {
        if self.metrics.firstByteAt.nanoseconds == 0 { self.metrics.firstByteAt = now }
        self.metrics.bytesReceived += byteCount
    }

    /// Of the bytes last reported, this many lie past the response's end: they are the next
    /// request's (in the connection's line), not this one's.
    func belongToNextInLine(byteCount: Int) {
        self.metrics.bytesReceived -= byteCount
    }

    func receiveInformational(_ head: HTTPResponse) {
        self.metrics.interim.append(head)
    }

    /// The final head of this hop's response, which arrived at `now` in `version`, after
    /// `bytesSent` bytes of the request went out.
    func receiveHead(_ head: ParsedHead, version: HTTPVersion, bytesSent: Int, at now: Deadline) throws(TransportError) {
        self.metrics.headAt = now
        self.metrics.status = head.status.code
        self.metrics.bytesSent = bytesSent
        self.metrics.version = version
        let status = head.status.code
        // Most answers are no redirect: the machine hears of those without the request and
        // the policy (each would be copied to be handed over).
        let action: RequestStateMachine.HeadAction
        if RedirectState.isRedirect(status), let policy = self.prepared.redirects {
            action = self.machine.headArrived(status: status, location: head.fields.firstValue(ofTracked: .location),
                                              request: self.prepared.request, policy: policy)
        } else {
            action = self.machine.headArrived(status: status)
        }
        switch action {
        case .skipBody:
            self.reception.skippingBody = true
            if case .skipping(.redirect, _) = self.machine.state {
                self.metrics.hops.append(RedirectHop(request: self.prepared.request, response: head.response))
            }
            return
        case .deliverUnfollowed(let reason):
            self.reception.unfollowedRedirect = reason
        case .deliver:
            break
        }
        if let limits = self.prepared.decoding, !self.isHead, status != 204, status != 304,
           let coding = head.fields.joinedValues(for: .contentEncoding) {
            self.reception.decoder = try ContentDecoder.make(contentEncoding: coding, limits: limits)
            self.reception.decodedCoding = coding
        }
        self.reception.headReceived = true
        try self.didReceiveHead(head)
    }

    /// Gives up the rest of a skipped body (too long, or one that would end only when the
    /// server closes): the connection closes with the error returned, and the redirect (or
    /// its refusal) stands.
    func abandonSkippedBody(_ reason: String) -> TransportError {
        self.machine.skippedBodyAbandoned()
        return TransportError.cancelled(.internal, phase: .readBody, detail: reason)
    }

    /// Body bytes; false pauses reading.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Bool {
        // A redirect's body is read and dropped, up to a bound; past it the connection is
        // closed instead of reading on.
        if self.reception.skippingBody {
            self.reception.skippedBytes += bytes.count
            if self.reception.skippedBytes > Reception.maxSkippedBody {
                throw self.abandonSkippedBody("redirect body too long to skip")
            }
            return true
        }
        guard let decoder = self.reception.decoder else {
            self.metrics.bodyBytesDelivered += bytes.count
            return try self.didReceiveBody(bytes)
        }
        self.reception.callerPaused = false
        let consumedAll = try decoder.decode(bytes) { (piece) throws(TransportError) -> Bool in try self.deliverDecoded(piece) }
        return consumedAll && !self.reception.callerPaused
    }

    private func deliverDecoded(_ piece: UnsafeRawBufferPointer) throws(TransportError) -> Bool {
        self.metrics.bodyBytesDelivered += piece.count
        let more = try self.didReceiveBody(piece)
        if !more { self.reception.callerPaused = true }
        return more
    }

    /// The response ended on the wire; the connection has already gone back to the pool (or
    /// closed), so a redirect to the same host can take it. `now`: the loop's clock for this
    /// turn; `bytesSent`: the request's bytes written.
    func exchangeSucceeded(trailers: HTTPFields?, bytesSent: Int, at now: Deadline) {
        guard !self.isFinished else { return }
        self.metrics.bytesSent = bytesSent
        self.placement = .none
        self.carryOut(self.machine.responseEnded(), trailers: trailers, at: now)
    }

    /// Hands over the end of the body (once a decoder has delivered all it holds), which
    /// ended at `now` (no clock read per response: the loop's turn has one).
    func completeBody(trailers: HTTPFields?, at now: Deadline) {
        if let decoder = self.reception.decoder {
            if decoder.hasPendingInput {
                // The caller paused with decoded data still to come: end after it.
                self.reception.deferredEnd = .some(trailers)
                return
            }
            do {
                try decoder.finish { (piece) throws(TransportError) -> Bool in try self.deliverDecoded(piece) }
            } catch {
                self.didFail(error.with(host: self.key.host))
                return
            }
        }
        let end = max(now, self.metrics.startedAt)
        if case .lent(let sink) = self.delivery {
            // Its metrics are made only if the handler asks for them.
            self.lend(to: sink, endedAt: end)
            return
        }
        self.didFinish(trailers: trailers, details: self.details(endedAt: end))
    }

    /// Asks the connection to read again after the caller paused it (loop thread).
    func resumeReadingOnLoop() {
        if let decoder = self.reception.decoder, decoder.hasPendingInput {
            self.reception.callerPaused = false
            do {
                let drained = try decoder.resume { (piece) throws(TransportError) -> Bool in try self.deliverDecoded(piece) }
                // Input still held: the caller's next resume goes on with it.
                guard drained else { return }
            } catch {
                if case .running(let connection) = self.placement {
                    connection.fail(error)
                } else {
                    // The response had ended; only its decoding was left.
                    self.reception.deferredEnd = nil
                    self.didFail(error.with(host: self.key.host))
                }
                return
            }
            if let trailers = self.reception.deferredEnd {
                // All input is decoded, so the end goes now, even when the last piece paused
                // the caller again: the stream holds it behind the pieces, and no resume would
                // come for it (the caller's next one finds no input and a finished exchange).
                self.reception.deferredEnd = nil
                self.completeBody(trailers: trailers, at: .now())
                return
            }
            // Paused again by the last piece: the socket waits for the caller's next resume.
            guard !self.reception.callerPaused else { return }
        }
        if case .running(let connection) = self.placement {
            connection.resumeReading()
        }
    }

    // MARK: What the caller is told besides head and body

    /// The version, metrics and extras; `endedAt` once the body has ended.
    func details(endedAt end: Deadline?) -> ResponseDetails {
        ResponseDetails(version: self.metrics.version, metrics: self.transportMetrics(endedAt: end), extras: self.extras())
    }

    /// What most responses lack: none of it is made for a response without redirects,
    /// interim responses or a decoded coding.
    private func extras() -> ExchangeExtras {
        let redirects = self.machine.redirects
        guard redirects != nil || !self.metrics.interim.isEmpty || self.reception.decodedCoding != nil else { return ExchangeExtras() }
        var extras = ExchangeExtras.Values()
        if let redirects {
            // The URLs on the way, when there was a way: more than one, or a redirect not followed.
            if redirects.chain.count > 1 || self.reception.unfollowedRedirect != nil { extras.redirectChain = redirects.chain }
            extras.unfollowedRedirect = self.reception.unfollowedRedirect
            extras.redirects = self.metrics.hops
            if !self.metrics.hops.isEmpty { extras.effectiveRequest = self.prepared.request }
        }
        extras.interimResponses = self.metrics.interim
        extras.decodedContentEncoding = self.reception.decodedCoding
        return ExchangeExtras(extras)
    }

    /// The metrics so far; `endedAt` once the body has ended.
    func transportMetrics(endedAt end: Deadline?) -> TransportMetrics {
        func span(_ from: Deadline, _ to: Deadline?) -> Duration? {
            guard let to, from.nanoseconds != 0, to.nanoseconds != 0, to >= from else { return nil }
            return .nanoseconds(Int64(to.nanoseconds - from.nanoseconds))
        }
        var metrics = TransportMetrics(
            queueWait: span(self.metrics.startedAt, self.metrics.runAt), dnsLookup: self.metrics.connectionSetup?.dnsLookup,
            connect: self.metrics.connectionSetup?.connect, tlsHandshake: self.metrics.connectionSetup?.tlsHandshake,
            tlsResumed: self.metrics.connectionSetup?.tlsResumed, reusedConnection: self.metrics.reusedConnection,
            timeToFirstByte: span(self.metrics.startedAt, self.metrics.firstByteAt), timeToHead: span(self.metrics.startedAt, self.metrics.headAt),
            total: span(self.metrics.startedAt, end), requestBytesSent: self.metrics.carriedBytes.sent + self.metrics.bytesSent,
            responseBytesReceived: self.metrics.carriedBytes.received + self.metrics.bytesReceived,
            bodyBytesDelivered: self.metrics.bodyBytesDelivered, redirects: self.metrics.hops.count,
            connectionsOpened: self.metrics.connectionsOpened, remote: self.metrics.endpoints.remote,
            local: self.metrics.endpoints.local)
        metrics.streamID = self.metrics.streamID
        metrics.concurrentRequests = self.metrics.concurrentRequests
        return metrics
    }
}

/// What the engine knows of a response besides its head, handed over with it.
struct ResponseDetails {
    var version: HTTPVersion
    var metrics: TransportMetrics
    /// Redirects, interim responses, a decoded coding: empty (no object) for most responses.
    var extras: ExchangeExtras

    func apply(to response: inout TransportResponse) {
        response.version = self.version
        response.metrics = self.metrics
        response.extras = self.extras
    }
}

/// A collected response as it comes together.
struct Collected {
    var head: ParsedHead?
    var body: [UInt8] = []
    /// More than this many body bytes fail the call with `.bodyTooLarge`.
    var maxBodySize: Int

    init(maxBodySize: Int) {
        self.maxBodySize = maxBodySize
    }
}

/// Where the response goes: collected into one value for a completion handler or an
/// awaiting caller, or handed out at its head to a stream. Exactly one of `didFinish` or
/// `didFail` ends every call.
extension RequestOwner: EndOfTurnWork {
    enum Delivery {
        /// A collecting call whose awaiting caller's continuation comes next, before the
        /// request starts (``deliver(to:isolation:)``).
        case awaiting
        /// A collecting call with a completion handler.
        case completion(@Sendable (Result<CollectedResponse, TransportError>) -> Void)
        /// A collecting call's awaiting caller (its continuation held as is, not in a closure).
        case continuation(UnsafeContinuation<Result<CollectedResponse, TransportError>, Never>)
        /// A stream: the head goes to the caller as it comes, the body through a ``BodyStream``.
        case stream(StreamingHandler)
        /// A prepared call: the collected response is lent to its handler at the end.
        case lent(LentSink)
        /// The call is over and its result handed on.
        case delivered
    }

    /// Where the result of an `.awaiting` call goes; called before the request starts, on
    /// the caller's executor. `isolation`: the caller's actor, if it is on one.
    func deliver(to continuation: UnsafeContinuation<Result<CollectedResponse, TransportError>, Never>,
                 isolation: (any Actor)?) {
        self.delivery = .continuation(continuation)
        self.callerResumption = CallerResumption(isolation: isolation)
    }

    func didReceiveHead(_ head: ParsedHead) throws(TransportError) {
        if case .stream(let handler) = self.delivery {
            handler.noteDetails(self.details(endedAt: nil))
            handler.didReceiveHead(head, of: self)
            return
        }
        self.collected.head = head
        let status = head.status.code
        // The head of a HEAD, 204 or 304 answer describes a body that never comes.
        if !self.isHead, status != 204, status != 304, let length = head.fields.firstNumber(ofTracked: .contentLength) {
            if length > self.collected.maxBodySize { throw self.tooLarge() }
            self.collected.body.reserveCapacity(min(length, 4 << 20))
        }
    }

    /// Body bytes for the caller; false pauses reading.
    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Bool {
        if case .stream(let handler) = self.delivery { return handler.didReceiveBody(bytes) }
        if self.collected.body.count + bytes.count > self.collected.maxBodySize { throw self.tooLarge() }
        self.collected.body.append(contentsOf: bytes)
        return true
    }

    func didFinish(trailers: HTTPFields?, details: ResponseDetails) {
        if case .stream(let handler) = self.delivery {
            self.letGo()
            handler.didFinish(trailers: trailers, details: details)
            return
        }
        guard let head = self.collected.head.take() else {
            self.didFail(TransportError(.invalidResponse, detail: "response ended without a head"))
            return
        }
        // The body moves into the response: the owner keeps no second reference to it. The
        // response is made in place in the result, its parts moved in.
        var body: [UInt8] = []
        swap(&body, &self.collected.body)
        self.complete(.success(CollectedResponse(parsedHead: head, body: body, trailers: trailers, version: details.version,
                                                  metrics: details.metrics, extras: details.extras)))
    }

    /// A prepared call's response, lent to its handler for the handler's duration from a
    /// buffer only this call holds, then freed. Trailers are not lent.
    private func lend(to sink: LentSink, endedAt end: Deadline) {
        guard let head = self.collected.head.take() else {
            self.didFail(TransportError(.invalidResponse, detail: "response ended without a head"))
            return
        }
        self.delivery = .delivered
        self.letGo()
        var body: [UInt8] = []
        swap(&body, &self.collected.body)
        body.withUnsafeBytes { body in
            sink.finish(LentResponse(head: head, body: body, owner: self, endedAt: end))
        }
        // The handler has returned: nothing of this call is reachable any more. A prepared
        // call's owner serves its next call on this loop, its body buffer kept (if modest).
        if let recycler = self.recycler, self.metrics.version.major == 1, recycler.loop.inEventLoop {
            if body.capacity <= OwnerRecycler.maxKeptBodyCapacity {
                body.removeAll(keepingCapacity: true)
                self.collected.body = body
            }
            recycler.recycle(self)
        }
    }

    func didFail(_ error: TransportError) {
        if case .stream(let handler) = self.delivery {
            self.letGo()
            handler.didFail(error)
            return
        }
        if case .lent(let sink) = self.delivery {
            if self.collected.head != nil { self.collected.head = nil }
            if !self.collected.body.isEmpty { self.collected.body = [] }
            self.delivery = .delivered
            self.letGo()
            sink.fail(error)
            return
        }
        self.complete(.failure(error))
    }

    /// `result` is moved, not copied, to where it goes (a response is a few references).
    /// From here on the owner is only the caller's handle, if they kept it (see ``letGo()``).
    private func complete(_ result: consuming Result<CollectedResponse, TransportError>) {
        // A handle a caller keeps must not keep the response.
        if self.collected.head != nil { self.collected.head = nil }
        if !self.collected.body.isEmpty { self.collected.body = [] }
        self.letGo()
        switch self.delivery {
        case .completion(let completion):
            // Nor the caller's closure, and what it captured.
            self.delivery = .delivered
            completion(result)
        case .continuation:
            // Resumed with the others of this turn of the loop, as one batch.
            self.heldResult = consume result
            self.runAtEndOfTurn()
        case .awaiting, .stream, .lent, .delivered:
            // Every collecting call is started after its continuation is given: unreachable.
            assertionFailure("a collected response with nowhere to go")
        }
    }

    func endOfTurn() {
        guard case .continuation(let continuation) = self.delivery, let result = self.heldResult.take() else { return }
        // Resumed once: the continuation is forgotten with it.
        self.delivery = .delivered
        self.callerResumption.resume(.collected(continuation, result))
    }

    private func tooLarge() -> TransportError {
        TransportError(.bodyTooLarge, phase: .readBody, detail: "more than \(self.collected.maxBodySize) bytes")
    }
}
