import ArgumentParser
import HTTPTypes
import SalvoCore

/// The options every load command takes — `salvo bench`, and a workload's own command
/// (``Workload/main(url:arguments:)``) — in wrk's spelling: how many connections and
/// threads, for how long, at what rate, with which fields, TLS settings and proxy, and how
/// to report.
public struct LoadOptions: ParsableArguments, Sendable {
    @Option(name: [.customShort("c", allowingJoined: true), .customLong("connections")], help: "Connections to keep open.")
    public var connections = 10

    @Option(name: [.customShort("t", allowingJoined: true), .customLong("threads")], help: "Threads (event loops).")
    public var threads = 2

    @Option(name: [.customShort("d", allowingJoined: true), .customLong("duration")], help: "Duration: 10s, 1m, 2h… (default 10s; with -n alone, until the count)")
    public var duration: String?

    @Option(name: [.customShort("n", allowingJoined: true), .customLong("requests")], help: "Stop after this many responses.")
    public var requests: Int?

    @Option(name: [.customShort("H", allowingJoined: true), .customLong("header")], help: "Header to send, \"Name: value\" (repeatable).")
    public var headers: [String] = []

    @Option(name: .customLong("timeout"), help: "A response slower than this is a timeout error (default 2s).")
    public var timeout = "2s"

    @Flag(name: .customLong("latency"), help: "Print the latency distribution.")
    public var latency = false

    @Option(name: [.customShort("R", allowingJoined: true), .customLong("rate")], help: "Constant request rate (requests/s, all connections).")
    public var rate: Double?

    @Flag(name: .customLong("json"), help: "Print the report as JSON (histogram included, for merging).")
    public var json = false

    @Flag(name: [.customShort("k"), .customLong("insecure")], help: "Do not verify the server's TLS certificate.")
    public var insecure = false

    @Option(name: .customLong("cacert"), help: "CA certificates (PEM file) to verify the server with.")
    public var cacert: String?

    @Flag(name: .customLong("no-tls-resume"), help: "Do a full TLS handshake on every new connection.")
    public var noTLSResume = false

    @Option(name: .customLong("unix-socket"), help: "Connect to this Unix domain socket instead of the URL's host.")
    public var unixSocket: String?

    @Option(name: [.customShort("x"), .customLong("proxy")], help: "[http://][user:password@]host[:port] — go through this HTTP proxy.")
    public var proxy: String?

    public init() {}

    /// A run of `url` (`http://` when it has no scheme) with these options.
    public func configuration(url: String) throws(TransportError) -> LoadConfiguration {
        let text = url.contains("://") ? url : "http://" + url
        var configuration = LoadConfiguration(url: try RequestURL(text))
        configuration.connections = self.connections
        configuration.threads = self.threads
        configuration.unixSocketPath = self.unixSocket
        if let proxy = self.proxy, !proxy.isEmpty { configuration.proxy = try HTTPProxy(proxy) }
        configuration.rate = self.rate
        configuration.requestLimit = self.requests
        if self.insecure { configuration.tls = .insecure }
        if let cacert = self.cacert { configuration.tls.trustRoots = .file(cacert) }
        configuration.tlsResumption = !self.noTLSResume
        // -n without -d runs until the count; with both, whichever comes first.
        let durationText = self.duration ?? "10s"
        guard let duration = LoadDuration.parse(durationText) else {
            throw TransportError(.invalidConfiguration, detail: "invalid duration \"\(durationText)\"")
        }
        configuration.duration = self.requests != nil && self.duration == nil ? .zero : duration
        guard let timeout = LoadDuration.parse(self.timeout), timeout > .zero else {
            throw TransportError(.invalidConfiguration, detail: "invalid timeout \"\(self.timeout)\"")
        }
        configuration.timeout = timeout
        for header in self.headers {
            guard let colon = header.firstIndex(of: ":"),
                  let name = HTTPField.Name(String(header[..<colon].trimmingOWS)) else {
                throw TransportError(.invalidRequest, detail: "invalid header \"\(header)\"")
            }
            configuration.headerFields.append(HTTPField(name: name, value: String(header[header.index(after: colon)...].trimmingOWS)))
        }
        return configuration
    }

    /// "10s", or "1000-request" for a run bounded by its count only.
    public func describeLength(_ configuration: LoadConfiguration) -> String {
        if let limit = configuration.requestLimit, configuration.duration == .zero { return "\(limit)-request" }
        return self.duration ?? "10s"
    }
}
