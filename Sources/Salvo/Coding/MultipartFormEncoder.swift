import Foundation
import SalvoTransport
#if canImport(Glibc)
import Glibc
#endif

/// One part of a `multipart/form-data` body: a text field, bytes, or a file read from disk
/// as it is sent.
///
/// ```swift
/// let parts: [MultipartPart] = [
///     .text("Ada", name: "author"),
///     .data(thumbnail, name: "thumbnail", filename: "thumb.png", contentType: .png),
///     try .file(path: "/var/exports/report.pdf", name: "report"),
/// ]
/// let body = try HTTPBody.multipart(parts)
/// ```
public struct MultipartPart: Sendable {
    /// Where the part's content comes from.
    public enum Content: Sendable {
        case bytes([UInt8])
        /// A regular file of `size` bytes (its size when the part was made).
        case file(path: String, size: Int)
    }

    /// The form field's name.
    public var name: String
    /// The file name the server sees; nil for a plain field.
    public var filename: String?
    /// The part's `Content-Type`; nil sends none (a text field).
    public var contentType: MediaType?
    /// More header fields for the part.
    public var headerFields: HTTPFields
    public var content: Content

    public init(name: String, filename: String? = nil, contentType: MediaType? = nil, headerFields: HTTPFields = [:],
                content: Content) {
        self.name = name
        self.filename = filename
        self.contentType = contentType
        self.headerFields = headerFields
        self.content = content
    }

    /// A text field.
    public static func text(_ value: String, name: String) -> MultipartPart {
        MultipartPart(name: name, content: .bytes(Array(value.utf8)))
    }

    /// Bytes, as a file upload when `filename` is given.
    public static func data(_ bytes: [UInt8], name: String, filename: String? = nil,
                            contentType: MediaType = .octetStream) -> MultipartPart {
        MultipartPart(name: name, filename: filename, contentType: contentType, content: .bytes(bytes))
    }

    /// `Data`, as a file upload when `filename` is given.
    public static func data(_ data: Data, name: String, filename: String? = nil,
                            contentType: MediaType = .octetStream) -> MultipartPart {
        .data(Array(data), name: name, filename: filename, contentType: contentType)
    }

    /// `value` as a JSON part.
    public static func json<Value: Encodable>(_ value: Value, name: String, encoder: JSONEncoder? = nil) throws(ClientError) -> MultipartPart {
        MultipartPart(name: name, contentType: .json, content: .bytes(try Coders(encoder: encoder ?? JSONEncoder()).encodeJSON(value)))
    }

    /// A file streamed from disk when the body is sent, never read whole into memory. Its
    /// file name defaults to the path's last component, its type to the one its extension
    /// names (see ``MediaType/forFile(named:)``).
    ///
    /// - Throws: ``ClientError`` `.encodingFailed` when the file cannot be read or is not a
    ///   regular file. If it changes size or disappears while it is sent, the request fails
    ///   with the transport's `.requestBodyFailed` naming it.
    public static func file(path: String, name: String, filename: String? = nil, contentType: MediaType? = nil) throws(ClientError) -> MultipartPart {
        var info = stat()
        guard stat(path, &info) == 0, access(path, R_OK) == 0 else {
            throw ClientError(.encodingFailed, detail: "multipart part \"\(name)\": cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw ClientError(.encodingFailed, detail: "multipart part \"\(name)\": \(path) is not a regular file")
        }
        let shownName = filename ?? String(path.split(separator: "/").last ?? "file")
        return MultipartPart(name: name, filename: shownName, contentType: contentType ?? .forFile(named: shownName),
                             content: .file(path: path, size: Int(info.st_size)))
    }

    var contentLength: Int {
        switch self.content {
        case .bytes(let bytes): bytes.count
        case .file(_, let size): size
        }
    }
}

/// Writes `multipart/form-data` bodies (RFC 7578). Usable on its own.
///
/// ```swift
/// var encoder = try MultipartFormEncoder()
/// let bytes = try encoder.encode(parts: [.text("hello", name: "greeting")])
/// var request = HTTPRequest(method: .post, scheme: "https", authority: "example.com", path: "/upload")
/// request.headerFields[.contentType] = encoder.contentType
/// ```
///
/// The boundary never occurs in the content: a generated one is replaced if a part in memory
/// holds it, a chosen one is refused, and a file streamed from disk that turns out to hold it
/// fails the request rather than send a body the server would split wrongly. Names and file
/// names go in UTF-8 with `"`, CR and LF percent-encoded, as browsers send them.
public struct MultipartFormEncoder: Sendable {
    /// The boundary between parts.
    public private(set) var boundary: String
    private let boundaryWasChosen: Bool

    /// An encoder with `boundary`, or a random one.
    ///
    /// - Throws: ``ClientError`` `.encodingFailed` when `boundary` is not 1–70 characters
    ///   from RFC 2046's set, or ends with a space.
    public init(boundary: String? = nil) throws(ClientError) {
        if let boundary {
            let allowed = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ")
            guard (1...70).contains(boundary.count), boundary.allSatisfy(allowed.contains), boundary.last != " " else {
                throw ClientError(.encodingFailed, detail: "multipart boundary \"\(boundary)\" is not 1–70 characters of RFC 2046's set")
            }
            self.boundary = boundary
            self.boundaryWasChosen = true
        } else {
            self.boundary = Self.randomBoundary()
            self.boundaryWasChosen = false
        }
    }

    /// `multipart/form-data; boundary=…`, for the request's `Content-Type`.
    public var contentType: String { "multipart/form-data; boundary=\(self.boundary)" }

    /// The whole body in memory (file parts are read now). A generated boundary that a part
    /// holds is replaced first, so take ``contentType`` after this call.
    public mutating func encode(parts: [MultipartPart]) throws(ClientError) -> [UInt8] {
        try self.settleBoundary(for: parts)
        let encoder = self
        var body: [UInt8] = []
        body.reserveCapacity(encoder.length(of: parts))
        for part in parts {
            body += try encoder.head(of: part)
            switch part.content {
            case .bytes(let bytes):
                body += bytes
            case .file(let path, _):
                let data: Data
                do {
                    data = try Data(contentsOf: URL(fileURLWithPath: path))
                } catch {
                    throw ClientError(.encodingFailed, detail: "multipart part \"\(part.name)\": cannot read \(path)")
                }
                guard !BoundaryScanner(boundary: encoder.boundary).finds(in: Array(data)) else {
                    throw ClientError(.encodingFailed, detail: "multipart part \"\(part.name)\": \(path) holds the boundary")
                }
                body += data
            }
            body += Self.crlf
        }
        body += encoder.closing
        return body
    }

    /// A body that sends the parts as they are, file parts read from disk in pieces. Its
    /// length is known (so it goes with a Content-Length) and it can be sent again.
    public func body(parts: [MultipartPart]) throws(ClientError) -> HTTPBody {
        var encoder = self
        try encoder.settleBoundary(for: parts)
        var made: [[UInt8]] = []
        for part in parts { made.append(try encoder.head(of: part)) }
        let heads = made
        let length = encoder.length(of: parts)
        let boundary = encoder.boundary
        let closing = encoder.closing
        return HTTPBody(.stream(length: length, replayable: true) { writer in
            for (part, head) in zip(parts, heads) {
                try await writer.write(head)
                switch part.content {
                case .bytes(let bytes):
                    var offset = 0
                    while offset < bytes.count {
                        let end = min(offset + 64 * 1024, bytes.count)
                        try await writer.write(Array(bytes[offset..<end]))
                        offset = end
                    }
                case .file(let path, let size):
                    var scanner = BoundaryScanner(boundary: boundary)
                    try await FileBodyReader.send(path: path, size: size) { (chunk) throws(TransportError) in
                        guard !scanner.scan(chunk) else {
                            throw TransportError(.requestBodyFailed, phase: .write,
                                                  detail: "multipart part \"\(part.name)\": \(path) holds the boundary")
                        }
                        try await writer.write(chunk)
                    }
                }
                try await writer.write(Self.crlf)
            }
            try await writer.write(closing)
        }, contentType: encoder.contentType)
    }

    // MARK: Layout

    private static let crlf: [UInt8] = [13, 10]

    private var closing: [UInt8] { Array("--\(self.boundary)--\r\n".utf8) }

    /// The delimiter line and the part's header fields, up to its content.
    private func head(of part: MultipartPart) throws(ClientError) -> [UInt8] {
        var text = "--\(self.boundary)\r\nContent-Disposition: form-data; name=\"\(Self.quoted(part.name))\""
        if let filename = part.filename { text += "; filename=\"\(Self.quoted(filename))\"" }
        text += "\r\n"
        if let contentType = part.contentType {
            guard !contentType.rawValue.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                throw ClientError(.encodingFailed, detail: "multipart part \"\(part.name)\": its content type has a line break")
            }
            text += "Content-Type: \(contentType.rawValue)\r\n"
        }
        for field in part.headerFields {
            text += "\(field.name.rawName): \(field.value)\r\n"
        }
        return Array((text + "\r\n").utf8)
    }

    private func length(of parts: [MultipartPart]) -> Int {
        var total = self.closing.count
        for part in parts {
            total += ((try? self.head(of: part).count) ?? 0) + part.contentLength + 2
        }
        return total
    }

    /// A name as a quoted-string's content: `"`, CR and LF percent-encoded (WHATWG's rule).
    static func quoted(_ name: String) -> String {
        var result = ""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\"": result += "%22"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Makes sure no part in memory holds the boundary: a generated one is drawn again.
    private mutating func settleBoundary(for parts: [MultipartPart]) throws(ClientError) {
        for _ in 0..<16 {
            let scanner = BoundaryScanner(boundary: self.boundary)
            let clash = parts.first { part in
                if case .bytes(let bytes) = part.content { return scanner.finds(in: bytes) }
                return false
            }
            guard let clash else { return }
            guard !self.boundaryWasChosen else {
                throw ClientError(.encodingFailed, detail: "multipart part \"\(clash.name)\" holds the boundary \"\(self.boundary)\"")
            }
            self.boundary = Self.randomBoundary()
        }
        throw ClientError(.encodingFailed, detail: "no multipart boundary stays out of the content")
    }

    private static func randomBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let hex = Array("0123456789abcdef")
        return "salvo-" + String((0..<32).map { _ in hex[Int(generator.next() % 16)] })
    }
}

/// Looks for `--boundary` in content that arrives in pieces (it may straddle two).
struct BoundaryScanner: Sendable {
    private let needle: [UInt8]
    private var tail: [UInt8] = []

    init(boundary: String) {
        self.needle = Array("--\(boundary)".utf8)
    }

    /// Whether the needle is in `bytes` as a whole.
    func finds(in bytes: [UInt8]) -> Bool {
        Self.search(self.needle, in: bytes)
    }

    /// Whether the needle ends in this piece, counting the end of the pieces before it.
    mutating func scan(_ piece: [UInt8]) -> Bool {
        let window = self.tail + piece.prefix(self.needle.count - 1)
        if Self.search(self.needle, in: window) || Self.search(self.needle, in: piece) { return true }
        let keep = self.needle.count - 1
        self.tail = piece.count >= keep ? Array(piece.suffix(keep)) : Array((self.tail + piece).suffix(keep))
        return false
    }

    private static func search(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return false }
        return haystack.withUnsafeBytes { hay in needle.withUnsafeBytes { hay.containsBytes($0) } }
    }
}
