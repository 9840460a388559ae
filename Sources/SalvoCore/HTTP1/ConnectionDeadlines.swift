import SalvoTransport
/// Every deadline a connection is waiting on, as one value.
///
/// The connection computes it from its state (``HTTP1Connection``'s `deadlines`) after every
/// event — a read, a write, a timer, a producer's chunk, a consumer's resume — and keeps one
/// timer armed for ``next``. No deadline is armed by hand at the place that changes it, so
/// none can be forgotten: a read timeout that did not apply while the body's producer was
/// slow applies again as soon as the state says the server is the one being waited for.
/// Pure: no clock, no I/O.
struct ConnectionDeadlines: Equatable {
    /// What a passed deadline means, most important first.
    enum Expiry: Equatable {
        /// Resolving, connecting or the TLS handshake took too long.
        case connect
        /// The request's own deadline (its total timeout) passed.
        case total
        /// The response head did not come within the request's head timeout.
        case head
        /// The response is complete and every announced body byte went out, but the body's
        /// producer has not ended within its grace: it is not waited for any longer.
        case producerEnd
        /// No `100 Continue` came in time: the body goes anyway (RFC 9110 §10.1.1).
        case expectContinue
        /// The socket took none of the request's bytes for longer than the write timeout.
        case write
        /// The server has been silent for longer than the read timeout.
        case read
        /// A parked connection stayed unused for its idle timeout.
        case idle
    }

    var connect: Deadline?
    var total: Deadline?
    var head: Deadline?
    var producerEnd: Deadline?
    var expectContinue: Deadline?
    var write: Deadline?
    var read: Deadline?
    var idle: Deadline?

    init(connect: Deadline? = nil, total: Deadline? = nil, head: Deadline? = nil, producerEnd: Deadline? = nil,
         expectContinue: Deadline? = nil, read: Deadline? = nil, idle: Deadline? = nil) {
        self.connect = connect
        self.total = total
        self.head = head
        self.producerEnd = producerEnd
        self.expectContinue = expectContinue
        self.read = read
        self.idle = idle
    }

    /// Nothing to wait for (a closed connection).
    static let none = ConnectionDeadlines()

    /// The earliest deadline, nil when there is none (``Deadline/distantFuture`` is none).
    var next: Deadline? {
        // Spelled out rather than over an array: this runs after every event of a connection.
        var earliest = Deadline.distantFuture
        if let connect = self.connect, connect < earliest { earliest = connect }
        if let total = self.total, total < earliest { earliest = total }
        if let head = self.head, head < earliest { earliest = head }
        if let producerEnd = self.producerEnd, producerEnd < earliest { earliest = producerEnd }
        if let expectContinue = self.expectContinue, expectContinue < earliest { earliest = expectContinue }
        if let write = self.write, write < earliest { earliest = write }
        if let read = self.read, read < earliest { earliest = read }
        if let idle = self.idle, idle < earliest { earliest = idle }
        return earliest == .distantFuture ? nil : earliest
    }

    /// The most important deadline that has passed at `now`, if any.
    func expired(at now: Deadline) -> Expiry? {
        if let connect = self.connect, connect <= now { return .connect }
        if let total = self.total, total <= now { return .total }
        if let head = self.head, head <= now { return .head }
        if let producerEnd = self.producerEnd, producerEnd <= now { return .producerEnd }
        if let expectContinue = self.expectContinue, expectContinue <= now { return .expectContinue }
        if let write = self.write, write <= now { return .write }
        if let read = self.read, read <= now { return .read }
        if let idle = self.idle, idle <= now { return .idle }
        return nil
    }
}
