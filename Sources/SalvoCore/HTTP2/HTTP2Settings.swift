/// What an HTTP/2 connection tells the server, and the bounds it keeps against it
/// (``HTTPClient/Configuration/http2``).
public struct HTTP2Settings: Sendable, Hashable {
    /// Streams the server may open towards the client (SETTINGS_MAX_CONCURRENT_STREAMS).
    /// Server push is refused whatever this says.
    public var maxConcurrentStreams: UInt32 = 100
    /// Each stream's receive window, and the connection's (default 1 MiB): how much of a
    /// response may arrive before the caller reads it. Window updates go out only as the
    /// caller consumes, so a slow reader holds the server back instead of filling memory.
    public var initialWindowSize: UInt32 = 1 << 20
    /// The most bytes of names and values (plus 32 a field, as HTTP/2 counts them) in one
    /// response head; a stream whose head is larger is reset and fails alone (default 64 KiB).
    public var maxHeaderListSize: Int = 64 << 10
    /// A connection idle this long is asked for a PING before it is used again, and closed if
    /// no answer comes within ``pingTimeout`` (default 30 s; nil: never).
    public var pingInterval: Duration? = .seconds(30)
    /// How long a PING may go unanswered (default 10 s).
    public var pingTimeout: Duration = .seconds(10)
    /// Where a host's HTTP/2 connections live. false (the default): one connection serves the
    /// whole client, requests made on other event loops going over to its loop; a second opens
    /// only when the first has no stream to spare — fewest connections, one HPACK table, one
    /// loop's core doing all of that host's framing and TLS. true: each event loop opens its own
    /// connection to the host and keeps its requests on it (async-http-client's topology) —
    /// no hop between loops and every core at work, for as many connections as loops (within
    /// `maxConnectionsPerHost`; loops beyond it send their requests to loops that have one).
    /// docs/http2.md compares the two.
    public var connectionPerLoop = false

    public init() {}
}
