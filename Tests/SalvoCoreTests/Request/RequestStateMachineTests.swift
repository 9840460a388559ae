import HTTPTypes
@testable import SalvoCore
import Testing

/// Every way a request can be sent again, decided by its state machine with no socket: the
/// facts a connection or a pool would report, in; the decision, out.
@Suite struct RequestStateMachineTests {
    typealias Decision = RequestStateMachine.Decision

    static let closed = TransportError(.emptyResponse, phase: .readHead)

    /// One row: a request of `method` (its body replayable or not) whose exchange on a
    /// connection ended as `facts` say.
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var method: HTTPRequest.Method
        var hasBody = false
        var replayable = true
        var facts: ExchangeFacts
        var error = RequestStateMachineTests.closed
        var sentAgain: Bool
        var testDescription: String { self.name }
    }

    static let rows: [Row] = [
        Row(name: "stale reused connection, GET, nothing written", method: .get,
            facts: .init(reusedConnection: true, requestBytesWritten: 0, responseBytesRead: 0, closedByPeer: true), sentAgain: true),
        Row(name: "stale reused connection, POST, nothing written", method: .post, hasBody: true,
            facts: .init(reusedConnection: true, requestBytesWritten: 0, responseBytesRead: 0, closedByPeer: true), sentAgain: true),
        Row(name: "reused connection closed after the request went out, GET", method: .get,
            facts: .init(reusedConnection: true, requestBytesWritten: 80, responseBytesRead: 0, closedByPeer: true), sentAgain: true),
        Row(name: "reused connection closed after the request went out, PUT with bytes", method: .put, hasBody: true,
            facts: .init(reusedConnection: true, requestBytesWritten: 80, responseBytesRead: 0, closedByPeer: true), sentAgain: true),
        Row(name: "reused connection closed after the request went out, POST", method: .post, hasBody: true,
            facts: .init(reusedConnection: true, requestBytesWritten: 80, responseBytesRead: 0, closedByPeer: true), sentAgain: false),
        Row(name: "reused connection closed after the request went out, PATCH", method: .patch, hasBody: true,
            facts: .init(reusedConnection: true, requestBytesWritten: 80, responseBytesRead: 0, closedByPeer: true), sentAgain: false),
        Row(name: "reused connection closed after the request went out, PUT with a one-shot stream", method: .put,
            hasBody: true, replayable: false,
            facts: .init(reusedConnection: true, requestBytesWritten: 80, responseBytesRead: 0, closedByPeer: true), sentAgain: false),
        Row(name: "reused connection closed after part of the answer", method: .get,
            facts: .init(reusedConnection: true, requestBytesWritten: 80, responseBytesRead: 12, closedByPeer: true), sentAgain: false),
        Row(name: "fresh connection closed at once, GET written", method: .get,
            facts: .init(reusedConnection: false, requestBytesWritten: 80, responseBytesRead: 0, closedByPeer: true), sentAgain: false),
        Row(name: "fresh connection closed at once, nothing written", method: .get,
            facts: .init(reusedConnection: false, requestBytesWritten: 0, responseBytesRead: 0, closedByPeer: true), sentAgain: false),
        Row(name: "tunnel closed at once after CONNECT, POST", method: .post, hasBody: true,
            facts: .init(reusedConnection: false, requestBytesWritten: 120, responseBytesRead: 0, closedByPeer: true), sentAgain: false),
        Row(name: "a read timeout on a reused connection", method: .get,
            facts: .init(reusedConnection: true, requestBytesWritten: 80, responseBytesRead: 0, closedByPeer: false),
            error: TransportError(.readTimeout, phase: .readHead), sentAgain: false),
        Row(name: "the caller cancelled on a reused connection", method: .get,
            facts: .init(reusedConnection: true, requestBytesWritten: 0, responseBytesRead: 0, closedByPeer: false),
            error: .cancelled(.caller, phase: .write), sentAgain: false),
    ]

    @Test(arguments: Self.rows)
    func anExchangeThatBroke(_ row: Row) {
        var machine = RequestStateMachine(method: row.method, hasBody: row.hasBody, replayableBody: row.replayable)
        machine.connectionTook(reused: row.facts.reusedConnection)
        let decision = machine.exchangeFailed(row.error, facts: row.facts)
        if row.sentAgain {
            #expect(decision == .sendAgain(fresh: true, urgent: true))
            #expect(machine.state == .waiting)
        } else {
            guard case .fail(let error) = decision else {
                Issue.record("\(row.name): \(decision)")
                return
            }
            #expect(error.code == row.error.code)
            #expect(error.mayHaveBeenProcessed == (row.facts.requestBytesWritten > 0 || row.error.mayHaveBeenProcessed))
            #expect(machine.isFinished)
        }
    }

    /// A request sent again after its bytes went out once is never sent a second time that way.
    @Test func aRequestIsSentAgainAfterItsBytesWentOutOnlyOnce() {
        var machine = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        let raced = ExchangeFacts(reusedConnection: true, requestBytesWritten: 80, responseBytesRead: 0, closedByPeer: true)
        machine.connectionTook(reused: true)
        #expect(machine.exchangeFailed(Self.closed, facts: raced) == .sendAgain(fresh: true, urgent: true))
        machine.connectionTook(reused: true)
        guard case .fail(let error) = machine.exchangeFailed(Self.closed, facts: raced) else {
            Issue.record("sent again twice")
            return
        }
        #expect(error.mayHaveBeenProcessed)
    }

    /// A cancellation reaches the connection without a phase; the machine names the one the
    /// exchange was in, from what the connection saw: writing, waiting for the head, or
    /// reading the body. A phase already named stays.
    @Test func aFailureWithoutAPhaseIsPlacedWhereTheExchangeWas() {
        let cancelled = TransportError.cancelled(.caller)
        func failed(_ facts: ExchangeFacts, headArrived: Bool = false, _ error: TransportError = cancelled) -> TransportError? {
            var machine = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
            machine.connectionTook(reused: false)
            if headArrived { _ = machine.headArrived(status: 200) }
            guard case .fail(let error) = machine.exchangeFailed(error, facts: facts) else { return nil }
            return error
        }
        let writing = ExchangeFacts(reusedConnection: false, requestBytesWritten: 4096, responseBytesRead: 0, closedByPeer: false)
        var sent = writing
        sent.requestSent = true
        var answering = writing
        answering.responseBytesRead = 12
        #expect(failed(writing)?.phase == .write)
        #expect(failed(sent)?.phase == .readHead)
        #expect(failed(answering)?.phase == .readHead)
        #expect(failed(sent, headArrived: true)?.phase == .readBody)
        #expect(failed(sent, TransportError(.readTimeout, phase: .readHead))?.phase == .readHead)
        // Only a cancellation is placed: another error keeps what its source said.
        #expect(failed(writing, TransportError(.shutdown))?.phase == nil)
    }

    /// Stale connections, however many, cost a request a bounded number of attempts.
    @Test func staleConnectionsAreBounded() {
        var machine = RequestStateMachine(method: .post, hasBody: true, replayableBody: true)
        for _ in 1..<AttemptRecord.maxConnectionsPerHop {
            #expect(machine.connectionStale() == .sendAgain(fresh: true, urgent: true))
        }
        guard case .fail(let error) = machine.connectionStale() else {
            Issue.record("no bound on stale connections")
            return
        }
        #expect(error.code == .remoteClosed)
        #expect(!error.mayHaveBeenProcessed, "nothing of it was ever written")
    }

    /// Whatever mixes of causes ask for another attempt, a hop gets at most the bound.
    @Test func everyPathTogetherIsBounded() {
        var machine = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        var attempts = 0
        var decision = Decision.sendAgain(fresh: false, urgent: false)
        let nothingWritten = ExchangeFacts(reusedConnection: true, requestBytesWritten: 0, responseBytesRead: 0, closedByPeer: true)
        while case .sendAgain = decision, attempts < 100 {
            attempts += 1
            switch attempts % 3 {
            case 0: decision = machine.connectionStale()
            case 1:
                machine.connectionTook(reused: true)
                decision = machine.leftLine(bytesWritten: 0, connectionFailed: true)
            default:
                machine.connectionTook(reused: true)
                decision = machine.exchangeFailed(Self.closed, facts: nothingWritten)
            }
        }
        #expect(attempts == AttemptRecord.maxConnectionsPerHop)
        #expect(machine.isFinished)
    }

    // MARK: Pipelining

    @Test func aLineThatEndedSendsItsRequestsAgain() {
        var unsent = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        unsent.connectionTook(reused: true)
        #expect(unsent.leftLine(bytesWritten: 0, connectionFailed: true) == .sendAgain(fresh: false, urgent: true))
        #expect(!unsent.attempt.resentAfterWrite, "nothing of it went out: no send-again spent")

        var closedInOrder = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        closedInOrder.connectionTook(reused: true)
        #expect(closedInOrder.leftLine(bytesWritten: 40, connectionFailed: false) == .sendAgain(fresh: false, urgent: true))
        #expect(!closedInOrder.attempt.resentAfterWrite, "the connection closed in order: not the request's failure")

        var broken = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        broken.connectionTook(reused: true)
        #expect(broken.leftLine(bytesWritten: 40, connectionFailed: true) == .sendAgain(fresh: false, urgent: true))
        broken.connectionTook(reused: true)
        guard case .fail(let error) = broken.leftLine(bytesWritten: 40, connectionFailed: true) else {
            Issue.record("a lined request whose bytes went out twice on broken connections went again")
            return
        }
        #expect(error.code == .remoteClosed && error.mayHaveBeenProcessed)
    }

    // MARK: Redirects

    static func request(_ method: HTTPRequest.Method, _ url: String, fields: HTTPFields = [:]) throws -> HTTPRequest {
        var request = try HTTPRequest(method: method, url: url)
        request.headerFields.append(contentsOf: fields)
        return request
    }

    @Test func a307WithABodyThatCannotBeReplayedIsDelivered() throws {
        var machine = RequestStateMachine(method: .put, hasBody: true, replayableBody: false)
        machine.connectionTook(reused: false)
        let head = machine.headArrived(status: 307, location: "/elsewhere", request: try Self.request(.put, "http://a.test/x"),
                                       policy: .follow)
        guard case .deliverUnfollowed(let reason) = head else {
            Issue.record("\(head)")
            return
        }
        #expect(reason.contains("cannot be replayed"))
        #expect(machine.responseEnded() == .complete)
    }

    @Test func a308KeepsAReplayableBody() throws {
        var machine = RequestStateMachine(method: .post, hasBody: true, replayableBody: true)
        machine.connectionTook(reused: false)
        #expect(machine.headArrived(status: 308, location: "/v2", request: try Self.request(.post, "http://a.test/v1"),
                                    policy: .follow) == .skipBody)
        guard case .follow(let redirect) = machine.responseEnded() else {
            Issue.record("not followed")
            return
        }
        #expect(redirect.keepBody && redirect.request.method == .post && redirect.request.path == "/v2")
    }

    /// The defect this machine was made for: a POST answered 303 whose GET then cannot
    /// connect said "phase connect", so a retry layer took it for unsent and posted twice.
    @Test func a303WhoseFollowUpFailsSaysTheCallMayHaveBeenProcessed() throws {
        var machine = RequestStateMachine(method: .post, hasBody: true, replayableBody: true)
        machine.connectionTook(reused: false)
        #expect(machine.headArrived(status: 303, location: "http://b.test/receipt", request: try Self.request(.post, "http://a.test/order"),
                                    policy: .follow) == .skipBody)
        guard case .follow(let redirect) = machine.responseEnded() else {
            Issue.record("not followed")
            return
        }
        #expect(redirect.request.method == .get && !redirect.keepBody)
        machine.startHop(idempotent: true, hasBody: false, replayableBody: true)
        let refused = TransportError(.connectionRefused, host: "b.test", phase: .connect)
        #expect(!refused.mayHaveBeenProcessed, "on its own, a refused connection sent nothing")
        let error = machine.ended(refused)
        #expect(error.code == .connectionRefused && error.phase == .connect)
        #expect(error.mayHaveBeenProcessed, "but the POST before it was answered")
        #expect(machine.attempt.answeredHops == 1)
    }

    @Test func aRedirectToAnotherOriginDropsCredentialsAndStartsItsOwnAttempts() throws {
        var machine = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        machine.connectionTook(reused: true)
        let first = try Self.request(.get, "https://a.test/me", fields: [.authorization: "Bearer t", .cookie: "s=1", .accept: "*/*"])
        #expect(machine.headArrived(status: 302, location: "https://b.test/you", request: first, policy: .follow) == .skipBody)
        guard case .follow(let redirect) = machine.responseEnded() else {
            Issue.record("not followed")
            return
        }
        #expect(redirect.request.authority == "b.test")
        #expect(redirect.request.headerFields[.authorization] == nil && redirect.request.headerFields[.cookie] == nil)
        #expect(redirect.request.headerFields[.accept] == "*/*")
        machine.startHop(idempotent: true, hasBody: false, replayableBody: true)
        #expect(machine.attempt.connectionsTried == 0, "the new hop has its own attempts")
        machine.connectionTook(reused: true)
        let raced = ExchangeFacts(reusedConnection: true, requestBytesWritten: 60, responseBytesRead: 0, closedByPeer: true)
        #expect(machine.exchangeFailed(Self.closed, facts: raced) == .sendAgain(fresh: true, urgent: true))
    }

    /// A redirect's body that was not worth reading closes the connection; the redirect stands.
    @Test func anAbandonedRedirectBodyStillFollows() throws {
        var machine = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        machine.connectionTook(reused: false)
        _ = machine.headArrived(status: 301, location: "/new", request: try Self.request(.get, "http://a.test/old"), policy: .follow)
        machine.skippedBodyAbandoned()
        let abandoned = ExchangeFacts(reusedConnection: false, requestBytesWritten: 50, responseBytesRead: 2_000_000, closedByPeer: false)
        guard case .follow(let redirect) = machine.exchangeFailed(.cancelled(.internal, phase: .readBody), facts: abandoned) else {
            Issue.record("the redirect was dropped")
            return
        }
        #expect(redirect.request.path == "/new")
    }

    @Test func aRefusedRedirectFailsOnceItsBodyIsSkipped() throws {
        var machine = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        machine.connectionTook(reused: false)
        #expect(machine.headArrived(status: 302, location: "http://a.test/down", request: try Self.request(.get, "https://a.test/"),
                                    policy: .follow) == .skipBody)
        guard case .fail(let error) = machine.responseEnded() else {
            Issue.record("followed down to http")
            return
        }
        #expect(error.code == .redirectRefused && error.mayHaveBeenProcessed)
    }

    @Test func aCancellationWhileTheNextHopWaitsSaysTheCallMayHaveBeenProcessed() throws {
        var machine = RequestStateMachine(method: .post, hasBody: true, replayableBody: true)
        machine.connectionTook(reused: false)
        _ = machine.headArrived(status: 303, location: "/done", request: try Self.request(.post, "http://a.test/pay"), policy: .follow)
        _ = machine.responseEnded()
        machine.startHop(idempotent: true, hasBody: false, replayableBody: true)
        let error = machine.ended(.cancelled(.caller, phase: .pool))
        #expect(error.mayHaveBeenProcessed)
    }

    @Test func redirectsOffDeliverTheRedirect() throws {
        var machine = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        machine.connectionTook(reused: false)
        #expect(machine.headArrived(status: 302, location: "/x", request: try Self.request(.get, "http://a.test/"), policy: nil) == .deliver)
        #expect(machine.responseEnded() == .complete)
        #expect(machine.redirects == nil)
    }

    /// Events in the wrong state fail the call instead of trapping.
    @Test func eventsOutOfPlaceFailTheCall() {
        var machine = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        guard case .fail = machine.responseEnded() else {
            Issue.record("an end before a head completed the call")
            return
        }
        var onConnection = RequestStateMachine(method: .get, hasBody: false, replayableBody: true)
        onConnection.connectionTook(reused: false)
        guard case .fail = onConnection.connectionStale() else {
            Issue.record("a running request was sent again as stale")
            return
        }
    }
}
