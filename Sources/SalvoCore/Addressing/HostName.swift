import SalvoTransport
import CSalvo
#if canImport(Glibc)
import Glibc
#endif

/// The one spelling of a URL's host that goes into the Host header, SNI, certificate checks
/// and the connection key: numeric IPv4 forms as a dotted quad, IPv6 addresses in their
/// compressed lowercase form, names lowercased. Two URLs for the same server then share
/// connections, and no odd spelling reaches a header or a certificate check. No I/O.
enum HostName {
    /// Why a host cannot be used.
    enum Problem: Error, Equatable {
        case notASCII
        case badIPv6
    }

    /// The IPv4 address `text` spells, as a dotted quad, if it is one: `127.1`, `0x7f.1`,
    /// `0177.0.0.1`, `2130706433` all mean 127.0.0.1, as `inet_aton` (and curl, and browsers)
    /// read them. Each part is decimal, octal with a leading `0` or hex with `0x`; the last
    /// part fills the bytes the earlier ones leave. nil when `text` is not such a form: then
    /// it is a name.
    static func ipv4(_ text: Substring) -> String? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var values: [UInt64] = []
        for part in parts {
            guard let value = self.number(part) else { return nil }
            values.append(value)
        }
        // Every part but the last is one byte; the last fills what remains.
        let leading = values.dropLast()
        guard leading.allSatisfy({ $0 <= 0xFF }) else { return nil }
        let lastBits = UInt64(8 * (4 - leading.count))
        guard values.last! < (1 << lastBits) else { return nil }
        var address: UInt64 = 0
        for (index, value) in leading.enumerated() { address |= value << UInt64(24 - 8 * index) }
        address |= values.last!
        return "\(address >> 24 & 0xFF).\(address >> 16 & 0xFF).\(address >> 8 & 0xFF).\(address & 0xFF)"
    }

    /// One part of a numeric IPv4 form (strtoul with base 0: `0x` hex, leading `0` octal).
    private static func number(_ part: Substring) -> UInt64? {
        let bytes = Array(part.utf8)
        guard let first = bytes.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { return nil }
        var radix: UInt64 = 10
        var digits = bytes[...]
        if bytes.count >= 2, first == UInt8(ascii: "0"), bytes[1] | 0x20 == UInt8(ascii: "x") {
            radix = 16
            digits = bytes.dropFirst(2)
            guard !digits.isEmpty else { return nil }
        } else if bytes.count >= 2, first == UInt8(ascii: "0") {
            radix = 8
            digits = bytes.dropFirst()
        }
        var value: UInt64 = 0
        for byte in digits {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt64(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
            guard digit < radix else { return nil }
            value = value * radix + digit
            guard value <= UInt64(UInt32.max) else { return nil }
        }
        return value
    }

    /// An IPv6 literal (the text between brackets) in canonical form, and its zone, if any
    /// (RFC 6874 writes `fe80::1%25eth0`; a bare `%` is taken too, as curl does).
    static func ipv6(_ text: Substring) throws(Problem) -> (address: String, zone: String?) {
        var address = text
        var zone: String? = nil
        if let percent = text.firstIndex(of: "%") {
            address = text[..<percent]
            var rest = text[text.index(after: percent)...]
            if rest.hasPrefix("25") { rest = rest.dropFirst(2) }
            guard !rest.isEmpty, rest.utf8.allSatisfy({ HTTPToken.isTokenByte($0) && $0 != UInt8(ascii: "%") }) else {
                throw .badIPv6
            }
            zone = String(rest)
        }
        var binary = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, String(address), &binary) == 1 else { throw .badIPv6 }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(AF_INET6, &binary, &text, socklen_t(text.count)) != nil else { throw .badIPv6 }
        let canonical = String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (canonical, zone)
    }

    /// The host part of a key's host without an IPv6 zone (`fe80::1%eth0` → `fe80::1`): what
    /// the Host header and TLS see. The zone only matters to the local machine.
    static func withoutZone(_ host: String) -> Substring {
        guard host.contains(":"), let percent = host.firstIndex(of: "%") else { return Substring(host) }
        return host[..<percent]
    }

    /// The host as an authority writes it: an IPv6 address in brackets, without its zone.
    static func bracketed(_ host: String) -> String {
        host.contains(":") ? "[\(Self.withoutZone(host))]" : host
    }
}
