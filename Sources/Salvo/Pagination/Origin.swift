/// An origin (RFC 6454 §4): scheme, host and port, compared as a browser compares them —
/// scheme and host without regard to case, a port left out the same as the scheme's default.
/// Only http and https have one here: a page is never fetched from anything else.
struct Origin: Hashable, Sendable, CustomStringConvertible {
    let scheme: String
    let host: String
    let port: Int

    /// The origin of `scheme://authority`; nil for another scheme, an empty host or a port
    /// that is not a number. Userinfo (`user:password@`) is no part of an origin.
    init?(scheme: String?, authority: String?) {
        guard let scheme, let authority else { return nil }
        let lowered = LinkFieldParser.lowercased(scheme.utf8)
        let defaultPort: Int
        switch lowered {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return nil
        }
        let hostAndPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority[...]
        // The port follows the last colon, unless that colon is inside an IPv6 literal's brackets.
        var host = hostAndPort
        var port = defaultPort
        if let colon = hostAndPort.lastIndex(of: ":"), !hostAndPort[colon...].contains("]") {
            host = hostAndPort[..<colon]
            let digits = hostAndPort[hostAndPort.index(after: colon)...]
            if !digits.isEmpty {
                guard digits.utf8.count <= 5, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                      let number = Int(digits), number <= 65535 else { return nil }
                port = number
            }
        }
        guard !host.isEmpty else { return nil }
        self.scheme = lowered
        self.host = LinkFieldParser.lowercased(host.utf8)
        self.port = port
    }

    /// The origin of a client's base URL.
    init?(_ base: BaseURL) {
        self.init(scheme: base.scheme, authority: base.authority)
    }

    /// `scheme://host:port`, the port always written.
    var description: String { "\(self.scheme)://\(self.host):\(self.port)" }
}
