import SalvoTransport
import HTTPTypes

/// An HTTP proxy: where the client connects instead of the origin.
///
/// Requests for `http://` URLs go to it whole (the request line carries the absolute URL);
/// for `https://` URLs the client asks it for a tunnel (`CONNECT host:port`) and speaks TLS
/// to the origin through it, so the origin's certificate is verified as without a proxy.
/// Credentials go to the proxy only, as `Proxy-Authorization: Basic …`, never to the origin.
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.proxy = .all(try HTTPProxy("http://user:secret@proxy.internal:3128"))
/// ```
public struct HTTPProxy: Sendable, Hashable, CustomStringConvertible {
    /// The proxy's host: a name or a numeric address (IPv6 without brackets).
    public var host: String
    /// The proxy's port; curl's default, 1080, when a spelling gives none.
    public var port: Int
    /// Who the proxy is told the client is (Basic authentication), if it asks.
    public var credentials: Credentials?
    /// Tunnel `http://` requests too (curl's `--proxytunnel`): the proxy sees a CONNECT and
    /// then bytes, not the requests. `https://` requests are always tunnelled.
    public var tunnelsPlainHTTP = false
    /// Fields sent with `CONNECT` after Host and the credentials (curl's `--proxy-header`):
    /// a User-Agent the proxy's policy wants, say. A field whose value holds CR, LF or NUL
    /// is not sent.
    public var connectHeaderFields: HTTPFields = [:]

    /// A user name and password for the proxy, as they are (not percent-encoded). They are
    /// kept as bytes: a name or password typed in another encoding than UTF-8 goes to the
    /// proxy as given, never repaired.
    public struct Credentials: Sendable, Hashable {
        public var usernameBytes: [UInt8]
        public var passwordBytes: [UInt8]

        /// The user name as text (bytes that are not UTF-8 shown as U+FFFD).
        public var username: String {
            get { String(decoding: self.usernameBytes, as: UTF8.self) }
            set { self.usernameBytes = Array(newValue.utf8) }
        }

        /// The password as text (bytes that are not UTF-8 shown as U+FFFD).
        public var password: String {
            get { String(decoding: self.passwordBytes, as: UTF8.self) }
            set { self.passwordBytes = Array(newValue.utf8) }
        }

        public init(username: String, password: String) {
            self.init(usernameBytes: Array(username.utf8), passwordBytes: Array(password.utf8))
        }

        public init(usernameBytes: [UInt8], passwordBytes: [UInt8]) {
            self.usernameBytes = usernameBytes
            self.passwordBytes = passwordBytes
        }

        /// The `Proxy-Authorization` value: `Basic base64(username:password)`.
        var basicAuthorization: String {
            "Basic " + Base64.encode(self.usernameBytes + [UInt8(ascii: ":")] + self.passwordBytes)
        }
    }

    /// curl's default proxy port.
    public static let defaultPort = 1080

    public init(host: String, port: Int = HTTPProxy.defaultPort, credentials: Credentials? = nil) {
        self.host = host
        self.port = port
        self.credentials = credentials
    }

    /// curl's spelling: `[http://][user[:password]@]host[:port][/…]`. The user and password
    /// may be percent-encoded (`%40` for an `@`, `%2F` for a `/`); without a port, 1080; a
    /// path after the authority is ignored.
    ///
    /// - Throws: `.unsupportedScheme` for another kind of proxy (`https://`, `socks5://`…:
    ///   Salvo speaks to plain HTTP proxies), `.invalidURL` for a spelling that is not one.
    public init(_ spelling: String) throws(TransportError) {
        var rest = Substring(spelling)
        // A scheme only before any userinfo: "user:pa://ss@host" is a user and a password.
        if let range = rest.firstRange(of: "://"), range.lowerBound < (rest.firstIndex(of: "@") ?? rest.endIndex),
           let first = rest.first, first.isLetter, rest[..<range.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) {
            let scheme = rest[..<range.lowerBound].lowercased()
            guard scheme == "http" else {
                throw TransportError(.unsupportedScheme, phase: .request,
                                      detail: "proxy \"\(Self.redacted(spelling))\": \(scheme):// proxies are not supported (only http://)")
            }
            rest = rest[range.upperBound...]
        }
        // A path or query after the authority means nothing for a proxy: ignored, as curl does.
        // (The userinfo comes first: its last "@" ends it.)
        let authorityStart = rest.lastIndex(of: "@").map { rest.index(after: $0) } ?? rest.startIndex
        if let end = rest[authorityStart...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            rest = rest[..<end]
        }
        guard !rest.isEmpty, rest.last != "@" else {
            throw TransportError(.invalidURL, phase: .request, detail: "proxy \"\(Self.redacted(spelling))\" is not [http://][user:password@]host[:port]")
        }
        // The port is explicit when the authority (past any userinfo) ends in ":digits"
        // outside an IPv6 literal's brackets.
        let authority = rest[(rest.lastIndex(of: "@").map { rest.index(after: $0) } ?? rest.startIndex)...]
        let hostEnd = authority.lastIndex(of: "]") ?? authority.startIndex
        // "host:" has no port either (curl: 1080).
        let explicitPort = authority[hostEnd...].lastIndex(of: ":").map { authority.index(after: $0) != authority.endIndex } ?? false
        let parsed: RequestURL
        do {
            parsed = try RequestURL("http://" + rest)
        } catch {
            // The parser's reason, without the text it quotes (which holds the password).
            let reason = error.detail.map { detail in detail.firstRange(of: ": http://").map { String(detail[..<$0.lowerBound]) } ?? detail } ?? "not a host"
            throw TransportError(.invalidURL, phase: .request, detail: "proxy \"\(Self.redacted(spelling))\": \(reason)")
        }
        self.init(host: parsed.host, port: explicitPort ? parsed.port : Self.defaultPort)
        if let user = parsed.user {
            self.credentials = Credentials(usernameBytes: URLReference.percentDecoded(user),
                                           passwordBytes: URLReference.percentDecoded(parsed.password ?? ""))
        }
    }

    /// `host:port` as a CONNECT line or a log writes it (brackets around IPv6).
    var authority: String {
        HostName.bracketed(self.host) + ":\(self.port)"
    }

    /// A failed lookup of the proxy's name, said as such (curl's exit 5, not 6).
    package func nameFailure(_ error: TransportError) -> TransportError {
        guard error.code == .dnsFailure else { return error }
        var failure = error
        failure.code = .proxyDNSFailure
        failure.detail = "proxy \(self.authority)" + (error.detail.map { ": \($0)" } ?? "")
        return failure
    }

    /// The proxy, without its password.
    public var description: String {
        let user = self.credentials.map { "\($0.username)@" } ?? ""
        return "http://\(user)\(self.authority)"
    }

    /// `spelling` with any password replaced, for error messages.
    static func redacted(_ spelling: String) -> String {
        guard let at = spelling.lastIndex(of: "@") else { return spelling }
        let head = spelling[..<at]
        // The userinfo starts after a scheme that comes before it, if any.
        var userStart = head.startIndex
        if let scheme = head.firstRange(of: "://"), !head[..<scheme.lowerBound].contains(":") {
            userStart = scheme.upperBound
        }
        guard let colon = head[userStart...].firstIndex(of: ":") else { return spelling }
        return String(spelling[..<colon]) + ":***" + String(spelling[at...])
    }
}

/// Which proxy, if any, a request goes through: one for `http://` URLs, one for `https://`
/// URLs, and the hosts that go direct.
///
/// ```swift
/// configuration.proxy = try .environment()                  // http_proxy, HTTPS_PROXY, NO_PROXY…
/// configuration.proxy = .all(proxy, bypass: "localhost,.internal")
/// options.proxy = ProxyConfiguration.none                   // this request goes direct
/// ```
public struct ProxyConfiguration: Sendable, Hashable {
    /// The proxy for `http://` URLs; nil: direct.
    public var http: HTTPProxy?
    /// The proxy for `https://` URLs; nil: direct.
    public var https: HTTPProxy?
    /// Hosts reached directly whatever the proxies say (`NO_PROXY`).
    public var bypass: ProxyBypass
    /// Why the proxy named for `http://` URLs cannot be used (an environment variable naming
    /// a SOCKS proxy, say): the requests it would carry fail with this error rather than go
    /// direct. Set by ``environment()``; nil when ``http`` is usable or none is named.
    public var httpRefusal: TransportError?
    /// The same for `https://` URLs.
    public var httpsRefusal: TransportError?

    public init(http: HTTPProxy? = nil, https: HTTPProxy? = nil, bypass: ProxyBypass = ProxyBypass()) {
        self.http = http
        self.https = https
        self.bypass = bypass
    }

    /// Every request goes direct.
    public static var none: ProxyConfiguration { ProxyConfiguration() }

    /// `proxy` for every URL, except the hosts `bypass` lists.
    public static func all(_ proxy: HTTPProxy, bypass: ProxyBypass = ProxyBypass()) -> ProxyConfiguration {
        ProxyConfiguration(http: proxy, https: proxy, bypass: bypass)
    }

    /// Whether any request can go through a proxy.
    public var isEnabled: Bool { self.http != nil || self.https != nil || self.httpRefusal != nil || self.httpsRefusal != nil }

    /// The proxy for a request to `host` over `scheme`, or nil to go direct.
    public func proxy(for scheme: ConnectionKey.Scheme, host: String) -> HTTPProxy? {
        guard let proxy = scheme == .https ? self.https : self.http else { return nil }
        return self.bypass.matches(host) ? nil : proxy
    }

    /// Why a request to `host` over `scheme` cannot go through the proxy meant for it (see
    /// ``httpRefusal``), or nil: it goes through ``proxy(for:host:)``, or direct.
    public func refusal(for scheme: ConnectionKey.Scheme, host: String) -> TransportError? {
        guard let refusal = scheme == .https ? self.httpsRefusal : self.httpRefusal else { return nil }
        return self.bypass.matches(host) ? nil : refusal
    }
}
