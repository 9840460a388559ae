import Foundation
import Salvo

/// Arguments as the text of a path segment, a header value or a multipart field.
enum ParameterText {
    /// The text of `value`: a string as it is, an enum by its raw value, a number or a Boolean
    /// as Swift prints it, anything else by its description; nil for a nil optional.
    static func text<Value>(of value: Value) -> String? {
        guard let unwrapped = Self.unwrapped(value) else { return nil }
        return Self.plainText(of: unwrapped) ?? String(describing: unwrapped)
    }

    /// The text of a string, a number, a Boolean or an enum with such a raw value; nil for
    /// anything else (which a form or JSON encodes better).
    static func plainText(of value: Any) -> String? {
        switch value {
        case let text as String: text
        case let text as Substring: String(text)
        case let number as any BinaryInteger: "\(number)"
        case let number as Double: "\(number)"
        case let flag as Bool: flag ? "true" : "false"
        case let raw as any RawRepresentable: Self.plainText(of: raw.rawValue)
        default: nil
        }
    }

    /// Whether `value` is a nil optional (at any depth).
    static func isNil<Value>(_ value: Value) -> Bool {
        Self.unwrapped(value) == nil
    }

    private static func unwrapped(_ value: Any) -> Any? {
        guard let optional = value as? any OptionalArgument else { return value }
        return optional.wrappedArgument.flatMap { Self.unwrapped($0) }
    }
}

private protocol OptionalArgument {
    var wrappedArgument: Any? { get }
}

extension Optional: OptionalArgument {
    fileprivate var wrappedArgument: Any? { self.map { $0 as Any } }
}

/// `:name` and `{name}` placeholders of a path template.
enum PathTemplate {
    /// Replaces the placeholder `key` in the path (not its query) with `text`, encoded as one
    /// segment; false when there is none.
    static func fill(_ path: inout String, key: String, with text: String) -> Bool {
        guard let range = Self.placeholder(in: path, key: key) else { return false }
        path.replaceSubrange(range, with: Self.segment(text))
        return true
    }

    static func hasPlaceholder(_ path: String, key: String) -> Bool {
        Self.placeholder(in: path, key: key) != nil
    }

    /// The first placeholder left in the path part of `path`, if any.
    static func firstPlaceholder(in path: String) -> String? {
        let utf8 = Array(path.utf8)
        var index = 0
        while index < utf8.count, utf8[index] != UInt8(ascii: "?"), utf8[index] != UInt8(ascii: "#") {
            if utf8[index] == UInt8(ascii: ":") || utf8[index] == UInt8(ascii: "{") {
                var end = index + 1
                while end < utf8.count, Self.isNameByte(utf8[end]) { end += 1 }
                let closed = utf8[index] == UInt8(ascii: ":") || (end < utf8.count && utf8[end] == UInt8(ascii: "}"))
                if end > index + 1, closed {
                    return String(decoding: utf8[(index + 1)..<end], as: UTF8.self)
                }
            }
            index += 1
        }
        return nil
    }

    private static func placeholder(in path: String, key: String) -> Range<String.Index>? {
        let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? path.endIndex
        var searchStart = path.startIndex
        while let colon = path.range(of: ":" + key, range: searchStart..<end) {
            if colon.upperBound == end || !Self.isNameCharacter(path[colon.upperBound]) { return colon }
            searchStart = colon.upperBound
        }
        if let braced = path.range(of: "{" + key + "}", range: path.startIndex..<end) { return braced }
        return nil
    }

    private static func isNameCharacter(_ character: Character) -> Bool {
        character.isLetter || character.isNumber || character == "_"
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
    }

    /// `text` percent-encoded as one path segment: `/`, `?`, `#`, `%` and `;` included.
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: Self.segmentAllowed) ?? text
    }

    private static let segmentAllowed = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/;?#%"))
}

/// Header names from parameter names.
enum HeaderName {
    /// `customHeader` → `Custom-Header`, `requestID` → `Request-Id`, `x_trace` → `X-Trace`.
    static func capitalKebab(_ key: String) -> String {
        KeyMapping.kebabCase.wireName(key)
            .replacingOccurrences(of: "_", with: "-")
            .split(separator: "-", omittingEmptySubsequences: false)
            .map { $0.prefix(1).uppercased() + $0.dropFirst() }
            .joined(separator: "-")
    }
}
