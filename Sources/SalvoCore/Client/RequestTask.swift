import HTTPTypes

/// One request on its way through the engine, from pool queue to finished response.
/// Loop-confined: created, run and ended on one event loop's thread.
final class RequestTask {
    enum Phase {
        case queued
        case running(HTTP1Connection)
        case finished
    }

    let key: ConnectionKey
    /// The TLS context for an https key (the one its key's TLS id stands for).
    let tls: TLSContext?
    /// The serialized head, encoded once.
    let head: [UInt8]
    let body: [UInt8]
    let isHead: Bool
    let isIdempotent: Bool
    let deadline: Deadline
    let readTimeout: Duration?
    let handler: any ResponseHandler
    var phase: Phase = .queued
    /// Set once the request has been retried on a fresh connection.
    var retried = false
    /// Pool waiter id while queued.
    var waiterID = 0
    /// When the request stops waiting for a connection.
    var waitDeadline = Deadline.distantFuture
    /// The caller sent `Connection: close`: the connection is not reused after this request.
    var closeAfter = false

    init(
        key: ConnectionKey, tls: TLSContext?, head: [UInt8], body: [UInt8], method: HTTPRequest.Method,
        deadline: Deadline, readTimeout: Duration?, handler: any ResponseHandler
    ) {
        self.key = key
        self.tls = tls
        self.head = head
        self.body = body
        self.isHead = method == .head
        // RFC 9110 §9.2.2; POST and PATCH are never replayed automatically.
        self.isIdempotent = method == .get || method == .head || method == .options || method == .trace
            || method == .put || method == .delete
        self.deadline = deadline
        self.readTimeout = readTimeout
        self.handler = handler
    }

    var isFinished: Bool {
        if case .finished = self.phase { return true }
        return false
    }

    /// Ends the request with an error, once.
    func fail(_ error: HTTPClientError) {
        guard !self.isFinished else { return }
        self.phase = .finished
        self.handler.didFail(error.with(host: self.key.host))
    }

    /// Asks the connection to read again after a handler paused it.
    func resumeReading() {
        if case .running(let connection) = self.phase {
            connection.resumeReading()
        }
    }
}
