import HTTPTypes
import SalvoTransport

/// What a prepared request is made from (``HTTPClient/prepare(_:)``): a method, a URL whose
/// path and query may hold `{name}` parameters, the fields every call sends, whether each
/// call sends a body, and the bounds of its calls.
///
/// ```swift
/// var template = RequestTemplate(.get, "https://api.example.com/users/{id}/orders?page={page}")
/// template.headerFields[.accept] = "application/json"
/// let orders = try client.prepare(template)
/// let count = try await orders.send(["42", "1"]) { response in response.bodyCount }
/// ```
///
/// A parameter's value is percent-encoded where it lands (a `/` or `;` in a path parameter
/// stays inside its segment; `&`, `=`, `+` and `;` in a query value stay inside the value), and
/// a call's values may not make a path segment `.`, `..` or empty that the template does not
/// have.
/// Each name stands once in a template.
public struct RequestTemplate: Sendable {
    public var method: HTTPRequest.Method
    /// An absolute `http` or `https` URL; `{name}` marks a parameter, in the path or the query.
    public var url: String
    /// Sent with every call, after the client's default fields. Framing fields
    /// (Content-Length, Transfer-Encoding) are the engine's.
    public var headerFields: HTTPFields
    /// Each call gives a body (`send(body:)`, which such a call must give, if empty), its
    /// length sent as Content-Length. Without it a call sends none.
    public var sendsBody: Bool
    /// The largest response body lent to a handler; a longer one fails the call with
    /// `.bodyTooLarge`, its connection closed rather than read to the end. nil: the options'
    /// `maxBodySize`, else the client's, as for `execute`.
    public var maxBodySize: Int?
    /// Timeouts, TLS, the HTTP version, observers — as for ``HTTPClient/execute(_:body:options:)``.
    /// Redirects and content decoding are not for prepared calls: options that ask for them
    /// are refused when the request is prepared (the call is made as is, its body read as sent).
    public var options: HTTPClient.RequestOptions

    public init(_ method: HTTPRequest.Method = .get, _ url: String, headerFields: HTTPFields = [:], sendsBody: Bool = false,
                maxBodySize: Int? = nil, options: HTTPClient.RequestOptions = HTTPClient.RequestOptions()) {
        self.method = method
        self.url = url
        self.headerFields = headerFields
        self.sendsBody = sendsBody
        self.maxBodySize = maxBodySize
        self.options = options
    }
}

/// A template's URL cut at its parameters: the names in order, and the URL with each
/// replaced by a marker that survives encoding, to be found again in the encoded head.
struct TemplateURL {
    /// Where each parameter stands.
    enum Place { case path, query }

    var names: [String] = []
    var places: [Place] = []
    var marked = ""
    /// The URL's text between its parameters: one more piece than there are parameters.
    var literals: [String] = []
    /// What the template's own path holds (its parameters standing as segments' text): a
    /// call's values may not add a `.` or `..` segment, nor an empty one.
    var pathShape = PathShape()
    var hasPathParameters: Bool { self.places.contains(.path) }

    /// The marker of parameter `index`: unreserved characters only, so no encoder touches it.
    static func marker(_ index: Int) -> String { "_salvo~parameter~\(index)_" }

    init(_ url: String) throws(TransportError) {
        func invalid(_ why: String) -> TransportError {
            TransportError(.invalidURL, phase: .request, detail: "\(why) in the template \"\(url)\"")
        }
        var inQuery = false
        var index = url.startIndex
        var literal = ""
        while index < url.endIndex {
            let character = url[index]
            if character == "#" { throw invalid("a fragment") }
            if character == "?" { inQuery = true }
            if character == "}" { throw invalid("a \"}\" without its \"{\"") }
            guard character == "{" else {
                self.marked.append(character)
                literal.append(character)
                index = url.index(after: index)
                continue
            }
            guard let close = url[index...].firstIndex(of: "}") else { throw invalid("a \"{\" without its \"}\"") }
            let name = String(url[url.index(after: index)..<close])
            guard !name.isEmpty, name.utf8.allSatisfy({ Self.isNameByte($0) }) else {
                throw invalid("the parameter name \"\(name)\" (letters, digits, _ and - only)")
            }
            guard PathShape.afterAuthority(Array(self.marked.utf8)) != nil else { throw invalid("a parameter before the path") }
            guard !self.names.contains(name) else { throw invalid("the parameter \"\(name)\" twice") }
            self.marked += Self.marker(self.names.count)
            self.literals.append(literal)
            literal = ""
            self.names.append(name)
            self.places.append(inQuery ? .query : .path)
            index = url.index(after: close)
        }
        self.literals.append(literal)
        self.pathShape = PathShape(target: self.marked.utf8)
    }

    /// The URL with `values` in place of its parameters, each encoded for where it lands.
    func url(_ values: [String]) -> String {
        var bytes: [UInt8] = []
        for (index, literal) in self.literals.enumerated() {
            bytes.append(contentsOf: literal.utf8)
            if index < self.places.count { Self.encode(values[index], for: self.places[index], into: &bytes) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Refuses a call whose path (`target`, a request target or a URL) has a `.` or `..`
    /// segment, or an empty one, that the template's does not: parameter values — alone or
    /// beside each other or a literal dot — may not climb out of where the template put them.
    func checkPath(of target: some Collection<UInt8>) throws(TransportError) {
        let shape = PathShape(target: target)
        if shape.dotSegments > self.pathShape.dotSegments || shape.emptySegments > self.pathShape.emptySegments {
            throw TransportError(.invalidRequest, phase: .request,
                                 detail: "path parameters may not make a segment \".\", \"..\" or an empty one")
        }
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }

    /// `value` percent-encoded for `place`: UTF-8, every byte outside the unreserved set and
    /// the sub-delimiters that keep their meaning there encoded (RFC 3986 §3.3, §3.4).
    static func encode(_ value: String, for place: Place, into bytes: inout [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in value.utf8 {
            if Self.isLiteral(byte, in: place) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            }
        }
    }

    private static func isLiteral(_ byte: UInt8, in place: Place) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"),
             UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "@"):
            // `;` is not among them: some servers read it as a path parameter's start, some
            // query parsers as a separator.
            return true
        case UInt8(ascii: "&"), UInt8(ascii: "="), UInt8(ascii: "+"):
            // In a path they are data; in a query they would split the value.
            return place == .path
        case UInt8(ascii: "/"), UInt8(ascii: "?"):
            // A query may hold them as data; a path parameter is one segment.
            return place == .query
        default:
            return false
        }
    }
}

/// The segments of a path that matter to where a request lands: how many are `.` or `..`
/// (which a server resolves, climbing out of the template's path), and how many are empty.
struct PathShape: Equatable {
    var dotSegments = 0
    var emptySegments = 0

    init() {}

    /// The shape of the path of `target`: an origin-form target (`/a/b?q`) or an absolute URL
    /// (`http://host/a/b?q`); the path ends at `?`, `#` or a space.
    init(target: some Collection<UInt8>) {
        var bytes = Array(target)
        if bytes.first != UInt8(ascii: "/") {
            guard let start = Self.afterAuthority(bytes), bytes[start] == UInt8(ascii: "/") else { return }
            bytes = Array(bytes[start...])
        }
        if let end = bytes.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: " ") }) {
            bytes = Array(bytes[..<end])
        }
        for segment in bytes.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            if segment.isEmpty {
                self.emptySegments += 1
            } else if segment.elementsEqual([UInt8(ascii: ".")]) || segment.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
                self.dotSegments += 1
            }
        }
    }

    /// Where an absolute URL's path (its `/`) or query (its `?`) begins, past
    /// "scheme://authority"; nil when `bytes` end before it.
    static func afterAuthority(_ bytes: [UInt8]) -> Int? {
        guard let scheme = bytes.positions(of: Array("://".utf8)).first else { return nil }
        return bytes[(scheme + 3)...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }
    }
}

extension Array where Element == UInt8 {
    /// Every index where `needle` (not empty) starts in these bytes, overlapping ones included.
    func positions(of needle: [UInt8]) -> [Int] {
        guard let first = needle.first, self.count >= needle.count else { return [] }
        return (0...(self.count - needle.count)).filter { self[$0] == first && self[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}
