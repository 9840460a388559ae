import SalvoTransport
import HTTPTypes

/// An absolute http or https URL, parsed without Foundation.
///
/// Accepts `scheme://[user[:password]@]host[:port][/path][?query][#fragment]` with IPv6
/// literals in brackets (and an RFC 6874 zone, `[fe80::1%25eth0]`). The fragment is dropped
/// (it never goes on the wire); userinfo is kept apart so it is never sent in the Host header,
/// and becomes Basic credentials (see ``basicAuthorization``).
///
/// The host is normalized as curl and browsers do: names lowercased, numeric IPv4 forms
/// (`127.1`, `0x7f.0.0.1`, `2130706433`) written as a dotted quad, IPv6 addresses
/// compressed. A host with non-ASCII letters is refused: give its IDNA form (`xn--…`). Bytes
/// of the path and query outside ASCII are percent-encoded; the port is digits only.
public struct RequestURL: Sendable, Hashable, CustomStringConvertible {
    public var scheme: ConnectionKey.Scheme
    /// The host without brackets: a lowercased name, a dotted-quad IPv4 address, or a
    /// compressed IPv6 address with its zone after a `%` (`fe80::1%eth0`).
    public var host: String
    public var port: Int
    /// Path and query, as sent in the request line; "/" when empty.
    public var target: String
    /// The user and password of the userinfo, as written (percent-encoded).
    public var user: String?
    public var password: String?

    public init(_ text: String) throws(TransportError) {
        func invalid(_ why: String) -> TransportError {
            TransportError(.invalidURL, phase: .request, detail: "\(why): \(RequestEncoder.printable(text))")
        }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw invalid("spaces or control characters in URL")
        }
        guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else { throw invalid("no scheme") }
        let schemeText = text[..<colon].lowercased()
        guard let scheme = ConnectionKey.Scheme(rawValue: schemeText) else {
            throw TransportError(.unsupportedScheme, phase: .request, detail: "\"\(schemeText)\" is not http or https")
        }
        var rest = text[text.index(colon, offsetBy: 3)...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        // Bytes a request target may not carry raw (non-ASCII) go percent-encoded.
        var target = URLReference.encodeUnsafeBytes(String(rest[authorityEnd...]))
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

        let host: String
        var portText: Substring? = nil
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw invalid("unclosed IPv6 literal") }
            let literal = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("junk after IPv6 literal") }
                portText = after.dropFirst()
            }
            guard let (address, zone) = try? HostName.ipv6(literal) else { throw invalid("bad IPv6 literal") }
            host = zone.map { "\(address)%\($0)" } ?? address
        } else {
            let name: Substring
            if let colon = authority.lastIndex(of: ":") {
                name = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                name = authority
            }
            guard name.utf8.allSatisfy({ $0 < 0x80 }) else {
                throw invalid("host name \"\(name)\" is not ASCII (give its IDNA form, xn--…)")
            }
            guard name.utf8.allSatisfy({ HTTPToken.isTokenByte($0) && $0 != UInt8(ascii: "*") }) else {
                throw invalid("bad host name")
            }
            host = HostName.ipv4(name) ?? name.lowercased()
        }
        guard !host.isEmpty else { throw invalid("no host") }
        var port = scheme == .https ? 443 : 80
        if let portText, !portText.isEmpty {
            guard portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                  let value = Int(portText), (1...65535).contains(value) else {
                throw invalid("bad port")
            }
            port = value
        }
        self.scheme = scheme
        self.host = host
        self.port = port
        self.target = target
        self.user = user
        self.password = password
    }

    public var key: ConnectionKey { ConnectionKey(scheme: self.scheme, host: self.host, port: self.port) }

    public var description: String { "\(self.key)\(self.target)" }

    /// `Basic …` credentials from the userinfo (percent-decoded, `user:password`, as curl
    /// sends them), or nil when the URL has none.
    public var basicAuthorization: String? {
        guard let user = self.user else { return nil }
        let credentials = URLReference.percentDecoded(user) + [UInt8(ascii: ":")] + URLReference.percentDecoded(self.password ?? "")
        return "Basic " + Base64.encode(credentials)
    }
}

extension HTTPRequest {
    /// A request for an absolute http or https URL. Userinfo in the URL
    /// (`http://user:secret@host/`) becomes an `Authorization: Basic` field unless
    /// `headerFields` has one; like every credential, it is dropped on a redirect to
    /// another origin.
    ///
    /// ```swift
    /// let request = try HTTPRequest(method: .get, url: "http://127.0.0.1:8080/health")
    /// ```
    public init(method: Method, url: String, headerFields: HTTPFields = [:]) throws(TransportError) {
        let parsed = try RequestURL(url)
        self.init(method: method, scheme: parsed.scheme.rawValue, authority: parsed.key.authority,
                  path: parsed.target, headerFields: headerFields)
        if let credentials = parsed.basicAuthorization, !self.headerFields.contains(.authorization) {
            self.headerFields[.authorization] = credentials
        }
    }

    /// The connection key this request goes to, and whether the authority as written must be
    /// replaced by the key's (it is not spelled the one way the key is: a numeric IPv4 form,
    /// an IPv6 literal, userinfo), so that the Host header never carries what the URL parser
    /// normalized or kept apart. A plain `host[:port]` costs one pass over its bytes.
    func canonicalConnectionKey() throws(TransportError) -> (key: ConnectionKey, rewriteAuthority: Bool) {
        let (key, plain) = try self.resolvedConnectionKey()
        guard !plain, let authority = self.authority else { return (key, false) }
        return (key, !key.isSpelled(by: authority))
    }

    /// The connection key this request goes to.
    func connectionKey() throws(TransportError) -> ConnectionKey {
        try self.resolvedConnectionKey().key
    }

    /// The key, and whether the authority was a plain `host[:port]` split by hand on its bytes
    /// (this runs per request) rather than by the full URL parser.
    private func resolvedConnectionKey() throws(TransportError) -> (key: ConnectionKey, plain: Bool) {
        // Read once: each read of a pseudo-header field counts a reference to its string.
        let schemeText = self.scheme, authority = self.authority
        // An authority of up to 15 bytes is held in the string itself, and so is its host:
        // splitting it again costs less than copying a key out of the thread's cache.
        guard let schemeText, let authority, authority.utf8.count > Self.inlineStringCapacity else {
            return try Self.splitKey(scheme: schemeText, authority: authority)
        }
        // The host the thread's last request went to: compared, not split again, and no
        // string allocated for the host.
        let remembered = PreparationCache.withCurrent { $0.rememberedKey(scheme: schemeText, authority: authority) }
        if case let key?? = remembered { return (key, true) }
        let (key, plain) = try Self.splitKey(scheme: schemeText, authority: authority)
        if plain { PreparationCache.withCurrent { $0.remember(key, scheme: schemeText, authority: authority) } }
        return (key, plain)
    }

    /// The most UTF-8 bytes a `String` holds inline, without a buffer of its own (64-bit).
    private static let inlineStringCapacity = 15

    private static func splitKey(scheme schemeText: String?, authority: String?) throws(TransportError) -> (key: ConnectionKey, plain: Bool) {
        let scheme: ConnectionKey.Scheme
        switch schemeText {
        case "http"?: scheme = .http
        case "https"?: scheme = .https
        case let other?:
            guard let parsed = ConnectionKey.Scheme(rawValue: other.lowercased()) else {
                throw TransportError(.unsupportedScheme, phase: .request, detail: "request has scheme \(other)")
            }
            scheme = parsed
        case nil:
            throw TransportError(.unsupportedScheme, phase: .request, detail: "request has no scheme")
        }
        guard let authority, !authority.isEmpty else {
            throw TransportError(.invalidURL, phase: .request, detail: "request has no authority (host)")
        }
        if let key = ConnectionKey(scheme: scheme, authority: authority) { return (key, true) }
        // Not a plain host[:port]: the full parser normalizes it, or explains what is wrong.
        return (try RequestURL("\(scheme.rawValue)://\(authority)/").key, false)
    }
}

extension ConnectionKey {
    /// Splits `host[:port]` or `[v6]:port`; nil for anything unusual (userinfo, bad
    /// characters, bad ports), which the URL parser then reports.
    init?(scheme: Scheme, authority: String) {
        // Over the string's bytes in place: this runs for every request.
        var text = authority
        guard let (host, port) = text.withUTF8({ Self.split($0[...], scheme: scheme) }) else { return nil }
        self.init(scheme: scheme, host: host, port: port)
    }

    private static func split(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, scheme: Scheme) -> (host: String, port: Int)? {
        var utf8 = bytes
        var hostBytes: Slice<UnsafeBufferPointer<UInt8>>
        var portBytes: Slice<UnsafeBufferPointer<UInt8>>? = nil
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
        if hostBytes.contains(UInt8(ascii: ":")) { return nil }
        if let first = hostBytes.first, first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9"),
           !Self.isDottedQuad(hostBytes) {
            // An address spelled another way (or a name that starts with a digit): the full
            // parser puts it in its one spelling.
            return nil
        }
        let hasUpper = hostBytes.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        let host = String(decoding: hostBytes, as: UTF8.self)
        return (hasUpper ? host.lowercased() : host, port)
    }

    /// Whether `authority` (a Host value) names this key's host and port as the key would
    /// write them, checked without building a string.
    func isSpelled(by authority: String) -> Bool {
        let host = HostName.withoutZone(self.host).utf8
        var rest = Substring(authority).utf8
        if host.contains(UInt8(ascii: ":")) {
            guard rest.first == UInt8(ascii: "["), rest.dropFirst().starts(with: host) else { return false }
            rest = rest.dropFirst(host.count + 1)
            guard rest.first == UInt8(ascii: "]") else { return false }
            rest = rest.dropFirst()
        } else {
            guard rest.starts(with: host) else { return false }
            rest = rest.dropFirst(host.count)
        }
        if rest.isEmpty { return true }
        guard rest.first == UInt8(ascii: ":") else { return false }
        var port = 0
        for byte in rest.dropFirst() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), port < 100_000 else { return false }
            port = port * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return port == self.port
    }

    /// Four decimal parts of 0...255 without leading zeros: an IPv4 address as written canonically.
    private static func isDottedQuad(_ bytes: some Collection<UInt8>) -> Bool {
        var parts = 0
        var value = 0
        var digits = 0
        var leadingZero = false
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard digits > 0 else { return false }
                parts += 1
                digits = 0
                value = 0
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return false }
            if digits == 0 { leadingZero = byte == UInt8(ascii: "0") } else if leadingZero { return false }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            guard value <= 255 else { return false }
        }
        return digits > 0 && parts == 3
    }

    @inline(__always)
    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }

    /// Letters, digits, '-', '.', '_' and '~': what a host name or IPv4 address is made of.
    @inline(__always)
    private static func isHostByte(_ byte: UInt8) -> Bool {
        // As a 128-bit set (a `switch` over ranges compiled to generic range matching).
        let low: UInt64 = 0x03FF_6000_0000_0000    // '-' '.' '0'…'9'
        let high: UInt64 = 0x47FF_FFFE_87FF_FFFE   // 'A'…'Z' '_' 'a'…'z' '~'
        let word = byte < 64 ? low : byte < 128 ? high : 0
        return (word &>> UInt64(byte & 63)) & 1 == 1
    }
}
