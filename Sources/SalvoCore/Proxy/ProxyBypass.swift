import SalvoTransport
#if canImport(Glibc)
import Glibc
#endif

/// Hosts that go direct, not through the proxy: `NO_PROXY`, as curl reads it.
///
/// A list separated by commas or spaces. `*` as the whole list: every host. A name matches itself and
/// every name under it (`example.com` and `.example.com` both match `example.com` and
/// `api.example.com`, not `badexample.com`); case and a trailing dot do not count. A numeric
/// entry matches that address, and with `/bits` the network (`10.0.0.0/8`, `fd00::/8`).
/// Ports are not part of an entry.
///
/// ```swift
/// let bypass: ProxyBypass = "localhost, .internal, 10.0.0.0/8"
/// ```
public struct ProxyBypass: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The entries as given, without separators.
    public private(set) var entries: [String]

    /// No host bypasses the proxy.
    public init() {
        self.entries = []
    }

    /// curl's `NO_PROXY` syntax.
    public init(_ list: String) {
        self.entries = list.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map(String.init)
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public var description: String { self.entries.joined(separator: ",") }

    /// Whether `host` (a name, or a numeric address without brackets) goes direct.
    public func matches(_ host: String) -> Bool {
        guard !self.entries.isEmpty else { return false }
        var name = Substring(host.lowercased())
        if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        if let percent = name.firstIndex(of: "%") { name = name[..<percent] }
        if name.hasSuffix(".") { name = name.dropLast() }
        if self.entries == ["*"] { return true }
        let address = Self.numeric(name)
        for entry in self.entries {
            if let address {
                if Self.network(entry, contains: address) { return true }
                continue
            }
            var pattern = Substring(entry.lowercased())
            if pattern.hasPrefix(".") { pattern = pattern.dropFirst() }
            if pattern.hasSuffix(".") { pattern = pattern.dropLast() }
            guard !pattern.isEmpty else { continue }
            if name == pattern { return true }
            if name.count > pattern.count, name.hasSuffix(pattern),
               name[name.index(name.endIndex, offsetBy: -pattern.count - 1)] == "." {
                return true
            }
        }
        return false
    }

    /// The bytes of a numeric IPv4 or IPv6 address, or nil for a name.
    private static func numeric(_ text: Substring) -> [UInt8]? {
        var four = in_addr()
        if inet_pton(AF_INET, String(text), &four) == 1 {
            return withUnsafeBytes(of: &four) { Array($0) }
        }
        var six = in6_addr()
        if inet_pton(AF_INET6, String(text), &six) == 1 {
            return withUnsafeBytes(of: &six) { Array($0) }
        }
        return nil
    }

    /// Whether `entry` (`address` or `address/bits`) covers `address` (same family only).
    private static func network(_ entry: String, contains address: [UInt8]) -> Bool {
        var text = Substring(entry)
        var bits: Int? = nil
        if let slash = text.firstIndex(of: "/") {
            guard let value = Int(text[text.index(after: slash)...]) else { return false }
            bits = value
            text = text[..<slash]
        }
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        guard let network = numeric(text), network.count == address.count else { return false }
        // As curl: no bits, or /0, compares the whole address.
        let prefix = bits.flatMap { $0 == 0 ? nil : $0 } ?? network.count * 8
        guard prefix > 0, prefix <= network.count * 8 else { return false }
        var remaining = prefix
        for index in network.indices where remaining > 0 {
            let take = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            if network[index] & mask != address[index] & mask { return false }
            remaining -= take
        }
        return true
    }
}

extension ProxyConfiguration {
    /// The proxies the process environment names, read now, as curl reads them:
    /// `http_proxy` for http URLs (only the lower-case name: a CGI server sets `HTTP_PROXY`
    /// from a request's `Proxy:` header), `https_proxy` then `HTTPS_PROXY` for https URLs,
    /// `all_proxy` then `ALL_PROXY` for either when its own is unset, and `no_proxy` then
    /// `NO_PROXY` for the hosts that go direct. A variable set but empty counts as unset.
    ///
    /// A variable that names a proxy Salvo cannot use (not `http://`, or not a proxy's
    /// spelling: see ``HTTPProxy/init(_:)``) matters only where it applies, as with curl: the
    /// requests it would carry (those `NO_PROXY` does not send direct) fail with its error
    /// (``httpRefusal``, ``httpsRefusal``, naming the variable), never go direct instead;
    /// the others go as the rest of the environment says.
    ///
    /// - Throws: nothing any more (kept for source compatibility).
    public static func environment() throws(TransportError) -> ProxyConfiguration {
        try self.environment(processEnvironment(["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                                                 "no_proxy", "NO_PROXY"]))
    }

    /// The same reading of `variables` instead of the process environment.
    public static func environment(_ variables: [String: String]) throws(TransportError) -> ProxyConfiguration {
        /// The first variable set among `names`: its proxy, or why it cannot be used.
        func proxy(_ names: [String]) -> Result<HTTPProxy, TransportError>? {
            for name in names {
                guard let value = variables[name]?[...].trimmingOWS, !value.isEmpty else { continue }
                do throws(TransportError) {
                    return .success(try HTTPProxy(String(value)))
                } catch {
                    var refusal = error
                    refusal.detail = "\(name): " + (error.detail ?? "cannot be used")
                    return .failure(refusal)
                }
            }
            return nil
        }
        let fallback = ["all_proxy", "ALL_PROXY"]
        let http = proxy(["http_proxy"] + fallback)
        let https = proxy(["https_proxy", "HTTPS_PROXY"] + fallback)
        var configuration = ProxyConfiguration(http: try? http?.get(), https: try? https?.get(),
                                               bypass: ProxyBypass.environment(variables))
        if case .failure(let error)? = http { configuration.httpRefusal = error }
        if case .failure(let error)? = https { configuration.httpsRefusal = error }
        return configuration
    }
}

extension ProxyBypass {
    /// `no_proxy`, else `NO_PROXY`, from the process environment (an empty one counts as unset).
    public static func environment() -> ProxyBypass {
        self.environment(processEnvironment(["no_proxy", "NO_PROXY"]))
    }

    /// The same reading of `variables`.
    public static func environment(_ variables: [String: String]) -> ProxyBypass {
        ["no_proxy", "NO_PROXY"].lazy.compactMap { variables[$0] }.first { !$0.isEmpty }.map { ProxyBypass($0) } ?? ProxyBypass()
    }
}

/// The variables among `names` that the process environment sets. A value that is not
/// UTF-8 (a proxy password typed in Latin-1, say) keeps its bytes: those past ASCII are
/// percent-encoded, which a proxy URL's userinfo decodes back to the same bytes.
private func processEnvironment(_ names: [String]) -> [String: String] {
    var variables: [String: String] = [:]
    for name in names {
        guard let value = getenv(name) else { continue }
        let bytes = Array(UnsafeRawBufferPointer(start: value, count: strlen(value)))
        if let text = String(validating: bytes, as: UTF8.self) {
            variables[name] = text
        } else {
            variables[name] = bytes.map { $0 < 0x80 ? String(UnicodeScalar($0)) : "%" + String($0, radix: 16, uppercase: true) }.joined()
        }
    }
    return variables
}
