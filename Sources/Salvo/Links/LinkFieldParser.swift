/// Reads one `Link` field value (RFC 8288 §3) into its link-values: each a target between
/// `<` and `>` and its parameters, in order, names lowercased, values unquoted.
///
/// ```
/// Link       = #link-value
/// link-value = "<" URI-Reference ">" *( OWS ";" OWS link-param )
/// link-param = token BWS [ "=" BWS ( token / quoted-string ) ]
/// ```
///
/// It follows the parsing algorithm of the RFC's Appendix B, with one difference: where
/// that algorithm stops at the first thing it cannot read and returns what it has, this one
/// drops only the link-value at fault and goes on after the next comma that is not inside a
/// quoted string or a target. Servers do send odd values, and one bad link (a `title` with a
/// stray quote, a missing `;`) should not hide a good `next` after it.
///
/// Lenient where Appendix B is: a bare value runs to the next `;` or `,` (so `type=text/html`,
/// which is no token, is read), empty list elements and empty parameters (`<a>;; rel=x;`)
/// are skipped. A value that never closes its quote drops its link; a `<` inside a target
/// means the target was never closed, and reading starts over at that `<`.
struct LinkFieldParser {
    /// A link-value as written: the target between the angle brackets, the parameters.
    struct RawLink: Equatable {
        var target: String
        var parameters: [(name: String, value: String)]

        static func == (lhs: RawLink, rhs: RawLink) -> Bool {
            lhs.target == rhs.target && lhs.parameters.elementsEqual(rhs.parameters) { $0 == $1 }
        }
    }

    private let bytes: [UInt8]
    private var index = 0

    private init(_ value: String) {
        self.bytes = Array(value.utf8)
    }

    /// The link-values of `value` that could be read.
    static func parse(_ value: String) -> [RawLink] {
        var parser = LinkFieldParser(value)
        return parser.links()
    }

    private mutating func links() -> [RawLink] {
        var links: [RawLink] = []
        while true {
            // Empty elements of the list (`, ,`) are allowed by its grammar (RFC 9110 §5.6.1).
            self.skip { Self.isWhitespace($0) || $0 == UInt8(ascii: ",") }
            guard let byte = self.peek() else { return links }
            guard byte == UInt8(ascii: "<") else {
                self.skipToNextElement()
                continue
            }
            if let link = self.linkValue() {
                links.append(link)
            }
        }
    }

    /// One link-value, from its `<`; nil when it cannot be read, with the position left where
    /// reading should go on.
    private mutating func linkValue() -> RawLink? {
        self.index += 1
        let start = self.index
        while let byte = self.peek(), byte != UInt8(ascii: ">") {
            if byte == UInt8(ascii: "<") { return nil }   // never closed: the next link starts here
            self.index += 1
        }
        guard self.peek() == UInt8(ascii: ">") else { return nil }   // the end came first
        let target = Self.trimmed(self.bytes[start..<self.index])
        self.index += 1
        var parameters: [(name: String, value: String)] = []
        while true {
            self.skip(Self.isWhitespace)
            guard let byte = self.peek(), byte != UInt8(ascii: ",") else { break }
            guard byte == UInt8(ascii: ";") else {
                // Something else after a target or a parameter: not a link-value we can trust.
                self.skipToNextElement()
                return nil
            }
            self.index += 1
            self.skip(Self.isWhitespace)
            let nameStart = self.index
            self.skip(HTTPToken.isTokenByte)
            let name = Self.lowercased(self.bytes[nameStart..<self.index])
            self.skip(Self.isWhitespace)
            if name.isEmpty {
                // `;;` or a trailing `;` are harmless; `;=x` or `;"x"` are not.
                if let next = self.peek(), next != UInt8(ascii: ";"), next != UInt8(ascii: ",") {
                    self.skipToNextElement()
                    return nil
                }
                continue
            }
            var value = ""
            if self.peek() == UInt8(ascii: "=") {
                self.index += 1
                self.skip(Self.isWhitespace)
                if self.peek() == UInt8(ascii: "\"") {
                    guard let quoted = self.quotedString() else { return nil }
                    value = quoted
                } else {
                    let valueStart = self.index
                    self.skip { $0 != UInt8(ascii: ";") && $0 != UInt8(ascii: ",") }
                    value = Self.trimmed(self.bytes[valueStart..<self.index])
                }
            }
            parameters.append((name, value))
        }
        return RawLink(target: target, parameters: parameters)
    }

    /// A quoted-string from its opening quote, escapes undone (`\"` is `"`, `\\` is `\`,
    /// and RFC 9110 §5.6.4 lets any byte be escaped so); nil when it never closes.
    private mutating func quotedString() -> String? {
        self.index += 1
        var value: [UInt8] = []
        while let byte = self.peek() {
            self.index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: value, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = self.peek() else { return nil }
                value.append(escaped)
                self.index += 1
            default:
                value.append(byte)
            }
        }
        return nil
    }

    /// Moves past the current list element: to the next comma outside a quoted string or an
    /// angle-bracketed target (either may hold commas), or to the end.
    private mutating func skipToNextElement() {
        while let byte = self.peek() {
            switch byte {
            case UInt8(ascii: ","):
                self.index += 1
                return
            case UInt8(ascii: "\""):
                if self.quotedString() == nil { return }
            case UInt8(ascii: "<"):
                // A new link-value may start here even without a comma before it.
                return
            default:
                self.index += 1
            }
        }
    }

    private func peek() -> UInt8? {
        self.index < self.bytes.count ? self.bytes[self.index] : nil
    }

    private mutating func skip(_ predicate: (UInt8) -> Bool) {
        while let byte = self.peek(), predicate(byte) { self.index += 1 }
    }

    /// OWS (space and tab), and the CR and LF a folded or badly joined value may still hold.
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
    }

    static func trimmed(_ bytes: ArraySlice<UInt8>) -> String {
        var slice = bytes
        while let first = slice.first, Self.isWhitespace(first) { slice = slice.dropFirst() }
        while let last = slice.last, Self.isWhitespace(last) { slice = slice.dropLast() }
        return String(decoding: slice, as: UTF8.self)
    }

    /// ASCII letters lowercased, nothing else touched: names and relation types compare
    /// case-insensitively byte by byte (RFC 8288 §2.1.1, §3.3), whatever the locale.
    static func lowercased(_ bytes: some Sequence<UInt8>) -> String {
        String(decoding: bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}

extension LinkFieldParser {
    /// An RFC 8187 ext-value (`UTF-8'en'%E2%82%AC%20rates`), as a `title*` carries text
    /// beyond ASCII: the charset (UTF-8 or ISO-8859-1, the two the RFC names), an optional
    /// language, then percent-encoded bytes. nil when it is not one, or its bytes are not
    /// text in its charset.
    static func decodeExtendedValue(_ value: String) -> String? {
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = Self.lowercased(parts[0].utf8)
        var bytes: [UInt8] = []
        var encoded = parts[2].utf8[...]
        while let byte = encoded.first {
            if byte == UInt8(ascii: "%") {
                let digits = encoded.dropFirst().prefix(2)
                guard digits.count == 2, let high = Self.hexValue(digits.first!), let low = Self.hexValue(digits.last!) else { return nil }
                bytes.append(high << 4 | low)
                encoded = encoded.dropFirst(3)
            } else {
                // attr-char: a token byte but for `*`, `'` and `%`.
                guard HTTPToken.isTokenByte(byte), byte != UInt8(ascii: "*"), byte != UInt8(ascii: "'") else { return nil }
                bytes.append(byte)
                encoded = encoded.dropFirst()
            }
        }
        switch charset {
        case "utf-8":
            return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1":
            // Each byte is the code point of the same number.
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default:
            return nil
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
