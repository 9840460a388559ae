import HTTPTypes

/// The HTTP version a response came in.
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    /// HTTP/2 (RFC 9113), written `HTTP/2` as its status lines are shown.
    public static let http2 = HTTPVersion(major: 2, minor: 0)

    public var description: String { self.major >= 2 && self.minor == 0 ? "HTTP/\(self.major)" : "HTTP/\(self.major).\(self.minor)" }
}

/// One redirect that was followed: the request as sent, and the 3xx response that sent it on.
public struct RedirectHop: Sendable {
    public var request: HTTPRequest
    public var response: HTTPResponse

    public init(request: HTTPRequest, response: HTTPResponse) {
        self.request = request
        self.response = response
    }
}

/// One end of a connection: an IP address (or a Unix socket's path, with port 0) and a port.
public struct SocketEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// `127.0.0.1`, `::1` (no brackets), or a Unix socket's path.
    public var address: String
    public var port: Int

    public init(address: String, port: Int) {
        self.address = address
        self.port = port
    }

    /// `127.0.0.1:8080`, `[::1]:8080`, or the path.
    public var description: String {
        if self.address.hasPrefix("/") || (self.port == 0 && !self.address.contains(".") && !self.address.contains(":")) {
            return self.address
        }
        return self.address.contains(":") ? "[\(self.address)]:\(self.port)" : "\(self.address):\(self.port)"
    }
}

/// Where the time of one request went, and how many bytes it moved. Durations a transport
/// cannot tell are nil.
///
/// ```swift
/// let response = try await client.stream(request)
/// let metrics = response.metrics
/// print(metrics.reusedConnection, metrics.timeToFirstByte ?? .zero)
/// ```
///
/// The connection phases (``dnsLookup``, ``connect``, ``tlsHandshake``) are those of a
/// connection opened for this request; on a reused connection they are nil. ``queueWait``
/// runs from the call until a connection took the request, so for a new connection it
/// includes those phases. Byte counts and ``total`` are complete once the body has been read
/// (``ResponseBody/metrics``); in the response's head they cover the exchange up to the head.
public struct TransportMetrics: Sendable, Hashable {
    /// From the call until a connection took the request.
    public var queueWait: Duration?
    /// Resolving the host name, for a new connection (nil for an IP literal).
    public var dnsLookup: Duration?
    /// Opening the TCP connection, for a new connection.
    public var connect: Duration?
    /// The TLS handshake, for a new https connection.
    public var tlsHandshake: Duration?
    /// Whether that handshake resumed an earlier TLS session.
    public var tlsResumed: Bool?
    /// Whether the request went on a connection that had carried an earlier one.
    public var reusedConnection: Bool
    /// From the call until the first byte of the response.
    ///
    /// This, ``timeToHead`` and ``total`` end at the clock reading the event loop takes each
    /// time it wakes for ready sockets: when the bytes were found ready, not when the loop
    /// got round to them (at most one wake-up's work later), and with no clock read per
    /// response.
    public var timeToFirstByte: Duration?
    /// From the call until the response head was complete.
    public var timeToHead: Duration?
    /// From the call until the end of the body.
    ///
    /// Nil until the body has ended: in the metrics of a response head, and of a streamed
    /// response whose body has not all arrived (read it to its end to be sure of a total).
    /// A collected response from the engine always has it. Nil too from a transport that
    /// keeps no times, such as `MockTransport` or one of your own that leaves it unset.
    public var total: Duration?
    /// Request bytes written to the connection: head and body, as framed.
    public var requestBytesSent: Int
    /// Response bytes read from the connection: head and body, as framed and encoded.
    public var responseBytesReceived: Int
    /// Body bytes handed to the caller (after content decoding).
    public var bodyBytesDelivered: Int
    /// Redirects followed on the way (their times are included above).
    public var redirects: Int
    /// Connections opened for the call, over every redirect and every attempt (0 when each
    /// request went on a connection that was already open).
    public var connectionsOpened: Int
    /// The address the last exchange's connection went to (nil from a transport that does
    /// not tell).
    public var remote: SocketEndpoint?
    /// The local address of that connection.
    public var local: SocketEndpoint?
    /// The HTTP/2 stream the last exchange ran on (nil over HTTP/1.1).
    public var streamID: Int? = nil
    /// Other requests the last exchange's connection carried when it started (HTTP/2: more
    /// than 0 means it was multiplexed with them; HTTP/1.1 pipelining counts the same way).
    public var concurrentRequests = 0

    public init(queueWait: Duration? = nil, dnsLookup: Duration? = nil, connect: Duration? = nil, tlsHandshake: Duration? = nil,
                tlsResumed: Bool? = nil, reusedConnection: Bool = false, timeToFirstByte: Duration? = nil,
                timeToHead: Duration? = nil, total: Duration? = nil, requestBytesSent: Int = 0, responseBytesReceived: Int = 0,
                bodyBytesDelivered: Int = 0, redirects: Int = 0, connectionsOpened: Int = 0,
                remote: SocketEndpoint? = nil, local: SocketEndpoint? = nil) {
        self.queueWait = queueWait
        self.dnsLookup = dnsLookup
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.tlsResumed = tlsResumed
        self.reusedConnection = reusedConnection
        self.timeToFirstByte = timeToFirstByte
        self.timeToHead = timeToHead
        self.total = total
        self.requestBytesSent = requestBytesSent
        self.responseBytesReceived = responseBytesReceived
        self.bodyBytesDelivered = bodyBytesDelivered
        self.redirects = redirects
        self.connectionsOpened = connectionsOpened
        self.remote = remote
        self.local = local
    }
}
