import HTTPTypes
import SalvoCore

/// What a load run does: the request, how many connections and threads, for how long.
public struct LoadConfiguration: Sendable {
    /// The target; its scheme, host and port pick the server, its path and query the request.
    public var url: RequestURL
    public var method: HTTPRequest.Method = .get
    /// Extra header fields, sent with every request.
    public var headerFields = HTTPFields()
    /// The request body, sent with every request (Content-Length framed).
    public var body: [UInt8] = []
    /// Open connections, spread over the threads (at least one per thread).
    public var connections = 10
    /// Event loop threads.
    public var threads = 2
    /// How long to run; the run also stops after `requestLimit` responses when set.
    public var duration: Duration = .seconds(10)
    /// Stop after this many responses (all threads together).
    public var requestLimit: Int? = nil
    /// A response slower than this counts as a timeout error and its connection is replaced.
    public var timeout: Duration = .seconds(2)
    /// Requests written back to back on a connection before waiting for responses (1: none).
    public var pipeline = 1
    /// Through a client API: how many callers run at once (nil: `connections × pipeline`). More
    /// callers than connections queue in the client's pool, or line up in pipelines.
    public var callers: Int? = nil
    /// Connect to this Unix domain socket instead of the URL's host.
    public var unixSocketPath: String? = nil
    /// Go through this HTTP proxy: http requests forwarded in absolute form, https (or
    /// `tunnelsPlainHTTP`) through a CONNECT tunnel per connection.
    public var proxy: HTTPProxy? = nil
    /// Constant request rate for the whole run, in requests per second; nil runs closed-loop
    /// (each connection sends its next request as soon as the last response arrives).
    /// With a rate, latency counts from when each request was due, not when it was sent,
    /// so a stalled server shows in the numbers (no coordinated omission).
    public var rate: Double? = nil
    /// TLS for https URLs (verified by default, as everywhere in Salvo).
    public var tls = TLSConfiguration()
    /// Offer the last TLS session again on new connections (abbreviated handshakes).
    public var tlsResumption = true
    /// How long to wait for the first connection attempts.
    public var connectTimeout: Duration = .seconds(5)
    /// Speak HTTP/2: with prior knowledge over cleartext, through ALPN (`h2` only) over TLS.
    public var http2 = false
    /// HTTP/2: requests in flight on each connection at once, each on its stream (h2load's
    /// `-m`); the server's SETTINGS_MAX_CONCURRENT_STREAMS caps it.
    public var streams = 1
    /// Through a client API over HTTP/2: each loop opens its own connection
    /// (`HTTP2Settings.connectionPerLoop`) instead of all sharing one. The load generator's
    /// own connections are always their loop's.
    public var connectionPerLoop = false

    public init(url: RequestURL) {
        self.url = url
    }

    /// Refuses settings that cannot run.
    public func validate() throws(TransportError) {
        func invalid(_ text: String) -> TransportError { TransportError(.invalidConfiguration, detail: text) }
        guard self.threads > 0 else { throw invalid("threads must be at least 1") }
        guard self.connections >= self.threads else {
            throw invalid("connections (\(self.connections)) must be at least threads (\(self.threads))")
        }
        guard self.pipeline >= 1, self.pipeline <= 1024 else { throw invalid("pipeline must be 1...1024") }
        if let callers = self.callers, !(1...100_000).contains(callers) { throw invalid("callers must be 1...100000") }
        guard self.duration > .zero || self.requestLimit != nil else { throw invalid("duration must be positive") }
        if let limit = self.requestLimit, limit <= 0 { throw invalid("request count must be positive") }
        if let rate = self.rate {
            guard rate >= 0.001, rate <= 1e9, rate.isFinite else { throw invalid("rate must be 0.001...1000000000 requests/s") }
            guard self.pipeline == 1 else { throw invalid("a constant rate cannot be combined with pipelining") }
        }
        guard self.timeout > .zero else { throw invalid("timeout must be positive") }
        guard self.streams >= 1, self.streams <= 1000 else { throw invalid("streams must be 1...1000") }
        if self.http2 {
            guard self.pipeline == 1 else { throw invalid("HTTP/2 multiplexes with --streams, not --pipeline") }
            if self.rate != nil, self.streams > 1 { throw invalid("a constant rate cannot be combined with several streams") }
            if self.forwardingProxy != nil {
                throw invalid("HTTP/2 cannot go through a proxy that forwards requests (use one that tunnels)")
            }
        } else if self.streams > 1 {
            throw invalid("--streams needs HTTP/2 (--http2)")
        }
    }

    /// The request as an HTTP/2 header list, built once for the whole run.
    func http2Block() throws(TransportError) -> HTTP2HeaderBlock {
        var head = try self.requestBytes()
        head.removeLast(self.body.count)
        guard let block = HTTP2HeaderBlock(encodedHead: head, scheme: self.url.scheme.rawValue, authority: self.url.key.authority) else {
            throw TransportError(.invalidRequest, detail: "the request has no HTTP/2 form")
        }
        return block
    }

    /// The serialized request, built once for the whole run.
    func requestBytes() throws(TransportError) -> [UInt8] {
        let length: RequestBodyLength = self.body.isEmpty && self.method != .post && self.method != .put
            ? .none : .known(self.body.count)
        var bytes = try self.encodedHead(method: self.method, target: self.url.target, body: length)
        bytes += self.body
        return bytes
    }

    /// The head of a request of the run: its fields, the default User-Agent, and the proxy's
    /// absolute form and credentials when one forwards it.
    func encodedHead(method: HTTPRequest.Method, target: String, body length: RequestBodyLength) throws(TransportError) -> [UInt8] {
        var fields = self.headerFields
        if fields[.userAgent] == nil { fields[.userAgent] = "salvo-bench/0.1" }
        let request = HTTPRequest(method: method, scheme: self.url.scheme.rawValue,
                                  authority: self.url.key.authority, path: target, headerFields: fields)
        var bytes: [UInt8] = []
        if let proxy = self.forwardingProxy {
            try RequestEncoder.encodeHead(request, body: length, forwardedBy: proxy, into: &bytes)
        } else {
            try RequestEncoder.encodeHead(request, body: length, into: &bytes)
        }
        return bytes
    }

    /// The proxy the requests are forwarded by (absolute form), if they go through one that
    /// does not tunnel.
    var forwardingProxy: HTTPProxy? {
        guard let proxy = self.proxy, self.unixSocketPath == nil, self.url.scheme == .http, !proxy.tunnelsPlainHTTP else { return nil }
        return proxy
    }
}
