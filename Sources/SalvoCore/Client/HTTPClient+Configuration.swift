import HTTPTypes
import SalvoTransport
extension HTTPClient {
    /// How a client connects, pools and limits. A value: copy it, change it, pass it on.
    public struct Configuration: Sendable {
        /// Event loop threads (default: one per core).
        public var threads: Int = EventLoopGroup.coreCount
        /// The most connections to one (scheme, host, port), across all loops together
        /// (default 8). Any loop may use any free place of it: a request never waits on one
        /// loop while another loop's connection to the host sits idle.
        public var maxConnectionsPerHost: Int = 8
        /// HTTP/1.1 pipelining: how many requests one connection may carry at once, the one
        /// being answered included (default 1: off). Used when every connection to the host is
        /// busy and the limit reached, for idempotent requests without a streamed body or
        /// `Expect`, on connections that have already kept one response alive. Requests a
        /// connection leaves unanswered (it failed, or the server closed it) go once more on a
        /// fresh connection; a request that is not idempotent never enters a pipeline.
        ///
        /// ```swift
        /// configuration.maxConnectionsPerHost = 4
        /// configuration.pipeliningDepth = 8      // up to 32 requests in flight to one host
        /// ```
        public var pipeliningDepth: Int = 1
        /// How long an unused keep-alive connection stays open (default 60 s).
        public var idleTimeout: Duration = .seconds(60)
        /// How long a connection may take to establish, per attempt of all addresses (default 10 s).
        public var connectTimeout: Duration = .seconds(10)
        /// From the call until the response head has arrived: queueing, connecting, sending
        /// and the server's think time (default 300 s) — and never sooner than this after the
        /// request's last byte went out, so a long upload is not cut for a head it cannot have
        /// yet. Fails with `.headTimeout`. With the read timeout, it bounds every wait on a
        /// server by default: one that accepts and never answers, or answers a byte a minute,
        /// cannot hold a call forever. Nil (or zero): no bound.
        public var headTimeout: Duration? = .seconds(300)
        /// The longest the server may stay silent while a response is due or arriving: before
        /// the head, and between any two pieces of the body (default 300 s). Fails with
        /// `.readTimeout`. A stream that is quiet by nature (Server-Sent Events without
        /// heartbeats, a long poll) sets a longer one, or turns it off with `.zero` (per
        /// request: ``RequestOptions/readTimeout``). Nil (or zero): no bound.
        public var readTimeout: Duration? = .seconds(300)
        /// Longest the server may take none of a request's bytes while they are due
        /// (default: none).
        public var writeTimeout: Duration? = nil
        /// Deadline for a whole request, from the call to the last body byte (default: none).
        public var requestTimeout: Duration? = nil
        /// How long a request may wait for a busy pool (default 60 s).
        public var poolWaitTimeout: Duration = .seconds(60)
        /// Largest body the collecting APIs accept (default 64 MiB).
        public var maxBodySize: Int = 64 * 1024 * 1024
        /// Limits on the response head.
        public var headLimits = ResponseHeadLimits()
        /// TLS for https URLs: verification on, system trust store, TLS 1.2 at least.
        public var tls = TLSConfiguration()
        /// Which HTTP versions connections speak: by default HTTP/2 with TLS servers that offer
        /// it, HTTP/1.1 otherwise (per request: ``RequestOptions/httpVersion``).
        public var httpVersion = HTTPVersionPolicy.automatic
        /// HTTP/2: what this client tells servers and the bounds it keeps against them.
        public var http2 = HTTP2Settings()
        /// How long a request with `Expect: 100-continue` waits for the interim answer before
        /// it sends its body anyway (default 1 s).
        public var expectContinueTimeout: Duration = .seconds(1)
        /// gzip and deflate responses decoded (the default), with bounds against bombs.
        public var decompression = Decompression.enabled
        /// Redirects: followed, up to 10, by default.
        public var redirects = RedirectPolicy.follow
        /// Sent as User-Agent when the request has none; nil sends none.
        public var userAgent: String? = SalvoVersion.userAgent
        /// Who watches the engine — logs, metrics, traces (`SalvoObservability` makes one from
        /// swift-log, swift-metrics and swift-distributed-tracing). Nil, the default: nobody,
        /// and nothing is spent on it.
        public var observer: (any EngineObserver)?
        /// Fields added to every request that has none of that name (an API key, a tenant).
        public var headerFields: HTTPFields = [:]
        /// Host names to addresses: overrides, your own resolver, localhost, a cache.
        public var nameResolution = NameResolution()
        /// Every request goes to this Unix domain socket (a local daemon's API) instead of
        /// its URL's host, unless the request says otherwise.
        public var unixSocketPath: String?
        /// The HTTP proxies requests go through (none by default; `try .environment()` reads
        /// `http_proxy`, `HTTPS_PROXY`, `NO_PROXY`… as curl does). A request can override it.
        public var proxy = ProxyConfiguration.none

        public init() {}

        /// Refuses settings no client can run with.
        func validate() throws(TransportError) {
            func invalid(_ what: String) -> TransportError {
                TransportError(.invalidConfiguration, detail: what)
            }
            guard self.threads > 0 else { throw invalid("threads must be at least 1, not \(self.threads)") }
            guard self.maxConnectionsPerHost > 0 else {
                throw invalid("maxConnectionsPerHost must be at least 1, not \(self.maxConnectionsPerHost)")
            }
            guard (1...256).contains(self.pipeliningDepth) else {
                throw invalid("pipeliningDepth must be from 1 (off) to 256, not \(self.pipeliningDepth)")
            }
            if let userAgent = self.userAgent,
               userAgent.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) {
                throw invalid("userAgent contains CR, LF or NUL")
            }
            guard self.redirects.maxRedirects >= 0 else { throw invalid("maxRedirects must not be negative") }
            guard self.decompression.maxRatio > 0, (self.decompression.maxDecodedSize ?? 0) >= 0 else {
                throw invalid("decompression limits must be positive")
            }
            guard self.maxBodySize >= 0 else { throw invalid("maxBodySize must not be negative") }
            guard self.headLimits.maxHeaderBytes > 0, self.headLimits.maxHeaderCount > 0 else {
                throw invalid("head limits must be positive")
            }
        }
    }
}
