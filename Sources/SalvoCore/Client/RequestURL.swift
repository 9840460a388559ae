import HTTPTypes

/// An absolute http or https URL, parsed without Foundation.
///
/// Accepts `scheme://[user[:password]@]host[:port][/path][?query][#fragment]` with IPv6
/// literals in brackets. The fragment is dropped (it never goes on the wire); userinfo is
/// kept apart so it is never sent in the Host header.
public struct RequestURL: Sendable, Hashable, CustomStringConvertible {
    public var scheme: ConnectionKey.Scheme
    /// The host without brackets, lowercased for names.
    public var host: String
    public var port: Int
    /// Path and query, as sent in the request line; "/" when empty.
    public var target: String
    public var user: String?
    public var password: String?

    public init(_ text: String) throws(HTTPClientError) {
        func invalid(_ why: String) -> HTTPClientError {
            HTTPClientError(.invalidURL, phase: .request, detail: "\(why): \(RequestEncoder.printable(text))")
        }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw invalid("spaces or control characters in URL")
        }
        guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else { throw invalid("no scheme") }
        let schemeText = text[..<colon].lowercased()
        guard let scheme = ConnectionKey.Scheme(rawValue: schemeText) else {
            throw HTTPClientError(.unsupportedScheme, phase: .request, detail: "\"\(schemeText)\" is not http or https")
        }
        var rest = text[text.index(colon, offsetBy: 3)...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }

        var user: String? = nil
        var password: String? = nil
        if let at = authority.lastIndex(of: "@") {
            let info = authority[..<at]
            if let colon = info.firstIndex(of: ":") {
                user = String(info[..<colon])
                password = String(info[info.index(after: colon)...])
            } else {
                user = String(info)
            }
            authority = authority[authority.index(after: at)...]
        }

        var host: Substring
        var portText: Substring? = nil
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw invalid("unclosed IPv6 literal") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("junk after IPv6 literal") }
                portText = after.dropFirst()
            }
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." || $0 == "%" }) else {
                throw invalid("bad IPv6 literal")
            }
        } else {
            if let colon = authority.lastIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
            }
            guard host.utf8.allSatisfy({ byte in
                RequestEncoder.isTokenByte(byte) && byte != UInt8(ascii: "*") || byte >= 0x80
            }) else {
                throw invalid("bad host name")
            }
        }
        guard !host.isEmpty else { throw invalid("no host") }
        var port = scheme == .https ? 443 : 80
        if let portText, !portText.isEmpty {
            guard portText.count <= 5, portText.allSatisfy(\.isASCII), let value = Int(portText), (1...65535).contains(value) else {
                throw invalid("bad port")
            }
            port = value
        }
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port
        self.target = target
        self.user = user
        self.password = password
    }

    public var key: ConnectionKey { ConnectionKey(scheme: self.scheme, host: self.host, port: self.port) }

    public var description: String { "\(self.key)\(self.target)" }
}

extension HTTPRequest {
    /// A request for an absolute http or https URL.
    ///
    /// ```swift
    /// let request = try HTTPRequest(method: .get, url: "http://127.0.0.1:8080/health")
    /// ```
    public init(method: Method, url: String, headerFields: HTTPFields = [:]) throws(HTTPClientError) {
        let parsed = try RequestURL(url)
        self.init(method: method, scheme: parsed.scheme.rawValue, authority: parsed.key.authority,
                  path: parsed.target, headerFields: headerFields)
    }

    /// The connection key this request goes to. Runs per request, so the authority is
    /// split by hand on its bytes rather than through a URL parse.
    func connectionKey() throws(HTTPClientError) -> ConnectionKey {
        let scheme: ConnectionKey.Scheme
        switch self.scheme {
        case "http"?: scheme = .http
        case "https"?: scheme = .https
        case let other?:
            guard let parsed = ConnectionKey.Scheme(rawValue: other.lowercased()) else {
                throw HTTPClientError(.unsupportedScheme, phase: .request, detail: "request has scheme \(other)")
            }
            scheme = parsed
        case nil:
            throw HTTPClientError(.unsupportedScheme, phase: .request, detail: "request has no scheme")
        }
        guard let authority = self.authority, !authority.isEmpty else {
            throw HTTPClientError(.invalidURL, phase: .request, detail: "request has no authority (host)")
        }
        if let key = ConnectionKey(scheme: scheme, authority: authority) { return key }
        // Not a plain host[:port]: let the full parser explain what is wrong with it.
        return try RequestURL("\(scheme.rawValue)://\(authority)/").key
    }
}

extension ConnectionKey {
    /// Splits `host[:port]` or `[v6]:port`; nil for anything unusual (userinfo, bad
    /// characters, bad ports), which the URL parser then reports.
    init?(scheme: Scheme, authority: String) {
        var utf8 = Substring(authority).utf8
        var hostBytes: Substring.UTF8View
        var portBytes: Substring.UTF8View? = nil
        if utf8.first == UInt8(ascii: "[") {
            guard let close = utf8.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = utf8[utf8.index(after: utf8.startIndex)..<close]
            utf8 = utf8[utf8.index(after: close)...]
            if let colon = utf8.first {
                guard colon == UInt8(ascii: ":") else { return nil }
                portBytes = utf8.dropFirst()
            }
            guard hostBytes.contains(UInt8(ascii: ":")),
                  hostBytes.allSatisfy({ Self.isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return nil }
        } else {
            if let colon = utf8.lastIndex(of: UInt8(ascii: ":")) {
                hostBytes = utf8[..<colon]
                portBytes = utf8[utf8.index(after: colon)...]
            } else {
                hostBytes = utf8
            }
            guard hostBytes.allSatisfy({ Self.isHostByte($0) }) else { return nil }
        }
        guard !hostBytes.isEmpty else { return nil }
        var port = scheme == .https ? 443 : 80
        if let portBytes {
            guard !portBytes.isEmpty, portBytes.count <= 5 else { return nil }
            var value = 0
            for byte in portBytes {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            guard (1...65535).contains(value) else { return nil }
            port = value
        }
        let hasUpper = hostBytes.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        let host = String(Substring(hostBytes))
        self.init(scheme: scheme, host: hasUpper ? host.lowercased() : host, port: port)
    }

    @inline(__always)
    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }

    /// Letters, digits, '-', '.', '_' and '~': what a host name or IPv4 address is made of.
    @inline(__always)
    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
