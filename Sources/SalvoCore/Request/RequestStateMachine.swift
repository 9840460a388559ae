import HTTPTypes
import SalvoTransport

/// The life of one request, from the call to its end, across every connection it tries and
/// every redirect it follows — with no I/O: facts in, decisions out.
///
/// Theory of operation: a request waits (in a pool's queue, on its way between loops, or in a
/// pipelined connection's line), then a connection takes it and the exchange runs; its head
/// either goes to the caller, or names a redirect whose body is skipped. When an exchange ends,
/// the connection reports what it saw (``ExchangeFacts``); this machine alone decides whether
/// the request is sent again, follows a redirect, completes or fails. Lower layers never
/// resubmit a request: they report, and the request's owner carries out the decision.
///
/// | state      | event                               | next                 | decision                        |
/// |------------|-------------------------------------|----------------------|---------------------------------|
/// | waiting    | connection took it                  | exchanging           | (attempt counted)               |
/// | waiting    | taken idle connection found closed  | waiting              | send again, fresh (nothing sent)|
/// | waiting    | its line ended before its turn      | waiting              | send again, or fail when spent  |
/// | exchanging | head, not a redirect to follow      | receiving            | deliver                         |
/// | exchanging | head of a redirect (or its refusal) | skipping             | skip the body                   |
/// | receiving  | response ended                      | finished             | complete                        |
/// | skipping   | response ended (or body abandoned)  | waiting / finished   | follow the redirect / fail      |
/// | exchanging | peer closed a reused connection, no response byte | waiting | send again once, fresh (rules below) |
/// | exchanging | server refused it unprocessed (HTTP/2) | waiting            | send again, fresh, if replayable |
/// | any        | failure, cancellation, timeout      | finished             | fail                            |
///
/// Sending again is bounded, whatever asks for it: a hop is taken by at most
/// ``AttemptRecord/maxConnectionsPerHop`` connections, and sent again after any of its bytes
/// may have reached a server at most once — only when its method is idempotent and its body
/// can be replayed (RFC 9110 §9.2.2), and only after a reused keep-alive connection closed
/// before any byte of the answer came (the server's idle close racing the request). A fresh
/// connection that closes at once is the server's answer, not a race: the request fails.
///
/// Every failure says whether the call may have been processed: once any hop was answered
/// (a redirect) or any attempt's bytes went out, it may have, whatever the last error was.
struct RequestStateMachine {
    enum State: Equatable {
        /// For a connection: queued in a pool, moving between loops, or in a connection's line.
        case waiting
        /// On a connection: the request is being written, its response head awaited.
        case exchanging
        /// The head went to the caller; the body follows.
        case receiving
        /// A redirect's (or a refused redirect's) head came: its body is read and dropped, then
        /// `target` is acted on. `abandoned`: the body was not worth reading to its end, and
        /// the connection is closed for it.
        case skipping(SkipTarget, abandoned: Bool)
        case finished
    }

    /// What a skipped body leads to.
    enum SkipTarget: Equatable {
        case redirect(Redirect)
        /// A redirect that must not be followed: the call fails with this once the body is skipped.
        case refusal(TransportError)
    }

    /// The next request of a redirect chain.
    struct Redirect: Equatable {
        var request: HTTPRequest
        /// Whether the body goes with it (307, 308).
        var keepBody: Bool
    }

    /// What becomes of a response head.
    enum HeadAction: Equatable {
        /// It goes to the caller.
        case deliver
        /// It goes to the caller, a redirect that could not be followed, for this reason.
        case deliverUnfollowed(String)
        /// Its body is read and dropped: a redirect (or its refusal) follows.
        case skipBody
    }

    /// What the owner does once an exchange ended (or never started).
    enum Decision: Equatable {
        /// Hand the end of the response over.
        case complete
        /// Back to the pool: on a new connection (`fresh`), first in the queue (`urgent`).
        case sendAgain(fresh: Bool, urgent: Bool)
        /// Prepare the redirect's request and send it (the next hop).
        case follow(Redirect)
        /// End the call with this error.
        case fail(TransportError)
    }

    private(set) var state: State = .waiting
    private(set) var attempt = AttemptRecord()
    /// Whether this hop's method may be sent twice, and its body: whether there is one and
    /// whether it can be sent twice. (A flag, not the method: the method's string would be one
    /// more reference counted per request.)
    private var idempotent: Bool
    private var hasBody: Bool
    private var replayableBody: Bool
    /// The chain's redirects so far: made at its first redirect response (most have none),
    /// and kept behind one reference, so that a call without redirects carries a pointer, not
    /// the rules' whole record, in its owner.
    var redirects: RedirectState? { self.redirectRecord?.state }
    private var redirectRecord: RedirectRecord?

    /// `idempotent`: whether the method may be sent twice (``isIdempotent(_:)``), which the
    /// request's shape knows already.
    init(idempotent: Bool, hasBody: Bool, replayableBody: Bool) {
        self.idempotent = idempotent
        self.hasBody = hasBody
        self.replayableBody = replayableBody
    }

    init(method: HTTPRequest.Method, hasBody: Bool, replayableBody: Bool) {
        self.init(idempotent: Self.isIdempotent(method), hasBody: hasBody, replayableBody: replayableBody)
    }

    var isFinished: Bool {
        // A pattern, not `==`: comparing the enum runs its generic equality over the payloads.
        if case .finished = self.state { return true }
        return false
    }

    /// Whether a connection carries the request now (its exchange is under way).
    var isOnConnection: Bool {
        switch self.state {
        case .exchanging, .receiving, .skipping: true
        case .waiting, .finished: false
        }
    }

    /// RFC 9110 §9.2.2: a request whose method is idempotent may be sent twice; POST and
    /// PATCH never are, automatically.
    static func isIdempotent(_ method: HTTPRequest.Method) -> Bool {
        method == .get || method == .head || method == .options || method == .trace || method == .put || method == .delete
    }

    // MARK: Events

    /// A connection took the request: it runs there now, or waits in that connection's line.
    /// `reused`: a connection that waited in the pool (after a request, or opened for one that
    /// went elsewhere), which the server may have closed meanwhile — not one opened for this.
    mutating func connectionTook(reused: Bool) {
        guard case .waiting = self.state else { return }
        if reused { self.attempt.reusedConnections += 1 } else { self.attempt.freshConnections += 1 }
        self.state = .exchanging
    }

    /// An idle connection the pool handed over turned out closed (or sent something unasked)
    /// before any of the request was written: nothing was sent, so it goes again, fresh.
    mutating func connectionStale() -> Decision {
        guard case .waiting = self.state else { return .fail(self.ended(Self.notWaiting)) }
        self.attempt.reusedConnections += 1
        guard self.attempt.connectionsLeft else {
            // Still the pool's to find a connection: nothing of the request went out.
            return .fail(self.ended(TransportError(
                .remoteClosed, phase: .pool,
                detail: "\(self.attempt.connectionsTried) idle connections were found closed before the request could go")))
        }
        return .sendAgain(fresh: true, urgent: true)
    }

    /// The connection whose line the request waited in ended before answering it.
    /// `bytesWritten`: of this request (it may have been processed when any went out);
    /// `connectionFailed`: the connection broke, rather than closed in order.
    mutating func leftLine(bytesWritten: Int, connectionFailed: Bool) -> Decision {
        if bytesWritten > 0 { self.attempt.mayHaveReachedServer = true }
        guard case .exchanging = self.state else { return .fail(self.ended(Self.notWaiting)) }
        self.state = .waiting
        guard self.attempt.connectionsLeft else {
            return .fail(self.ended(TransportError(
                .remoteClosed, phase: .readHead,
                detail: "\(self.attempt.connectionsTried) connections ended before this pipelined request was answered")))
        }
        if bytesWritten > 0 && connectionFailed {
            // Its bytes went out on a connection that broke: this is its one send-again.
            guard !self.attempt.resentAfterWrite else {
                return .fail(self.ended(TransportError(
                    .remoteClosed, phase: .readHead, detail: "the connection failed before this pipelined request was answered, twice")))
            }
            self.attempt.resentAfterWrite = true
        }
        return .sendAgain(fresh: false, urgent: true)
    }

    /// The response head arrived, of a status that is no redirect to follow (or with redirects off).
    mutating func headArrived(status: Int) -> HeadAction {
        if case .exchanging = self.state { self.state = .receiving }
        return .deliver
    }

    /// The response head arrived for `request`, the request as sent on this hop; `policy`:
    /// how redirects are followed (nil: they are not).
    mutating func headArrived(status: Int, location: String?, request: HTTPRequest, policy: RedirectPolicy?) -> HeadAction {
        guard case .exchanging = self.state else { return .deliver }
        if let policy, RedirectState.isRedirect(status) {
            var redirects = self.redirects ?? RedirectState(policy: policy)
            defer { self.redirectRecord = RedirectRecord(redirects) }
            do {
                switch try redirects.decide(request: request, status: status, location: location, hasBody: self.hasBody,
                                            replayableBody: self.replayableBody) {
                case .deliver:
                    break
                case .deliverUnfollowed(let reason):
                    self.state = .receiving
                    return .deliverUnfollowed(reason)
                case .follow(let next, let keepBody):
                    self.attempt.answeredHops += 1
                    self.state = .skipping(.redirect(Redirect(request: next, keepBody: keepBody)), abandoned: false)
                    return .skipBody
                }
            } catch {
                self.attempt.answeredHops += 1
                self.state = .skipping(.refusal(error), abandoned: false)
                return .skipBody
            }
        }
        self.state = .receiving
        return .deliver
    }

    /// The body being skipped is not read to its end (too long, or it runs to the close):
    /// the connection is closed for it, and what it led to stands.
    mutating func skippedBodyAbandoned() {
        if case .skipping(let target, abandoned: false) = self.state {
            self.state = .skipping(target, abandoned: true)
        }
    }

    /// Whether the response's body is being read and dropped (a redirect's).
    var isSkippingBody: Bool {
        if case .skipping = self.state { return true }
        return false
    }

    /// The response ended on the wire.
    mutating func responseEnded() -> Decision {
        switch self.state {
        case .skipping(let target, _):
            return self.afterSkipping(target)
        case .receiving:
            self.state = .finished
            return .complete
        case .waiting, .exchanging, .finished:
            return .fail(self.ended(TransportError(.invalidResponse, detail: "response ended without a head")))
        }
    }

    /// The exchange ended without a whole response: the connection's error and what it saw.
    mutating func exchangeFailed(_ error: TransportError, facts: ExchangeFacts) -> Decision {
        if facts.requestBytesWritten > 0 && !facts.refusedUnprocessed { self.attempt.mayHaveReachedServer = true }
        switch self.state {
        case .exchanging where facts.refusedUnprocessed:
            // Not processed, by the server's own word: it may go again on another connection,
            // if what it sends can be sent again.
            guard self.attempt.connectionsLeft, facts.requestBytesWritten == 0 || !self.hasBody || self.replayableBody else { break }
            self.state = .waiting
            return .sendAgain(fresh: true, urgent: true)
        case .skipping(let target, abandoned: true):
            // Closed because the redirect's body was not worth reading: the redirect stands.
            return self.afterSkipping(target)
        case .exchanging where facts.closedByPeer && facts.reusedConnection && facts.responseBytesRead == 0:
            // A keep-alive connection the server closed as the request went out: its idle close
            // raced the request, and no byte of an answer came.
            guard self.attempt.connectionsLeft else { break }
            if facts.requestBytesWritten == 0 {
                self.state = .waiting
                return .sendAgain(fresh: true, urgent: true)
            }
            guard self.idempotent, self.replayableBody, !self.attempt.resentAfterWrite else { break }
            self.attempt.resentAfterWrite = true
            self.state = .waiting
            return .sendAgain(fresh: true, urgent: true)
        default:
            break
        }
        return .fail(self.ended(self.placed(error, facts: facts)))
    }

    /// A cancellation with the phase the exchange was in: it reaches the connection without
    /// knowing how far the exchange got. Other errors keep what their source said.
    private func placed(_ error: TransportError, facts: ExchangeFacts) -> TransportError {
        guard error.phase == nil, error.code == .cancelled else { return error }
        var error = error
        switch self.state {
        case .receiving, .skipping: error.phase = .readBody
        case .exchanging: error.phase = facts.requestSent || facts.responseBytesRead > 0 ? .readHead : .write
        case .waiting, .finished: break
        }
        return error
    }

    /// The call ends with `error`, whatever it was doing (cancelled, timed out, its connection
    /// could not be made, the client shut down). Returns the error as the caller gets it.
    mutating func ended(_ error: TransportError) -> TransportError {
        self.state = .finished
        var error = error
        if self.attempt.answeredHops > 0 || self.attempt.mayHaveReachedServer {
            // An earlier hop was answered, or an earlier attempt's bytes went out: whatever
            // this last failure was, the server may have acted on the call.
            error.earlierStepMayHaveBeenProcessed = true
        }
        return error
    }

    /// The next hop of a redirect chain begins, once its request is prepared.
    mutating func startHop(idempotent: Bool, hasBody: Bool, replayableBody: Bool) {
        self.idempotent = idempotent
        self.hasBody = hasBody
        self.replayableBody = replayableBody
        self.attempt.startHop()
        self.state = .waiting
    }

    /// A new call of the same request (a prepared call's owner serving its next call):
    /// as a new machine, without a body.
    mutating func restart(idempotent: Bool) {
        if case .waiting = self.state {} else { self.state = .waiting }
        self.attempt = AttemptRecord()
        self.idempotent = idempotent
        self.hasBody = false
        self.replayableBody = true
        if self.redirectRecord != nil { self.redirectRecord = nil }
    }

    /// The call is over: what the redirects recorded (their URLs) is no longer needed.
    mutating func letGo() {
        if self.redirectRecord != nil { self.redirectRecord = nil }
    }

    private mutating func afterSkipping(_ target: SkipTarget) -> Decision {
        switch target {
        case .redirect(let redirect):
            self.state = .waiting
            return .follow(redirect)
        case .refusal(let error):
            return .fail(self.ended(error))
        }
    }

    /// An event that finds the request not where it should be: the owner's bug, reported
    /// as a failure rather than trapped.
    private static let notWaiting = TransportError(.cancelled, phase: .request, detail: "the request was not waiting for a connection")
}

/// What one request has been through: the connections that took it, whether any of its bytes
/// may have reached a server, and what its redirect chain was answered.
struct AttemptRecord: Equatable {
    /// Connections that may take one hop of a request: the first, and those it is sent again on.
    static let maxConnectionsPerHop = 4

    /// This hop's connections: opened for it, or taken from the pool's idle ones.
    var freshConnections = 0
    var reusedConnections = 0
    /// This hop was sent again once after its bytes had gone out: never a second time.
    var resentAfterWrite = false
    /// Bytes of the request, on some hop or attempt, may have reached a server.
    var mayHaveReachedServer = false
    /// Responses that earlier hops got: the redirects followed or refused.
    var answeredHops = 0

    var connectionsTried: Int { self.freshConnections + self.reusedConnections }
    /// Whether another connection may take this hop.
    var connectionsLeft: Bool { self.connectionsTried < Self.maxConnectionsPerHop }

    mutating func startHop() {
        self.freshConnections = 0
        self.reusedConnections = 0
        self.resentAfterWrite = false
    }
}

/// What a connection saw of an exchange that ended without a whole response: reported to the
/// request's owner, which decides what follows.
struct ExchangeFacts: Equatable {
    /// The connection waited in the pool before it took the request (it had carried an
    /// earlier one, or was opened for one that went elsewhere): a close may be the server's
    /// idle close racing the request.
    var reusedConnection: Bool
    /// Bytes of the request written (0: none of it can have reached the server).
    var requestBytesWritten: Int
    /// Bytes of the response read (0: the server answered nothing).
    var responseBytesRead: Int
    /// The peer closed or reset the connection (not a timeout, a cancellation or a protocol error).
    var closedByPeer: Bool
    /// Every byte of the request went out (its head, and its body to the end).
    var requestSent = false
    /// The server said it never processed the request: HTTP/2's REFUSED_STREAM, or a GOAWAY
    /// whose last stream id is below the request's (RFC 9113 §8.7).
    var refusedUnprocessed = false
}

/// A redirect chain's ``RedirectState``, boxed (see ``RequestStateMachine/redirects``).
/// Immutable: a change stores a new box, so a copied machine never sees another's redirects.
final class RedirectRecord: Sendable {
    let state: RedirectState

    init(_ state: RedirectState) {
        self.state = state
    }
}
