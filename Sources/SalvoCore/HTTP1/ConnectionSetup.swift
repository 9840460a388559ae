import SalvoTransport

/// The phases of opening one connection, kept for the metrics of the request it first carries.
struct ConnectionSetup {
    let createdAt: Deadline
    var resolvedAt: Deadline?
    var tcpConnectedAt: Deadline?
    var openedAt: Deadline?
    /// nil for plain TCP; for TLS, whether the session was resumed.
    var tlsResumed: Bool?

    init(createdAt: Deadline) {
        self.createdAt = createdAt
    }

    mutating func opened(at now: Deadline, tcpConnectedAt: Deadline?, tls resumed: Bool?) {
        self.openedAt = now
        self.tcpConnectedAt = tcpConnectedAt ?? now
        self.tlsResumed = resumed
    }

    var dnsLookup: Duration? { Self.span(self.createdAt, self.resolvedAt) }
    var connect: Duration? { Self.span(self.resolvedAt, self.tcpConnectedAt) }
    var tlsHandshake: Duration? { self.tlsResumed == nil ? nil : Self.span(self.tcpConnectedAt, self.openedAt) }

    private static func span(_ from: Deadline?, _ to: Deadline?) -> Duration? {
        guard let from, let to, to >= from else { return nil }
        return .nanoseconds(Int64(to.nanoseconds - from.nanoseconds))
    }
}
