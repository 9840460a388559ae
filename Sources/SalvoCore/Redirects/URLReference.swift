import SalvoTransport

/// Resolving a URI reference (a Location value) against a base URL, RFC 3986 §5.2.
package enum URLReference {
    struct Parts: Equatable {
        var scheme: Substring?
        var authority: Substring?
        var path: Substring
        var query: Substring?
    }

    /// The target of `reference` seen from `base`, fragment dropped (it never goes on the
    /// wire). Bytes a URL may not hold (spaces, controls, non-ASCII) are percent-encoded, as
    /// browsers and curl do with sloppy Location values.
    package static func resolve(_ reference: String, against base: String) -> String {
        let r = self.split(Substring(self.encodeUnsafeBytes(reference, asLocation: true)))
        let b = self.split(Substring(base))
        var result = Parts(path: "")
        if let scheme = r.scheme {
            result = Parts(scheme: scheme, authority: r.authority, path: Substring(self.removeDotSegments(r.path)), query: r.query)
        } else if let authority = r.authority {
            result = Parts(scheme: b.scheme, authority: authority, path: Substring(self.removeDotSegments(r.path)), query: r.query)
        } else if r.path.isEmpty {
            result = Parts(scheme: b.scheme, authority: b.authority, path: b.path, query: r.query ?? b.query)
        } else if r.path.hasPrefix("/") {
            result = Parts(scheme: b.scheme, authority: b.authority, path: Substring(self.removeDotSegments(r.path)), query: r.query)
        } else {
            result = Parts(scheme: b.scheme, authority: b.authority,
                           path: Substring(self.removeDotSegments(Substring(self.merge(base: b, path: r.path)))), query: r.query)
        }
        var text = ""
        if let scheme = result.scheme { text += scheme.lowercased() + ":" }
        if let authority = result.authority { text += "//" + authority }
        text += result.path
        if let query = result.query { text += "?" + query }
        return text
    }

    static func split(_ text: Substring) -> Parts {
        var rest = text
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var parts = Parts(path: "")
        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
        if let colon = rest.firstIndex(of: ":"), let first = rest.first, first.isASCII, first.isLetter,
           rest[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }) {
            parts.scheme = rest[..<colon]
            rest = rest[rest.index(after: colon)...]
        }
        // As curl reads a Location: http or https followed by one or three slashes has its host
        // after them (`http:///host/x` is `http://host/x`); four or more is no URL.
        if let scheme = parts.scheme, ["http", "https"].contains(scheme.lowercased()) {
            let slashes = rest.prefix(while: { $0 == "/" }).count
            if slashes == 1 || slashes == 3 { rest = "//" + rest.dropFirst(slashes) }
        }
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            parts.authority = rest[..<end]
            rest = rest[end...]
        }
        if let question = rest.firstIndex(of: "?") {
            parts.query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        parts.path = rest
        return parts
    }

    /// §5.2.3.
    static func merge(base: Parts, path: Substring) -> String {
        if base.authority != nil && base.path.isEmpty { return "/" + path }
        guard let slash = base.path.lastIndex(of: "/") else { return String(path) }
        return String(base.path[...slash] + path)
    }

    /// §5.2.4, over whole segments.
    package static func removeDotSegments(_ path: Substring) -> String {
        guard path.contains(".") else { return String(path) }
        let absolute = path.hasPrefix("/")
        var segments = path.split(separator: "/", omittingEmptySubsequences: false)
        if absolute { segments.removeFirst() }
        var output: [Substring] = []
        for (index, segment) in segments.enumerated() {
            let last = index == segments.count - 1
            switch segment {
            case ".":
                if last { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if last { output.append("") }
            default:
                output.append(segment)
            }
        }
        let joined = output.joined(separator: "/")
        return absolute ? "/" + joined : joined
    }

    /// The bytes `text` stands for, `%XX` escapes decoded (a `%` not followed by two hex
    /// digits stays as it is, as curl leaves it).
    package static func percentDecoded(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return bytes }
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return output
    }

    /// `text` with the bytes a URL may not hold (spaces, controls, non-ASCII) percent-encoded
    /// in upper-case hex (RFC 3986 §2.1). `asLocation`: as curl encodes a sloppy Location
    /// instead — lower-case hex, and a space in the query as `+` (in the path, `%20`).
    static func encodeUnsafeBytes(_ text: String, asLocation: Bool = false) -> String {
        guard text.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) else { return text }
        let hex = Array((asLocation ? "0123456789abcdef" : "0123456789ABCDEF").utf8)
        var bytes: [UInt8] = []
        var inQuery = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: "?") { inQuery = asLocation }
            if byte == 0x20 && inQuery {
                bytes.append(UInt8(ascii: "+"))
            } else if byte <= 0x20 || byte >= 0x7F {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
