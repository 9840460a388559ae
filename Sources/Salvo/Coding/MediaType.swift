import Foundation

/// A media type for `Content-Type` and `Accept`, with the common ones named.
///
/// ```swift
/// let body = HTTPBody.binary(png, contentType: .png)
/// let part = try MultipartPart.file(path: "/tmp/report.pdf", name: "report")   // application/pdf, from the name
/// ```
public struct MediaType: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The whole value, parameters included (`text/plain; charset=utf-8`).
    public var rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    public var description: String { self.rawValue }

    /// `type/subtype`, lowercased, without parameters.
    public var essence: String {
        let end = self.rawValue.firstIndex(of: ";") ?? self.rawValue.endIndex
        return self.rawValue[..<end].trimmingCharacters(in: .whitespaces).lowercased()
    }

    public static let json: MediaType = "application/json"
    public static let jsonLines: MediaType = "application/x-ndjson"
    public static let text: MediaType = "text/plain; charset=utf-8"
    public static let html: MediaType = "text/html; charset=utf-8"
    public static let csv: MediaType = "text/csv"
    public static let xml: MediaType = "application/xml"
    public static let formURLEncoded: MediaType = "application/x-www-form-urlencoded"
    public static let multipartFormData: MediaType = "multipart/form-data"
    public static let eventStream: MediaType = "text/event-stream"
    public static let octetStream: MediaType = "application/octet-stream"
    public static let pdf: MediaType = "application/pdf"
    public static let zip: MediaType = "application/zip"
    public static let gzip: MediaType = "application/gzip"
    public static let png: MediaType = "image/png"
    public static let jpeg: MediaType = "image/jpeg"
    public static let gif: MediaType = "image/gif"
    public static let webp: MediaType = "image/webp"
    public static let svg: MediaType = "image/svg+xml"
    public static let mp4: MediaType = "video/mp4"
    public static let mpeg: MediaType = "audio/mpeg"

    /// The usual type of a file with this name's extension; `application/octet-stream` when
    /// the extension is not one of the common ones.
    public static func forFile(named name: String) -> MediaType {
        MediaType(rawValue: FileMediaTypes.type(forFileNamed: name))
    }

    /// Whether `self` (an `Accept` range such as `application/*` or `*/*`) covers `other`.
    /// A structured syntax suffix (RFC 6839) counts both ways: `application/json` covers
    /// `application/problem+json`, and `application/vnd.github+json` covers
    /// `application/json`, the generic form of the same syntax.
    public func matches(_ other: MediaType) -> Bool {
        let range = self.essence.split(separator: "/", maxSplits: 1)
        let value = other.essence.split(separator: "/", maxSplits: 1)
        guard range.count == 2, value.count == 2 else { return false }
        if range[0] == "*" { return true }
        guard range[0] == value[0] else { return false }
        if range[1] == "*" || range[1] == value[1] { return true }
        return Self.suffix(of: value[1]) == range[1] || Self.suffix(of: range[1]) == value[1]
            || (Self.suffix(of: range[1]).map { $0 == Self.suffix(of: value[1]) } ?? false)
    }

    /// `json` of `vnd.github+json`; nil without a suffix.
    private static func suffix(of subtype: Substring) -> Substring? {
        guard let plus = subtype.lastIndex(of: "+") else { return nil }
        return subtype[subtype.index(after: plus)...]
    }
}

extension HTTPBody {
    /// Bytes of a given type.
    public static func binary(_ bytes: [UInt8], contentType: MediaType = .octetStream) -> HTTPBody {
        .bytes(bytes, contentType: contentType.rawValue)
    }

    /// `Data` of a given type.
    public init(data: Data, contentType: MediaType = .octetStream) {
        self = .bytes(Array(data), contentType: contentType.rawValue)
    }

    /// `value` as JSON, with `encoder` (Foundation's default when nil).
    ///
    /// - Throws: ``ClientError`` `.encodingFailed` with the coding path.
    public static func json<Value: Encodable>(_ value: Value, encoder: JSONEncoder? = nil) throws(ClientError) -> HTTPBody {
        .bytes(try Coders(encoder: encoder ?? JSONEncoder()).encodeJSON(value), contentType: MediaType.json.rawValue)
    }

    /// A JSON object or array made of dictionaries, arrays, strings, numbers, booleans and
    /// `NSNull` (what `JSONSerialization` takes).
    ///
    /// - Throws: ``ClientError`` `.encodingFailed` when `object` is not valid JSON.
    public static func json(object: Any) throws(ClientError) -> HTTPBody {
        guard JSONSerialization.isValidJSONObject(object) else {
            throw ClientError(.encodingFailed, detail: "not a JSON object or array: \(type(of: object))")
        }
        do {
            return .bytes(Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])),
                          contentType: MediaType.json.rawValue)
        } catch {
            throw ClientError(.encodingFailed, detail: "\(error)")
        }
    }

    /// `value` as a form (`application/x-www-form-urlencoded`).
    public static func form<Value: Encodable>(_ value: Value, encoder: URLFormEncoder = URLFormEncoder()) throws(ClientError) -> HTTPBody {
        .bytes(try encoder.encode(value), contentType: MediaType.formURLEncoded.rawValue)
    }

    /// Fields, in order, as a form.
    public static func form(_ fields: [QueryItem]) -> HTTPBody {
        .string(URLFormEncoder.serialize(fields), contentType: MediaType.formURLEncoded.rawValue)
    }

    /// A `multipart/form-data` body; file parts are read from disk as they are sent.
    ///
    /// - Throws: ``ClientError`` `.encodingFailed` for a boundary that is not valid or that
    ///   appears in a part.
    public static func multipart(_ parts: [MultipartPart], boundary: String? = nil) throws(ClientError) -> HTTPBody {
        try MultipartFormEncoder(boundary: boundary).body(parts: parts)
    }
}
