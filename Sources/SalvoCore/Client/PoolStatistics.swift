import SalvoTransport

/// Counters of a client's pools.
public struct PoolStatistics: Sendable, Hashable {
    /// Connections started since the client was created.
    public var connectionsOpened = 0
    /// Requests that ran on a connection which had carried an earlier request.
    public var connectionsReused = 0
    /// Connections open (idle, busy or connecting) right now.
    public var openConnections = 0
    /// TLS handshakes that resumed an earlier session instead of a full handshake.
    public var tlsResumed = 0
    /// The same, and more, host by host (connection key: scheme, host, port).
    public var hosts: [ConnectionKey: HostPoolStatistics] = [:]
}

/// One host's connections and requests, summed over the client's loops.
public struct HostPoolStatistics: Sendable, Hashable {
    // Now:
    /// Connections open: idle, leased or still connecting.
    public var open = 0
    public var idle = 0
    public var leased = 0
    public var connecting = 0
    /// Requests waiting for a connection.
    public var queued = 0
    /// Of the open connections, those speaking HTTP/2, and the streams they carry now.
    public var http2Connections = 0
    public var openStreams = 0
    // Since the client was made:
    public var opened = 0
    /// Requests that ran on a connection which had carried an earlier one.
    public var reused = 0
    /// Connections the client closed (idle timeout, a failure of its own, no reuse wanted).
    public var closedByUs = 0
    /// Connections the server closed, or asked to close (`Connection: close`).
    public var closedByServer = 0
    public var requestsCompleted = 0
    public var requestsFailed = 0
    /// Requests written behind another on a busy connection (``HTTPClient/Configuration/pipeliningDepth``).
    public var pipelined = 0
    /// Requests started on an HTTP/2 connection while it carried others.
    public var multiplexed = 0
    public var tlsResumed = 0

    public init() {}

    func adding(_ other: HostPoolStatistics) -> HostPoolStatistics {
        var sum = self
        sum.open += other.open
        sum.idle += other.idle
        sum.leased += other.leased
        sum.connecting += other.connecting
        sum.queued += other.queued
        sum.opened += other.opened
        sum.reused += other.reused
        sum.closedByUs += other.closedByUs
        sum.closedByServer += other.closedByServer
        sum.pipelined += other.pipelined
        sum.multiplexed += other.multiplexed
        sum.http2Connections += other.http2Connections
        sum.openStreams += other.openStreams
        sum.requestsCompleted += other.requestsCompleted
        sum.requestsFailed += other.requestsFailed
        sum.tlsResumed += other.tlsResumed
        return sum
    }
}
