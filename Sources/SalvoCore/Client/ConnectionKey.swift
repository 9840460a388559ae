import SalvoTransport
/// What makes two connections interchangeable: the pool never reuses a connection across keys.
public struct ConnectionKey: Hashable, Sendable, CustomStringConvertible {
    public enum Scheme: String, Sendable, Hashable {
        case http, https
    }

    public var scheme: Scheme
    /// The host as written in the URL, without IPv6 brackets.
    public var host: String
    public var port: Int
    /// Which of the client's TLS configurations the connection uses (0: the client's own);
    /// always 0 for http.
    package var tlsConfigurationID = 0
    /// A Unix domain socket the connection goes to instead of the host's addresses (curl's
    /// `--unix-socket`); the host still names the server in the Host field.
    public var unixSocketPath: String? {
        get { self.route?.unixSocketPath }
        set { self.route = Route.make(unixSocketPath: newValue, proxy: self.proxy) }
    }
    /// The HTTP proxy the connection goes through, if any: connections through different
    /// proxies (or credentials) are never shared.
    public var proxy: HTTPProxy? {
        get { self.route?.proxy }
        set { self.route = Route.make(unixSocketPath: self.unixSocketPath, proxy: newValue) }
    }
    /// What few keys have (a socket path, a proxy), behind one reference that is nil for the
    /// rest: a key is copied a few times per request, and each optional string or proxy
    /// would be a reference count of its own.
    private var route: Route?

    private final class Route: Sendable {
        let unixSocketPath: String?
        let proxy: HTTPProxy?

        private init(unixSocketPath: String?, proxy: HTTPProxy?) {
            self.unixSocketPath = unixSocketPath
            self.proxy = proxy
        }

        /// nil when both are: equal keys must look alike, whichever setter ran last.
        static func make(unixSocketPath: String?, proxy: HTTPProxy?) -> Route? {
            unixSocketPath == nil && proxy == nil ? nil : Route(unixSocketPath: unixSocketPath, proxy: proxy)
        }
    }

    public init(scheme: Scheme, host: String, port: Int) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// The authority for the Host header: brackets around IPv6 literals (without a zone,
    /// which means nothing to the server, RFC 6874 §4), the port when not the scheme's default.
    public var authority: String {
        let hostPart = HostName.bracketed(self.host)
        let defaultPort = self.scheme == .https ? 443 : 80
        return self.port == defaultPort ? hostPart : "\(hostPart):\(self.port)"
    }

    /// The cheap fields first (the pool compares each request's key to the last one's); the
    /// route only when either key has one.
    public static func == (lhs: ConnectionKey, rhs: ConnectionKey) -> Bool {
        guard lhs.port == rhs.port, lhs.scheme == rhs.scheme, lhs.tlsConfigurationID == rhs.tlsConfigurationID,
              lhs.host == rhs.host else { return false }
        switch (lhs.route, rhs.route) {
        case (nil, nil): return true
        case let (left?, right?): return left === right || (left.unixSocketPath == right.unixSocketPath && left.proxy == right.proxy)
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.scheme)
        hasher.combine(self.host)
        hasher.combine(self.port)
        hasher.combine(self.tlsConfigurationID)
        hasher.combine(self.unixSocketPath)
        hasher.combine(self.proxy)
    }

    public var description: String {
        "\(self.scheme.rawValue)://\(self.authority)" + (self.unixSocketPath.map { " via \($0)" } ?? "")
            + (self.proxy.map { " through \($0)" } ?? "")
    }
}
