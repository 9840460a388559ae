import SalvoCore

/// A URL as typed on `salvo get`'s command line, read as curl reads it.
///
/// - `scheme:` followed by one to three slashes is that scheme (`https:/host/x` is
///   `https://host/x`); four or more is a malformed URL (curl's exit 3).
/// - Without a scheme (`host:8080/x`, `127.0.0.1/`), http is meant. A name followed by a
///   colon and not a slash is a host and port, never a scheme.
/// - Bytes outside ASCII in the path and query are percent-encoded; the host is left as
///   typed, for the URL parser to accept or refuse. In the userinfo they are percent-encoded
///   too, so that the credentials keep their bytes (they are percent-decoded into the
///   Authorization field, as curl sends them).
/// - `.` and `..` segments of the path are resolved (RFC 3986 §5.2.4), as curl does.
enum CommandLineURL {
    struct Malformed: Error {
        let reason: String
    }

    static func normalize(_ bytes: [UInt8]) throws(Malformed) -> String {
        var schemeEnd: Int? = nil
        if let first = bytes.first, Self.isLetter(first) {
            var index = 1
            while index < bytes.count, Self.isSchemeByte(bytes[index]) { index += 1 }
            if index < bytes.count, bytes[index] == UInt8(ascii: ":"), index + 1 < bytes.count,
               bytes[index + 1] == UInt8(ascii: "/") {
                schemeEnd = index
            }
        }
        var text: [UInt8]
        if let schemeEnd {
            var slashes = 0
            while schemeEnd + 1 + slashes < bytes.count, bytes[schemeEnd + 1 + slashes] == UInt8(ascii: "/") { slashes += 1 }
            guard slashes <= 3 else { throw Malformed(reason: "too many slashes after the scheme") }
            text = Array(bytes[..<schemeEnd]) + Array("://".utf8) + Array(bytes[(schemeEnd + 1 + slashes)...])
        } else {
            text = Array("http://".utf8) + bytes
        }
        return Self.removingDotSegments(Self.encodeOutsideAuthority(text))
    }

    /// The URL with its path's `.` and `..` segments resolved; the query and fragment as they are.
    private static func removingDotSegments(_ url: String) -> String {
        guard url.contains("/."), let schemeEnd = url.firstRange(of: "://")?.upperBound else { return url }
        let afterScheme = url[schemeEnd...]
        guard let pathStart = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }),
              url[pathStart] == "/" else { return url }
        let pathEnd = url[pathStart...].firstIndex(where: { $0 == "?" || $0 == "#" }) ?? url.endIndex
        return String(url[..<pathStart]) + URLReference.removeDotSegments(url[pathStart..<pathEnd]) + url[pathEnd...]
    }

    /// Percent-encodes bytes outside ASCII in the userinfo and after the authority.
    private static func encodeOutsideAuthority(_ url: [UInt8]) -> String {
        guard url.contains(where: { $0 >= 0x80 }) else { return String(decoding: url, as: UTF8.self) }
        var start = 0
        if let colon = url.firstIndex(of: UInt8(ascii: ":")) { start = colon + 3 }
        let authorityEnd = url[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? url.count
        let hostStart = url[start..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) ?? start
        var output = Array(url[..<start])
        RawArguments.appendPercentEncodingNonASCII(url[start..<hostStart], to: &output)
        output += url[hostStart..<authorityEnd]
        RawArguments.appendPercentEncodingNonASCII(url[authorityEnd...], to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        Self.isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }
}
