import SalvoTransport
/// The life of one HTTP/1.1 connection, with no I/O.
///
/// Theory of operation: a connection carries one request at a time; pipelined requests wait
/// outside this machine (`HTTP1Connection+Pipelining.swift`) and start here when their turn
/// comes, already written. Writing the request and reading the response are separate sub-states because a
/// server may answer (say, 413) before the request body is fully written. The write side is
/// `sent` when every byte the head announced is on the wire but a streamed body's producer
/// has not yet said it ended well: the exchange is complete on the wire, and only that
/// verdict can still fail it. The connection is reusable only when both sides of the
/// exchange finished and the response allowed keep-alive. Transitions:
///
/// | state    | event                    | next                         | action                  |
/// |----------|--------------------------|------------------------------|-------------------------|
/// | idle     | start                    | active(writing, awaitHead)   | write                   |
/// | idle     | remote closed / error    | closed                       | close                   |
/// | active   | body sent                | active(sent, …)              | none                    |
/// | active   | write done               | active(done, …)              | none, or finish if read done |
/// | active   | head                     | active(…, body)              | forward head            |
/// | active   | end (keep-alive)         | idle, when write done        | succeed + release       |
/// | active   | end, write sent          | active(sent, ended)          | none: wait for the verdict |
/// | active   | end, still writing       | closed                       | succeed + close (early answer) |
/// | active   | end (close)              | closed                       | succeed + close         |
/// | active   | remote closed            | closed                       | fail (the request's owner decides what follows) |
/// | active   | error, timeout, cancel   | closed                       | fail + close            |
/// | closed   | anything                 | closed                       | none                    |
struct HTTP1ConnectionStateMachine: Equatable {
    enum WriteState: Equatable {
        case writing
        /// Every announced byte is written; the body's producer has not ended yet.
        case sent
        case done
    }
    enum ReadState: Equatable { case awaitingHead, body, ended(keepAlive: Bool) }

    enum State: Equatable {
        case idle
        case active(write: WriteState, read: ReadState)
        case closed
    }

    enum Action: Equatable {
        case none
        /// Write the request; the connection starts reading its response.
        case write
        /// Hand the response head to the request.
        case forwardHead
        /// The request is complete; `reuse` says whether the connection goes back to the pool.
        case succeedRequest(reuse: Bool)
        /// Fail the request and close the connection. Whether the request goes again is not
        /// the connection's to say: its owner decides from what the connection reports.
        case failRequest
        /// Close a connection that carried no request.
        case close
    }

    private(set) var state: State = .idle
    /// Whether the current request goes over a connection that already carried another.
    private(set) var requestsServed = 0

    var isIdle: Bool { self.state == .idle }

    /// Whether the current response's head is still due (nothing of it read yet).
    var isAwaitingHead: Bool {
        if case .active(_, .awaitingHead) = self.state { return true }
        return false
    }

    /// Whether the current request is still going out (its head, or a body being sent).
    var isWritingRequest: Bool {
        if case .active(.writing, _) = self.state { return true }
        return false
    }

    /// Whether the current request is all written (pipelined ones may follow it).
    var isWriteDone: Bool {
        if case .active(.done, _) = self.state { return true }
        return false
    }
    var isClosed: Bool { self.state == .closed }

    /// Whether a response (or the rest of one) is still due from the server.
    var isAwaitingResponse: Bool {
        switch self.state {
        case .active(_, .awaitingHead), .active(_, .body): true
        default: false
        }
    }

    mutating func startRequest() -> Action {
        guard case .idle = self.state else {
            // The pool hands over only idle connections; should a busy or closed one be given a
            // request anyway, the request fails instead of the process.
            self.state = .closed
            return .failRequest
        }
        self.state = .active(write: .writing, read: .awaitingHead)
        return .write
    }

    /// Every byte of the body is on the wire, but its producer has yet to end.
    mutating func bodySent() -> Action {
        guard case .active(.writing, let read) = self.state else { return .none }
        self.state = .active(write: .sent, read: read)
        return .none
    }

    mutating func writeFinished() -> Action {
        guard case .active(let write, let read) = self.state, write != .done else { return .none }
        if case .ended(let keepAlive) = read {
            return self.finish(keepAlive: keepAlive)
        }
        self.state = .active(write: .done, read: read)
        return .none
    }

    mutating func headReceived() -> Action {
        guard case .active(let write, .awaitingHead) = self.state else { return .none }
        self.state = .active(write: write, read: .body)
        return .forwardHead
    }

    mutating func responseEnded(keepAlive: Bool) -> Action {
        guard case .active(let write, .body) = self.state else { return .none }
        switch write {
        case .done:
            return self.finish(keepAlive: keepAlive)
        case .sent:
            // Complete on the wire; the request ends when the producer does.
            self.state = .active(write: .sent, read: .ended(keepAlive: keepAlive))
            return .none
        case .writing:
            break
        }
        // The server answered before the request body was written (an early 413, say).
        // RFC 9112 §9.3: the rest of the body cannot be skipped, so the connection closes;
        // the response stands.
        self.state = .closed
        return .succeedRequest(reuse: false)
    }

    private mutating func finish(keepAlive: Bool) -> Action {
        self.requestsServed += 1
        if keepAlive {
            self.state = .idle
            return .succeedRequest(reuse: true)
        }
        self.state = .closed
        return .succeedRequest(reuse: false)
    }

    /// The peer closed, or reset, the connection.
    mutating func remoteClosed() -> Action {
        switch self.state {
        case .idle:
            self.state = .closed
            return .close
        case .active:
            self.state = .closed
            return .failRequest
        case .closed:
            return .none
        }
    }

    /// A protocol error, a timeout, a cancellation or a local failure.
    mutating func failed() -> Action {
        switch self.state {
        case .idle:
            self.state = .closed
            return .close
        case .active:
            self.state = .closed
            return .failRequest
        case .closed:
            return .none
        }
    }
}
