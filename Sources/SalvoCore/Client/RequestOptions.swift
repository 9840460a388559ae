import HTTPTypes
import SalvoTransport
extension HTTPClient {
    /// Settings for one request that override the client's ``Configuration``. Every field
    /// left nil takes the client's value.
    ///
    /// ```swift
    /// var options = HTTPClient.RequestOptions(timeout: .seconds(5))
    /// options.tls = pinnedTLS   // this request only; its connections are pooled apart
    /// let response = try await client.execute(request, options: options)
    /// ```
    public struct RequestOptions: Sendable, TransportOptionsCarrying {
        /// The bounds on this request's time, as the seam carries them (a `Transport` call's
        /// options become these as they are): `timeout`, `deadline`, `headTimeout`,
        /// `readTimeout` and `writeTimeout` read and write them (`TransportOptionsCarrying`).
        public var transport: TransportOptions

        /// Largest body the collecting APIs accept.
        public var maxBodySize: Int?
        /// Ask before sending the body: `Expect: 100-continue` goes with the head, and the
        /// body waits for the server's 100 Continue (or a final answer, which spares sending
        /// it — a 401, a 413), at most ``HTTPClient/Configuration/expectContinueTimeout``.
        /// For large uploads a server may refuse. Ignored without a body, or when the request
        /// has an Expect field of its own.
        public var expectContinue = false
        /// Send no `Host` field (curl's `-H "Host:"`), to see how a server takes a request
        /// without one; HTTP/1.1 requires it (RFC 9112 §3.2), so leave this off otherwise.
        public var omitsHost = false
        /// Which HTTP versions this request's connection may speak; nil: the client's
        /// ``HTTPClient/Configuration/httpVersion``. Connections are pooled apart by it.
        public var httpVersion: HTTPVersionPolicy? = nil

        /// The options that hold references (configurations, strings, a closure), which most
        /// requests leave unset: behind one immutable box, nil while all are unset, so that
        /// options are copied into each request and freed with it for the price of one
        /// pointer. Setting one makes a new box (options are set once, read per request).
        private var rare: Rare?

        private final class Rare: Sendable {
            let values: RareValues
            init(_ values: RareValues) { self.values = values }
        }

        private struct RareValues: Sendable {
            var tls: TLSConfiguration?
            var redirects: RedirectPolicy?
            var decompression: Decompression?
            var unixSocketPath: String?
            var proxy: ProxyConfiguration?
            var headObserver: (@Sendable (ReceivedHead) -> Void)?
            var connectionObserver: (@Sendable (ConnectionReport) -> Void)?

            var isEmpty: Bool {
                self.tls == nil && self.redirects == nil && self.decompression == nil && self.unixSocketPath == nil
                    && self.proxy == nil && self.headObserver == nil && self.connectionObserver == nil
            }
        }

        /// Whether the options hold a caller's code or secrets — observers, a TLS
        /// configuration, a proxy, a redirect policy's credentials: an owner that outlives its
        /// call lets go of them (``RequestShape/lettingGo()``). Decompression limits and a
        /// socket path are plain values, kept.
        var holdsCallerCode: Bool {
            guard let values = self.rare?.values else { return false }
            return values.headObserver != nil || values.connectionObserver != nil || values.tls != nil
                || values.proxy != nil || values.redirects != nil
        }

        private mutating func setRare(_ change: (inout RareValues) -> Void) {
            var values = self.rare?.values ?? RareValues()
            change(&values)
            self.rare = values.isEmpty ? nil : Rare(values)
        }

        /// TLS for this request. Connections made under one TLS configuration are never
        /// reused for a request under another.
        public var tls: TLSConfiguration? {
            get { self.rare?.values.tls }
            set { self.setRare { $0.tls = newValue } }
        }
        /// Whether and how far this request follows redirects.
        public var redirects: RedirectPolicy? {
            get { self.rare?.values.redirects }
            set { self.setRare { $0.redirects = newValue } }
        }
        /// Whether this response is decoded from gzip or deflate, and within what bounds.
        public var decompression: Decompression? {
            get { self.rare?.values.decompression }
            set { self.setRare { $0.decompression = newValue } }
        }
        /// Connect to this Unix domain socket instead of the URL's host (curl's
        /// `--unix-socket`); the URL still gives the Host field and the path. Connections to
        /// it are pooled apart. Nil: the client's ``HTTPClient/Configuration/unixSocketPath``.
        public var unixSocketPath: String? {
            get { self.rare?.values.unixSocketPath }
            set { self.setRare { $0.unixSocketPath = newValue } }
        }
        /// The proxies for this request instead of the client's
        /// ``HTTPClient/Configuration/proxy``: `ProxyConfiguration.none` sends it direct.
        public var proxy: ProxyConfiguration? {
            get { self.rare?.values.proxy }
            set { self.setRare { $0.proxy = newValue } }
        }
        /// Told of every response head as it arrives — interim (1xx) heads, each response of
        /// a redirect chain, the final one — with its bytes exactly as the server sent them,
        /// and of the lines of a head that failed to parse. Called on the event loop's
        /// thread, in order, before the call returns: keep it short (append to a list).
        ///
        /// ```swift
        /// let heads = Mutex<[ReceivedHead]>([])
        /// var options = HTTPClient.RequestOptions()
        /// options.headObserver = { head in heads.withLock { $0.append(head) } }
        /// ```
        public var headObserver: (@Sendable (ReceivedHead) -> Void)? {
            get { self.rare?.values.headObserver }
            set { self.setRare { $0.headObserver = newValue } }
        }
        /// Told each time a connection takes the request (each attempt, each redirect's hop):
        /// the HTTP version it speaks, whether it carried requests before, its addresses. Called
        /// on the event loop's thread before the request's first byte goes out: keep it short.
        ///
        /// ```swift
        /// options.connectionObserver = { report in print("* using \(report.version)") }
        /// ```
        public var connectionObserver: (@Sendable (ConnectionReport) -> Void)? {
            get { self.rare?.values.connectionObserver }
            set { self.setRare { $0.connectionObserver = newValue } }
        }

        public init(timeout: Duration? = nil, maxBodySize: Int? = nil, tls: TLSConfiguration? = nil,
                    redirects: RedirectPolicy? = nil, decompression: Decompression? = nil,
                    deadline: ContinuousClock.Instant? = nil, headTimeout: Duration? = nil, readTimeout: Duration? = nil) {
            self.transport = TransportOptions(timeout: timeout, deadline: deadline, headTimeout: headTimeout, readTimeout: readTimeout)
            self.maxBodySize = maxBodySize
            if tls != nil || redirects != nil || decompression != nil {
                self.rare = Rare(RareValues(tls: tls, redirects: redirects, decompression: decompression))
            }
        }

        /// A transport call's options, as they are: the engine's own settings left to the client.
        public init(_ transport: TransportOptions, maxBodySize: Int? = nil) {
            self.transport = transport
            self.maxBodySize = maxBodySize
        }
    }
}

/// A connection that took a request (``HTTPClient/RequestOptions/connectionObserver``).
public struct ConnectionReport: Sendable, Hashable {
    /// The version the connection speaks: HTTP/1.1, or HTTP/2 when ALPN chose it (or the
    /// request asked for prior knowledge over cleartext).
    public var version: HTTPVersion
    /// The connection carried requests before this one (or carries others now, over HTTP/2).
    public var reused: Bool
    public var remote: SocketEndpoint?
    public var local: SocketEndpoint?

    public init(version: HTTPVersion, reused: Bool, remote: SocketEndpoint?, local: SocketEndpoint?) {
        self.version = version
        self.reused = reused
        self.remote = remote
        self.local = local
    }
}

/// A response head as it arrived, for tools that show heads as the server sent them.
public struct ReceivedHead: Sendable {
    public enum Kind: Sendable, Hashable {
        /// A 1xx head before the response (`100 Continue`, `103 Early Hints`).
        case interim
        /// A response's head: a redirect's, or the final one.
        case response
        /// The complete lines of a head the parser refused, before the line it refused.
        case failed
    }

    public var kind: Kind
    /// The bytes as received: status line, fields and the blank line, line ends as sent.
    public var raw: [UInt8]
    /// The head as parsed (nil for a failed one).
    public var head: HTTPResponse?

    public init(kind: Kind, raw: [UInt8], head: HTTPResponse?) {
        self.kind = kind
        self.raw = raw
        self.head = head
    }
}
