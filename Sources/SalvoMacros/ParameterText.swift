import Foundation
import Salvo

/// Arguments as the text of a path segment, a header value or a multipart field.
enum ParameterText {
    /// The text of `value`: a string as it is, an enum by its raw value, a number or a Boolean
    /// as Swift prints it, anything else by its description; nil for a nil optional.
    static func text<Value>(of value: Value) -> String? {
        // The common types first, by their metadata: no cast, no conformance lookup.
        if Value.self == String.self { return unsafeBitCast(value, to: String.self) }
        if Value.self == Int.self { return String(unsafeBitCast(value, to: Int.self)) }
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
        if Value.self == String.self || Value.self == Int.self || Value.self == Bool.self { return false }
        return Self.unwrapped(value) == nil
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
    /// The text between placeholders and the placeholders' names, in order; only the path is
    /// searched, not a query or a fragment after it. `:name` is a placeholder at the start of a
    /// segment (so `/items:batchGet` and `/at/10:30` are text); `{name}` anywhere.
    static func split(_ path: String) -> (literals: [String], placeholders: [String]) {
        let bytes = Array(path.utf8)
        var literals: [String] = []
        var names: [String] = []
        var literalStart = 0
        var index = 0
        while index < bytes.count, bytes[index] != UInt8(ascii: "?"), bytes[index] != UInt8(ascii: "#") {
            let byte = bytes[index]
            let startsSegment = index == 0 || bytes[index - 1] == UInt8(ascii: "/")
            if (byte == UInt8(ascii: ":") && startsSegment) || byte == UInt8(ascii: "{") {
                var end = index + 1
                while end < bytes.count, Self.isNameByte(bytes[end]) { end += 1 }
                let braced = byte == UInt8(ascii: "{")
                if end > index + 1, !braced || (end < bytes.count && bytes[end] == UInt8(ascii: "}")) {
                    literals.append(String(decoding: bytes[literalStart..<index], as: UTF8.self))
                    names.append(String(decoding: bytes[(index + 1)..<end], as: UTF8.self))
                    index = braced ? end + 1 : end
                    literalStart = index
                    continue
                }
            }
            index += 1
        }
        literals.append(String(decoding: bytes[literalStart...], as: UTF8.self))
        return (literals, names)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
    }
}

/// Header names from parameter names.
enum HeaderName {
    /// `customHeader` → `Custom-Header`, `requestID` → `Request-Id`, `x_trace` → `X-Trace`: the
    /// words of the kebab-case key mapping, each capitalized. (Worked out once per endpoint key,
    /// by ``APIEndpoint``.)
    static func capitalKebab(_ key: String) -> String {
        KeyMapping.kebabCase.wireName(key)
            .split(whereSeparator: { $0 == "-" || $0 == "_" })
            .map { $0.prefix(1).uppercased() + $0.dropFirst() }
            .joined(separator: "-")
    }
}
