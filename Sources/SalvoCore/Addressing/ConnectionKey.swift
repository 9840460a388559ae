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
    public var unixSocketPath: String?
    /// The HTTP proxy the connection goes through, if any: connections through different
    /// proxies (or credentials) are never shared.
    public var proxy: HTTPProxy?
    /// Which HTTP versions the connection may speak: part of its identity, so a request that
    /// asked for HTTP/1.1 never rides an HTTP/2 connection, nor the other way round.
    package var httpVersion = HTTPClient.HTTPVersionPolicy.automatic

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

    /// The fields `Hashable` would compare, the cheap ones first: the pool compares each
    /// request's key to the last one's, and the derived `==` copied both optional proxies
    /// (their strings and fields) to compare them, even when neither had one. `hash(into:)`
    /// stays the synthesized one, over the same fields. Always inlined: called, it had both
    /// keys copied out of the objects that hold them first (two counts per string).
    @inline(__always)
    public static func == (lhs: ConnectionKey, rhs: ConnectionKey) -> Bool {
        guard lhs.port == rhs.port, lhs.scheme == rhs.scheme, lhs.tlsConfigurationID == rhs.tlsConfigurationID,
              lhs.httpVersion == rhs.httpVersion, lhs.host == rhs.host, lhs.unixSocketPath == rhs.unixSocketPath else { return false }
        switch (lhs.proxy == nil, rhs.proxy == nil) {
        case (true, true): return true
        case (false, false): return lhs.proxy == rhs.proxy
        default: return false
        }
    }

    public var description: String {
        "\(self.scheme.rawValue)://\(self.authority)" + (self.unixSocketPath.map { " via \($0)" } ?? "")
            + (self.proxy.map { " through \($0)" } ?? "")
    }
}
