import Foundation

/// One `name=value` of a query string: Foundation's `URLQueryItem` itself, so that a request
/// written with `[URLQueryItem]` (as other libraries spell it) is the same request here. A nil
/// value is left out; an empty one sends `name=`.
///
/// ```swift
/// let search = Endpoint<[User]>.get("/users", query: [QueryItem("q", "ada"), URLQueryItem(name: "page", value: "2")])
/// ```
public typealias QueryItem = URLQueryItem

extension URLQueryItem {
    /// `name=value`, the labels left out.
    public init(_ name: String, _ value: String?) {
        self.init(name: name, value: value)
    }

    /// Items for an array under one name, in `format`.
    ///
    /// ```swift
    /// QueryItem.array("tag", ["a", "b"], format: .repeated)   // tag=a&tag=b
    /// QueryItem.array("tag", ["a", "b"], format: .commaSeparated)   // tag=a,b
    /// QueryItem.array("tag", ["a", "b"], format: .brackets)   // tag[]=a&tag[]=b
    /// ```
    public static func array(_ name: String, _ values: [String], format: ArrayFormat = .repeated) -> [QueryItem] {
        switch format {
        case .repeated: values.map { QueryItem(name, $0) }
        case .commaSeparated: values.isEmpty ? [] : [QueryItem(name, values.joined(separator: ","))]
        case .brackets: values.map { QueryItem(name + "[]", $0) }
        case .indexed: values.enumerated().map { QueryItem("\(name)[\($0.offset)]", $0.element) }
        }
    }

    /// How an array of values goes into a query or a form.
    public enum ArrayFormat: Sendable, Hashable {
        /// `a=1&a=2`
        case repeated
        /// `a=1,2`
        case commaSeparated
        /// `a[]=1&a[]=2`
        case brackets
        /// `a[0]=1&a[1]=2`
        case indexed
    }

    /// `items` as a query string (no `?`), in their order, every name and value
    /// percent-encoded so that no `&`, `=`, `+`, `#` or space in them changes its meaning.
    public static func encode(_ items: [QueryItem]) -> String {
        var text = ""
        for item in items {
            guard let value = item.value else { continue }
            if !text.isEmpty { text += "&" }
            text += PercentEncoding.encode(item.name, allowing: .queryComponent)
            text += "="
            text += PercentEncoding.encode(value, allowing: .queryComponent)
        }
        return text
    }
}

/// Percent-encoding of URL parts (RFC 3986).
public enum PercentEncoding {
    /// Which bytes stay as they are.
    public struct Allowed: Sendable {
        let keeps: @Sendable (UInt8) -> Bool

        /// The unreserved characters only (`A–Z a–z 0–9 - . _ ~`): what a path segment made
        /// from a value, or a form field, may hold raw.
        public static let unreserved = Allowed { PercentEncoding.isUnreserved($0) }
        /// Unreserved plus the sub-delimiters a query value can hold without changing the
        /// query's structure (`! $ ' ( ) * , ; : @ /` and `?`); `& = + #` and spaces are encoded.
        public static let queryComponent = Allowed { byte in
            PercentEncoding.isUnreserved(byte) || "!$'()*,;:@/?".utf8.contains(byte)
        }
    }

    /// `text`'s UTF-8 bytes, those outside `allowed` written as `%XX`.
    public static func encode(_ text: String, allowing allowed: Allowed = .unreserved) -> String {
        guard text.utf8.contains(where: { !allowed.keeps($0) }) else { return text }
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            if allowed.keeps(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}

extension DefaultStringInterpolation {
    /// A value as one path segment: every byte but the unreserved ones percent-encoded, so
    /// that a `/`, `?`, `#` or space in it stays inside the segment.
    ///
    /// ```swift
    /// let path = "/users/\(segment: name)/posts"   // "a/b" → "/users/a%2Fb/posts"
    /// ```
    public mutating func appendInterpolation(segment value: some CustomStringConvertible) {
        self.appendLiteral(PercentEncoding.encode(value.description))
    }
}
