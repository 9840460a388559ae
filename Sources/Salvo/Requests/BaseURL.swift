/// Where a client's requests go: `http` or `https`, a host (and port), and an optional path
/// prefix that every request path is appended to.
///
/// ```swift
/// let base = try BaseURL("https://api.example.com/v2")
/// // a request for "users/1" goes to https://api.example.com/v2/users/1
/// ```
public struct BaseURL: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    public let scheme: String
    /// Host and port, as the Host header carries them.
    public let authority: String
    /// The path prefix, without a trailing slash ("" for none).
    public let path: String

    /// Parses `text`.
    ///
    /// - Throws: ``ClientError`` `.invalidBaseURL`, saying what is wrong, for anything but an
    ///   absolute http or https URL with a host (a query or fragment included).
    public init(_ text: String) throws(ClientError) {
        func invalid(_ why: String) -> ClientError {
            ClientError(.invalidBaseURL, detail: "\(why): \"\(text)\"")
        }
        guard let separator = text.range(of: "://") else { throw invalid("no scheme (give http:// or https://)") }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { throw invalid("the scheme is not http or https") }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard !authority.isEmpty else { throw invalid("no host") }
        guard authority.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "@") }) else {
            throw invalid("the host has spaces, control characters, non-ASCII letters or userinfo")
        }
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            let port = authority[authority.index(after: colon)...]
            guard !port.isEmpty, port.utf8.count <= 5, port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let number = Int(port), (1...65535).contains(number) else {
                throw invalid("bad port")
            }
        }
        var path = rest[authorityEnd...]
        guard !path.contains("?"), !path.contains("#") else { throw invalid("a base URL takes no query or fragment") }
        guard path.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else { throw invalid("spaces or control characters in the path") }
        while path.hasSuffix("/") { path = path.dropLast() }
        self.scheme = scheme
        self.authority = String(authority)
        self.path = String(path)
    }

    public var description: String { "\(self.scheme)://\(self.authority)\(self.path)" }

    /// The head of a request to `path` (relative to the base's path, with or without a leading
    /// slash; it may hold a query of its own) with `query` after it: what a ``Request`` of your
    /// own returns from `makeHTTPRequest(baseURL:coders:)`.
    ///
    /// - Throws: `.invalidRequest` when the target has spaces or control characters (use
    ///   `\(segment:)` for values in the path).
    public func request(method: HTTPRequest.Method, path: String, query: [QueryItem] = [],
                        headerFields: HTTPFields = [:]) throws(ClientError) -> HTTPRequest {
        let target = self.target(path: path, query: QueryItem.encode(query))
        guard target.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw ClientError(.invalidRequest, detail: "the path \"\(path)\" has spaces or control characters; use \\(segment:) for values")
        }
        return HTTPRequest(method: method, scheme: self.scheme, authority: self.authority, path: target, headerFields: headerFields)
    }

    /// The request target for `path` (relative to the base's path, with or without a leading
    /// slash) and an encoded `query` (without the `?`).
    func target(path requestPath: String, query: String) -> String {
        var target = self.path
        if !requestPath.isEmpty {
            if !requestPath.hasPrefix("/") { target += "/" }
            target += requestPath
        }
        if target.isEmpty { target = "/" }
        if !query.isEmpty {
            target += target.utf8.contains(UInt8(ascii: "?")) ? "&" : "?"
            target += query
        }
        return target
    }
}
