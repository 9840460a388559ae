import SalvoTransport
import HTTPTypes

/// One request on an ``HTTP2Connection``: what the request's owner holds as its carrier (to
/// cancel it, or to ask for more of a paused body), and what the connection keeps of the
/// exchange — the streamed body's queue, bytes moved, how far the response got, the body
/// bytes the caller has yet to take (the stream's window stays shut on them).
///
/// Loop-confined, as its connection is. Stored properties are `@exclusivity(unchecked)`: touched
/// by the loop's thread only, and no access spans a call that could reach it again.
final class HTTP2Stream: ExchangeCarrier, StreamedBodyConsumer {
    /// The connection carrying it. Unowned: the connection holds its streams, and a stream
    /// outlives it only as an owner's stale carrier, never asked anything once the exchange ended.
    unowned let connection: HTTP2Connection
    let owner: RequestOwner
    /// nghttp2's id, once submitted (0 before).
    @exclusivity(unchecked) var id: Int32 = 0
    /// A streamed request body's queue, fed by its producer.
    @exclusivity(unchecked) var body: StreamedBody?
    /// The session has sent all it was given of a streamed body and waits for more.
    @exclusivity(unchecked) var bodyWanted = false
    /// The whole streamed body went to the session (its end included).
    @exclusivity(unchecked) var bodyHandedOver = false
    /// Bytes of the request: its header list and body bytes handed to the session.
    @exclusivity(unchecked) var bytesSent = 0
    /// Response bytes that arrived (head as its list, body as sent).
    @exclusivity(unchecked) var bytesReceived = 0
    /// The final head arrived.
    @exclusivity(unchecked) var headReceived = false
    @exclusivity(unchecked) var trailers: HTTPFields?
    /// Body bytes delivered to a caller who paused: the window opens for them on resume.
    @exclusivity(unchecked) var unconsumed = 0
    @exclusivity(unchecked) var paused = false
    /// When something of this stream last came in (or it started).
    @exclusivity(unchecked) var lastActivity: Deadline
    /// The connection had carried other streams when this one started.
    let reusedConnection: Bool

    init(connection: HTTP2Connection, owner: RequestOwner, reusedConnection: Bool, now: Deadline) {
        self.connection = connection
        self.owner = owner
        self.reusedConnection = reusedConnection
        self.lastActivity = now
    }

    var endpoints: ConnectionEndpoints { self.connection.endpoints }
    var httpVersion: HTTPVersion { .http2 }

    /// The caller gave up, or the response could not be delivered: the stream is reset.
    func fail(_ error: TransportError) {
        self.connection.failStream(self, error: error, reset: true)
    }

    func resumeReading() {
        self.connection.resumeStream(self)
    }

    /// Streams wait in no line: a request waiting for its turn is in its pool, not here.
    func cancelWaiting(_ owner: RequestOwner, error: TransportError) {
        self.fail(error)
    }

    func streamedBodyChanged() {
        self.connection.bodyChanged(self)
    }

    /// What the connection saw of this exchange, for the owner when it breaks.
    func facts(closedByPeer: Bool, refused: Bool = false) -> ExchangeFacts {
        ExchangeFacts(reusedConnection: self.reusedConnection, requestBytesWritten: self.bytesSent,
                      responseBytesRead: self.bytesReceived, closedByPeer: closedByPeer,
                      requestSent: self.bytesSent > 0 && (self.body == nil || self.bodyHandedOver), refusedUnprocessed: refused)
    }

    /// This stream's deadlines: the request's total and head deadlines, and the read timeout
    /// while the response is due and the caller is reading.
    var deadlines: ConnectionDeadlines {
        var deadlines = ConnectionDeadlines(total: self.owner.deadline)
        // The head is not due while the request's own body is still on its way; nor is the
        // server's silence a fault while we wait for our own producer. A body held back by the
        // server's window is the server's silence: the read timeout covers it.
        let sending = self.body != nil && !self.bodyHandedOver
        if !self.headReceived, self.owner.headDeadline != .distantFuture, !sending {
            deadlines.head = self.owner.headDeadline
        }
        if let readTimeout = self.owner.readTimeout, !self.paused, !(sending && self.bodyWanted) {
            deadlines.read = self.lastActivity + readTimeout
        }
        return deadlines
    }
}
