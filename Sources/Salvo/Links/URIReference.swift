/// A URI reference in its five parts (RFC 3986 §3) — `scheme://authority/path?query#fragment`
/// — and its resolution against a base URI (§5.2).
///
/// The typed layer resolves link targets with it: a `Link` field value may name its target
/// relative to the response that carried it (`<?page=2>`, `</items?page=2>`). The engine has a
/// resolver of its own for `Location` values, with curl's leniencies; the typed layer sees
/// only the seam, so it keeps this one, which follows the RFC to the letter (strict parsing,
/// §5.2.2: a reference with a scheme keeps it even when it is the base's).
///
/// Splitting never fails: any string is some reference (§4.1), at worst a relative path.
/// Bytes no URI may hold (spaces, controls, non-ASCII, `"<>\^`{|}`) are percent-encoded as
/// UTF-8 first, as a browser does when it turns an IRI or a sloppy link into a URI.
struct URIReference: Hashable, Sendable, CustomStringConvertible {
    var scheme: String?
    var authority: String?
    var path: String
    var query: String?
    var fragment: String?

    init(scheme: String? = nil, authority: String? = nil, path: String, query: String? = nil, fragment: String? = nil) {
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    /// Splits `text` as Appendix B's regular expression does, with the scheme checked
    /// against §3.1's grammar: `1a:b` has no scheme (and is no valid relative reference
    /// either, but is kept as a path rather than refused).
    init(_ text: String) {
        let bytes = Array(Self.escapingUnsafeBytes(text).utf8)
        var rest = bytes[...]
        func string(_ slice: ArraySlice<UInt8>) -> String { String(decoding: slice, as: UTF8.self) }

        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) {
            self.fragment = string(rest[(hash + 1)...])
            rest = rest[..<hash]
        }
        // The scheme ends at the first ":" that comes before any "/", "?" (a colon after them
        // belongs to a path or a query).
        if let colon = rest.firstIndex(where: { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }),
           rest[colon] == UInt8(ascii: ":"), Self.isScheme(rest[..<colon]) {
            self.scheme = string(rest[..<colon])
            rest = rest[(colon + 1)...]
        }
        if rest.starts(with: "//".utf8) {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
            self.authority = string(rest[..<end])
            rest = rest[end...]
        }
        if let question = rest.firstIndex(of: UInt8(ascii: "?")) {
            self.query = string(rest[(question + 1)...])
            rest = rest[..<question]
        }
        self.path = string(rest)
    }

    /// §5.3: the parts joined again.
    var description: String {
        var text = ""
        if let scheme { text += scheme + ":" }
        if let authority { text += "//" + authority }
        text += self.path
        if let query { text += "?" + query }
        if let fragment { text += "#" + fragment }
        return text
    }

    /// Whether this is an absolute URI (§4.3): it has a scheme. A fragment is allowed here;
    /// callers that send a request drop it.
    var isAbsolute: Bool { self.scheme != nil }

    /// The target of this reference seen from `base` (§5.2.2, strict). `base` should be
    /// absolute; with a relative base the result is as relative as the base.
    func resolved(against base: URIReference) -> URIReference {
        var target = URIReference(path: "")
        if let scheme = self.scheme {
            target.scheme = scheme
            target.authority = self.authority
            target.path = Self.removingDotSegments(self.path)
            target.query = self.query
        } else {
            if let authority = self.authority {
                target.authority = authority
                target.path = Self.removingDotSegments(self.path)
                target.query = self.query
            } else {
                if self.path.isEmpty {
                    // A query or fragment alone: the base's document.
                    target.path = base.path
                    target.query = self.query ?? base.query
                } else {
                    target.path = Self.removingDotSegments(self.path.hasPrefix("/") ? self.path : Self.merge(base: base, path: self.path))
                    target.query = self.query
                }
                target.authority = base.authority
            }
            target.scheme = base.scheme
        }
        target.fragment = self.fragment
        return target
    }

    /// §5.2.3: a relative path put in place of the last segment of the base's path.
    static func merge(base: URIReference, path: String) -> String {
        if base.authority != nil && base.path.isEmpty { return "/" + path }
        guard let slash = base.path.lastIndex(of: "/") else { return path }
        return String(base.path[...slash]) + path
    }

    /// §5.2.4, as the RFC writes it: an input buffer consumed from the left, each step either
    /// dropping a `.` or `..` (a `..` also taking the last segment back off the output) or
    /// moving one segment across.
    static func removingDotSegments(_ path: String) -> String {
        guard path.utf8.contains(UInt8(ascii: ".")) else { return path }
        let slash = UInt8(ascii: "/")
        var input = Array(path.utf8)[...]
        var output: [UInt8] = []
        func inputIs(_ text: String) -> Bool { input.elementsEqual(text.utf8) }
        func inputStarts(_ text: String) -> Bool { input.starts(with: text.utf8) }
        while !input.isEmpty {
            if inputStarts("../") {
                input = input.dropFirst(3)                                   // A
            } else if inputStarts("./") {
                input = input.dropFirst(2)                                   // A
            } else if inputStarts("/./") {
                input = input.dropFirst(2)                                   // B: "/./x" → "/x"
            } else if inputIs("/.") {
                input = [slash][...]                                         // B
            } else if inputStarts("/../") || inputIs("/..") {
                input = inputIs("/..") ? [slash][...] : input.dropFirst(3)   // C
                if let last = output.lastIndex(of: slash) {
                    output.removeSubrange(last...)
                } else {
                    output.removeAll()
                }
            } else if inputIs(".") || inputIs("..") {
                input = []                                                   // D
            } else {
                // E: the first segment, with its leading "/" if it has one.
                let searchFrom = input.first == slash ? input.index(after: input.startIndex) : input.startIndex
                let end = input[searchFrom...].firstIndex(of: slash) ?? input.endIndex
                output += input[..<end]
                input = input[end...]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// §3.1: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    static func isScheme(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let first = bytes.first, Self.isLetter(first) else { return false }
        return bytes.allSatisfy { Self.isLetter($0) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
            || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    /// `text` with every byte that may appear nowhere in a URI written as `%XX`; `%`
    /// itself stays, since it most often starts an escape already there.
    static func escapingUnsafeBytes(_ text: String) -> String {
        func unsafe(_ byte: UInt8) -> Bool {
            byte <= 0x20 || byte >= 0x7F || "\"<>\\^`{|}".utf8.contains(byte)
        }
        guard text.utf8.contains(where: unsafe) else { return text }
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 16)
        for byte in text.utf8 {
            if unsafe(byte) {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
