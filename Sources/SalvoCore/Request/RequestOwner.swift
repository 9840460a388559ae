@_spi(Benchmarks) import SalvoTransport
import HTTPTypes
import Synchronization

/// The one owner of a request, from the call to its end: the request and its redirect hops,
/// the connections it tries, the response on its way to the caller, and the caller's handle
/// on all of it.
///
/// Decisions are not made here but by its ``RequestStateMachine``: connections and pools
/// report facts (a head arrived, the connection closed before any byte of an answer, the
/// line it waited in ended, a waiting deadline passed), the machine decides (deliver, skip a
/// redirect's body, send again, follow, complete, fail), and the owner carries it out — the
/// only place a request is sent again or a redirect followed. The same owner runs a request
/// over any connection that reports these facts.
///
/// Its parts, one value each: the request prepared for this hop (``PreparedRequest``), where
/// it is (``Placement``), the response as it arrives (``Reception``, this file's
/// `+Response`), what it measured (``ExchangeMetrics``), where the response goes (`+Response`),
/// and how other threads reach it (`+Remote`). One object per request — one at a time: a
/// prepared call's owner, once its call is wholly over, may serve the call's next call on the
/// same loop (``OwnerRecycler``, ``restart(head:body:startedAt:deadline:headDeadline:delivery:maxBodySize:)``),
/// a handle from the earlier call naming it by its generation.
///
/// Loop-confined: made on the caller's thread, then run and ended on one event loop's thread
/// (the loop it moves to, if it moves); only `+Remote`'s methods are called from other
/// threads, and they reach the loop through its queue. Stored properties are
/// `@exclusivity(unchecked)`: touched by one thread at a time, and no access to a property
/// spans a call that could reach it again, so Swift's dynamic exclusivity checks (12% of the
/// API path's user CPU when measured) buy nothing here.
///
/// @unchecked Sendable: handed from the caller's thread to its loop whole, touched on that
/// loop's thread only from then on; `place` is behind its lock.
final class RequestOwner: @unchecked Sendable {
    /// Where the request is now.
    enum Placement {
        /// Not in a pool (being made, or between two attempts or hops).
        case none
        /// In its loop's pool, waiting for a connection.
        case queued
        /// On its way from one loop's pool to another's, which has an idle connection.
        case moving
        case running(any ExchangeCarrier)
        /// Written on a carrier behind the request it is answering, waiting its turn.
        case inLine(any ExchangeCarrier)
        case finished
    }

    // MARK: The request

    /// The request of the current hop, as the caller's thread (or, for a redirect, the loop)
    /// prepared it, moved here whole. The accessors below lend its parts (`_read`) rather
    /// than return copies, so reading one counts none of its references.
    @exclusivity(unchecked) private(set) var prepared: PreparedRequest
    /// Its connection key: read a few times per request (the pool compares it to its last
    /// host's), and lent, not copied (a copy counts the references of its strings).
    var key: ConnectionKey { _read { yield self.prepared.key } }
    @exclusivity(unchecked) private(set) var isHead: Bool
    /// Whether the method may be sent twice (RFC 9110 §9.2.2). One that may not must not meet
    /// a connection the server may have closed: connections check for it before such a request.
    @exclusivity(unchecked) private(set) var isIdempotent: Bool
    var tls: TLSContext? { _read { yield self.prepared.tls } }
    var head: [UInt8] { _read { yield self.prepared.head } }
    var body: [UInt8] { _read { yield self.prepared.body } }
    var stream: StreamSource? { _read { yield self.prepared.stream } }
    var deadline: Deadline { self.prepared.deadline }
    /// When the response head must have come; distant future without a head timeout.
    var headDeadline: Deadline { self.prepared.headDeadline }
    /// How long the head may take after the request's last byte went out (see ``PreparedRequest``).
    var headTimeout: Duration? { self.prepared.headTimeout }
    var readTimeout: Duration? { self.prepared.readTimeout }
    var closeAfter: Bool { self.prepared.closeAfter }
    var expectsContinue: Bool { self.prepared.expectsContinue }
    /// How long the body waits for 100 Continue before it goes anyway.
    let continueTimeout: Duration
    /// The longest the socket may refuse the request's bytes (nil: no limit).
    var writeTimeout: Duration? { self.prepared.shape.writeTimeout }
    /// Told of each head as it arrives (``HTTPClient/RequestOptions/headObserver``).
    var headObserver: (@Sendable (ReceivedHead) -> Void)? { self.prepared.shape.headObserver }
    /// Prepares a redirect's next request under the client's rules; let go of when the call is over.
    @exclusivity(unchecked) private var preparer: RequestPreparer?

    // MARK: Its life

    /// Every decision about the request: see ``RequestStateMachine``.
    @exclusivity(unchecked) var machine: RequestStateMachine
    @exclusivity(unchecked) var placement: Placement = .none
    /// Its wait for a connection, kept by the pool that queues it.
    @exclusivity(unchecked) var wait = PoolWait()
    /// Where placement counted the request as on its way to its loop; told (and dropped) when
    /// the request gets there.
    @exclusivity(unchecked) private var arrival: HostBudget.ShardCounts?

    // MARK: The response

    /// This hop's response as it arrives: its decoding and what is skipped (`+Response`).
    @exclusivity(unchecked) var reception = Reception()
    /// Clock readings and counters for the caller's metrics.
    @exclusivity(unchecked) var metrics = ExchangeMetrics()
    /// Where the response goes (`+Response`).
    @exclusivity(unchecked) var delivery: Delivery
    /// A collected response as it comes together (unused by a stream).
    @exclusivity(unchecked) var collected: Collected
    /// The result for an awaiting caller, held until the loop's turn ends (see
    /// ``EventLoop/deferToEndOfTurn(_:)``).
    @exclusivity(unchecked) var heldResult: Result<CollectedResponse, TransportError>?
    /// How the awaiting caller is resumed (see ``EventLoop/resume(fromPool:priority:)``).
    @exclusivity(unchecked) var callerResumption = CallerResumption()

    // MARK: Other threads

    /// Where the request is, for the caller's thread (`+Remote`).
    let place: Mutex<RemotePlace>
    /// Which call this is, as the loop sees it (``RemotePlace/generation``, for other threads).
    @exclusivity(unchecked) private(set) var generation: UInt32 = 0
    /// Where a prepared call's owner goes once its call is over, to serve the next one
    /// (set while the owner serves a call; nil for every other owner).
    @exclusivity(unchecked) var recycler: OwnerRecycler?

    /// An owner for `prepared`, placed on `loop` of `client`; the response goes to `delivery`
    /// (collected up to `maxBodySize` bytes, or streamed).
    init(_ prepared: consuming PreparedRequest, client: HTTPClient, loop: EventLoop, delivery: Delivery, maxBodySize: Int = .max) {
        // Told once, through `arrival`; the copy kept in `prepared` would be a second count.
        self.arrival = prepared.arrival.take()
        // Read in place (no local copy of a part: each would be one more count).
        self.isHead = prepared.shape.isHead
        self.isIdempotent = prepared.shape.isIdempotent
        self.machine = RequestStateMachine(idempotent: prepared.shape.isIdempotent, hasBody: prepared.requestBody != nil,
                                           replayableBody: prepared.requestBody?.isReplayable ?? true)
        // Needed only to follow a redirect: a request that follows none holds no count on it.
        self.preparer = prepared.shape.redirects != nil ? client.preparer : nil
        self.continueTimeout = client.configuration.expectContinueTimeout
        self.metrics.startedAt = prepared.startedAt
        self.delivery = delivery
        self.collected = Collected(maxBodySize: maxBodySize)
        self.prepared = consume prepared
        self.place = Mutex(RemotePlace(pool: LoopBound(client.poolReference(on: loop), loop: loop)))
    }

    /// Makes this owner, whose last call is over, the owner of a new call of the same prepared
    /// request (``OwnerRecycler``): a fresh request life in the same object, its shape kept.
    /// Each part is set as a new owner has it, in place — what a finished call left behind is
    /// cleared, and only that (a whole new value would destroy every field of the old one).
    /// On its loop's thread.
    func restart(head: [UInt8], body: [UInt8], startedAt: Deadline, deadline: Deadline, headDeadline: Deadline,
                 delivery sink: LentSink, maxBodySize: Int) {
        self.generation &+= 1
        let generation = self.generation
        self.place.withLock { place in
            place.generation = generation
            place.cancelled = false
            place.moving = false
        }
        // Made on the loop it runs on: no placement to tell.
        if self.arrival != nil { self.arrival = nil }
        self.prepared.head = head
        self.prepared.body = body
        self.prepared.startedAt = startedAt
        self.prepared.deadline = deadline
        self.prepared.headDeadline = headDeadline
        self.machine.restart(idempotent: self.isIdempotent)
        self.placement = .none
        self.wait = PoolWait()
        self.reception.reset()
        self.metrics.restart(startedAt: startedAt)
        self.delivery = .lent(sink)
        if self.collected.head != nil { self.collected.head = nil }
        self.collected.maxBodySize = maxBodySize
        if self.heldResult != nil { self.heldResult = nil }
        // `callerResumption` is a collecting caller's: a prepared call's owner never sets it.
    }

    /// Tells placement the request reached the loop it was placed on (or never will); true
    /// if it had been placed there from outside the loops.
    func settleArrival() -> Bool {
        guard let arrival = self.arrival else { return false }
        self.arrival = nil
        arrival.arrived()
        return true
    }

    var isFinished: Bool { self.machine.isFinished }

    // MARK: Where it is (reported by pools and connections)

    /// A pool queued the request.
    func queued() {
        self.placement = .queued
    }

    /// The request left its pool for another loop's.
    func moving() {
        self.placement = .moving
    }

    /// Which deadline ended a wait that passed its deadline at `now`.
    func waitExpiry(at now: Deadline) -> TransportError.Code {
        now >= self.deadline ? .totalTimeout : now >= self.headDeadline ? .headTimeout : .poolWaitTimeout
    }

    /// `.pool` while the request waits for a connection (nothing of it sent), else nil.
    var waitingPhase: TransportError.Phase? {
        switch self.placement {
        case .none, .queued, .moving: .pool
        case .running, .inLine, .finished: nil
        }
    }

    /// `connection` runs the request now. `setup`: the phases of a connection opened for it.
    /// `fromIdle`: the connection waited in the pool (after a request, or opened for one that
    /// went elsewhere), so the server may have closed it meanwhile.
    func connectionTook(_ carrier: any ExchangeCarrier, reused: Bool, fromIdle: Bool, setup: ConnectionSetup?, at now: Deadline) {
        self.placement = .running(carrier)
        self.wait.wantsFreshConnection = false
        self.machine.connectionTook(reused: fromIdle)
        self.metrics.runAt = now
        self.metrics.reusedConnection = reused
        self.metrics.endpoints = carrier.endpoints
        if !reused {
            self.metrics.connectionSetup = setup
            self.metrics.connectionsOpened += 1
        }
    }

    /// The carrier has the request in hand (written or being written): the caller's connection
    /// observer hears of it now, when anything it does — a cancellation — finds the request
    /// where it is.
    func connectionStarted(on carrier: any ExchangeCarrier, reused: Bool) {
        guard let observer = self.prepared.shape.connectionObserver else { return }
        observer(ConnectionReport(version: carrier.httpVersion, reused: reused, remote: carrier.endpoints.remote,
                                  local: carrier.endpoints.local))
    }

    /// The request was written behind another on `connection`, and waits for its answer.
    func joinedLine(of carrier: any ExchangeCarrier) {
        self.placement = .inLine(carrier)
        self.machine.connectionTook(reused: true)
        self.metrics.reusedConnection = true
        self.metrics.endpoints = carrier.endpoints
    }

    /// The request's turn came in its connection's line.
    func lineMovedOn(to carrier: any ExchangeCarrier, at now: Deadline) {
        self.placement = .running(carrier)
        self.metrics.runAt = now
    }

    // MARK: Facts that end an attempt

    /// An idle connection the pool handed over was found closed before the request went out.
    func connectionStale() {
        self.carryOut(self.machine.connectionStale())
    }

    /// The connection whose line the request waited in ended before its turn.
    func leftLine(bytesWritten: Int, connectionFailed: Bool) {
        self.placement = .none
        self.carryOut(self.machine.leftLine(bytesWritten: bytesWritten, connectionFailed: connectionFailed))
    }

    /// The exchange ended without a whole response; the connection has already left the
    /// request (and told its pool).
    func exchangeFailed(_ error: TransportError, facts: ExchangeFacts) {
        self.placement = .none
        self.carryOut(self.machine.exchangeFailed(error.with(host: self.key.host), facts: facts))
    }

    /// The call ends with `error` wherever the request is (a wait that timed out, a
    /// connection that could not be made, a cancellation, a shutdown). Once.
    func fail(_ error: TransportError) {
        guard !self.isFinished else { return }
        self.deliverFailure(self.machine.ended(error.with(host: self.key.host)))
    }

    // MARK: Carrying out decisions

    /// Does what the machine decided. `trailers` and `now`: of a response that ended.
    func carryOut(_ decision: RequestStateMachine.Decision, trailers: HTTPFields? = nil, at now: Deadline? = nil) {
        switch decision {
        case .complete:
            self.placement = .finished
            // A success: a body still being written was answered before it was all sent.
            self.prepared.requestBody?.requestEnded(.serverAnsweredEarly)
            self.completeBody(trailers: trailers, at: now ?? .now())
        case .sendAgain(let fresh, let urgent):
            self.placement = .none
            guard !self.cancelledMeanwhile() else { return }
            self.submitToPool(fresh: fresh, urgent: urgent)
        case .follow(let redirect):
            guard !self.cancelledMeanwhile() else { return }
            self.follow(redirect)
        case .fail(let error):
            self.deliverFailure(error)
        }
    }

    /// Whether the caller cancelled while the request was between two places (off a
    /// connection, not yet in a pool), where a cancellation finds nothing to stop: if so, the
    /// call ends here instead of going on.
    private func cancelledMeanwhile() -> Bool {
        guard self.isCancelled else { return false }
        self.deliverFailure(self.machine.ended(.cancelled(.caller, phase: .pool).with(host: self.key.host)))
        return true
    }

    /// Ends the call with `error`, already decided by the machine.
    func deliverFailure(_ error: TransportError) {
        self.placement = .finished
        self.prepared.requestBody?.requestEnded()
        // Counted in its host's statistics (on its loop; a call its loop never took is not).
        let pool = self.place.withLock { $0.pool }
        if pool.loop.inEventLoop { pool.value.countFailure(of: self.key) }
        self.didFail(error)
    }

    /// Hands the request to the pool of the loop it is on (sending it again, or a redirect's
    /// next request).
    private func submitToPool(fresh: Bool, urgent: Bool = false) {
        self.wait.wantsFreshConnection = fresh
        let pool = self.place.withLock { $0.pool }
        if urgent, pool.value.configuration.observer != nil {
            // Sent again after its connection failed under it.
            pool.value.hostObserver(for: self.key)?.requestRetried()
        }
        pool.value.submit(self, fresh: fresh, urgent: urgent)
    }

    /// Prepares the redirect's request and sends it on the loop of the one that led to it
    /// (every loop of the client can reach every host), under the first request's deadlines.
    private func follow(_ redirect: RequestStateMachine.Redirect) {
        var body = self.prepared.requestBody
        if !redirect.keepBody {
            // The next request goes without it: the body is done with.
            body?.requestEnded()
            body = nil
        }
        var next: PreparedRequest
        do throws(TransportError) {
            // Let go of only once the call is over, which a redirect to follow is not.
            guard let preparer = self.preparer else {
                throw .cancelled(.internal, phase: .request, detail: "redirect after the request ended")
            }
            next = try preparer.prepare(redirect.request, body: body, options: self.prepared.options, redirectedFrom: self.key)
        } catch {
            self.deliverFailure(self.machine.ended(error.with(host: self.key.host)))
            return
        }
        next.deadline = self.prepared.deadline
        next.headDeadline = self.prepared.headDeadline
        next.headTimeout = self.prepared.headTimeout
        next.startedAt = self.prepared.startedAt
        self.isHead = next.isHead
        self.isIdempotent = next.isIdempotent
        self.machine.startHop(idempotent: next.isIdempotent, hasBody: body != nil, replayableBody: body?.isReplayable ?? true)
        self.prepared = next
        self.reception = Reception()
        self.metrics.startHop()
        self.placement = .none
        // A request that must not be sent twice (a POST replayed for a 307) goes on a fresh
        // connection: the one the redirect came on may be closing unannounced, its FIN not
        // here yet, and a request that met it could not be sent again.
        self.submitToPool(fresh: !self.isIdempotent)
    }

    /// The call is over, but the owner may live on as the caller's handle (a
    /// ``RequestHandle`` kept as long as the caller likes): let go of what is large or keeps
    /// others alive — the preparer (and the client's configuration), the request's body,
    /// decoding and redirect state, a stream's handler, and the options' observers, TLS and
    /// proxy configuration when the request's shape is its own (``RequestShape/lettingGo()``;
    /// a prepared call's shape is the call's, kept by it anyway). The key and placement stay:
    /// the pool may still read them.
    func letGo() {
        self.preparer = nil
        // Only what is there: most requests have no body, stream, decoder or redirects, and
        // storing nil over nil still destroys the old value through its type's witnesses.
        if !self.prepared.body.isEmpty { self.prepared.body = [] }
        if self.prepared.stream != nil { self.prepared.stream = nil }
        if self.prepared.requestBody != nil { self.prepared.requestBody = nil }
        // The caller's code in the options (observers) is let go of with a shape of its own —
        // unless the shape is shared (a prepared call's, kept by the call for all its calls).
        if self.prepared.shape.holdsCallerCode, isKnownUniquelyReferenced(&self.prepared.shape) {
            self.prepared.shape = self.prepared.shape.lettingGo()
        }
        if self.reception.decoder != nil { self.reception = Reception() }
        if self.metrics.hasChainRecord { self.metrics.dropChainRecord() }
        self.machine.letGo()
        if case .stream = self.delivery { self.delivery = .delivered }
    }
}

/// What a pool keeps on a request while it waits for a connection.
struct PoolWait {
    /// Its waiter id in the pool that queues it (ids are that loop's).
    var id = 0
    /// When it stops waiting (for a connection, or in a connection's line): the pool wait
    /// timeout, or its head or total deadline if sooner.
    var deadline = Deadline.distantFuture
    /// When it joined a pool's queue (0: it is not waiting). A request that moves to another
    /// loop keeps it, and its deadline: it has waited that long already.
    var queuedAt = Deadline(nanoseconds: 0)
    /// Its owner asked for a new connection (sending again after a stale one, a 307's POST):
    /// kept while it waits, so that a move to another loop's pool keeps it too.
    var wantsFreshConnection = false
}
