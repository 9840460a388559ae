/// The directives of `Cache-Control` header fields (RFC 9111 §5.2), parsed once.
///
/// Names are matched case-insensitively. A directive given twice keeps its first value
/// (§4.2.1 lets a cache pick; the conformance suite expects the first). Values may be
/// quoted strings (`max-age="3600"`); a comma inside quotes belongs to the value, so
/// `ext="max-age=3600"` is one extension, never a `max-age`. A member whose name has white
/// space in it (`max-age =3600`) is not a directive at all.
struct CacheControl: Sendable, Hashable {
    /// Directive names (lower-case) and their values (nil for a bare name).
    private(set) var directives: [String: String?] = [:]

    init(_ fieldValues: [String]) {
        for value in fieldValues {
            for member in Self.members(of: value) {
                let name: Substring
                let argument: String?
                if let equals = member.firstIndex(of: "=") {
                    name = member[..<equals]
                    argument = Self.unquoted(member[member.index(after: equals)...])
                } else {
                    name = member[...]
                    argument = nil
                }
                guard !name.isEmpty, !name.contains(where: { $0 == " " || $0 == "\t" }) else { continue }
                let key = name.lowercased()
                if self.directives[key] == nil { self.directives[key] = .some(argument) }
            }
        }
    }

    init(_ fields: HTTPFields) {
        self.init(fields[values: .cacheControl])
    }

    func has(_ name: String) -> Bool { self.directives[name] != nil }

    /// The value of `name`, nil when absent or bare.
    func value(_ name: String) -> String? { self.directives[name] ?? nil }

    /// A delta-seconds directive: `.absent`, `.invalid` (present without digits only:
    /// `max-age=-1`, `max-age='3600'`), or its value, capped at 2^31 (RFC 9111 §1.2.2).
    func seconds(_ name: String) -> DeltaSeconds {
        guard let entry = self.directives[name] else { return .absent }
        guard let text = entry, let seconds = Self.deltaSeconds(text) else { return .invalid }
        return .value(seconds)
    }

    /// A directive that may come bare (`max-stale`) or with seconds (`max-stale=60`).
    func optionalSeconds(_ name: String) -> (present: Bool, seconds: Double?) {
        guard let entry = self.directives[name] else { return (false, nil) }
        return (true, entry.flatMap(Self.deltaSeconds))
    }

    enum DeltaSeconds: Hashable {
        case absent, invalid
        case value(Double)
    }

    /// Digits only, leading zeros allowed; a number past 2^31 counts as 2^31.
    static func deltaSeconds<S: StringProtocol>(_ text: S) -> Double? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let digits = text.drop(while: { $0 == "0" })
        if digits.count > 10 { return 2_147_483_648 }
        return min(Double(digits.isEmpty ? "0" : String(digits)) ?? 2_147_483_648, 2_147_483_648)
    }

    /// A field's comma-separated members, trimmed, with commas inside quoted strings kept.
    static func members(of value: String) -> [Substring] {
        var members: [Substring] = []
        var start = value.startIndex
        var inQuotes = false
        var escaped = false
        var index = value.startIndex
        while index < value.endIndex {
            let character = value[index]
            if escaped {
                escaped = false
            } else if inQuotes && character == "\\" {
                escaped = true
            } else if character == "\"" {
                inQuotes.toggle()
            } else if character == ",", !inQuotes {
                members.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        members.append(value[start...])
        return members.map(Self.trimmed).filter { !$0.isEmpty }
    }

    static func trimmed(_ text: Substring) -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) }) else { return "" }
        return text[first...last]
    }

    /// A token as it is; a quoted string without its quotes and escapes.
    static func unquoted(_ text: Substring) -> String {
        guard text.count >= 2, text.first == "\"", text.last == "\"" else { return String(text) }
        var result = ""
        var escaped = false
        for character in text.dropFirst().dropLast() {
            if !escaped && character == "\\" { escaped = true; continue }
            escaped = false
            result.append(character)
        }
        return result
    }
}

extension HTTPField.Name {
    static let pragma = HTTPField.Name("Pragma")!
    static let cacheStatus = HTTPField.Name("Cache-Status")!
}
