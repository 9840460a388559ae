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

    /// The connection key this request goes to.
    func connectionKey() throws(HTTPClientError) -> ConnectionKey {
        guard let schemeText = self.scheme?.lowercased(), let scheme = ConnectionKey.Scheme(rawValue: schemeText) else {
            throw HTTPClientError(.unsupportedScheme, phase: .request, detail: "request has scheme \(self.scheme ?? "none")")
        }
        guard let authority = self.authority, !authority.isEmpty else {
            throw HTTPClientError(.invalidURL, phase: .request, detail: "request has no authority (host)")
        }
        return try RequestURL("\(scheme.rawValue)://\(authority)/").key
    }
}
