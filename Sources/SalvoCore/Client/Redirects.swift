import SalvoTransport
import HTTPTypes

/// Whether and how a client follows redirects (301, 302, 303, 307 and 308 with a Location).
///
/// Following a redirect changes the method as browsers and curl do: 303 becomes GET (HEAD
/// stays HEAD) and 301/302 turn a POST into a GET, dropping the body; 307 and 308 keep the
/// method and send the body again when it can be replayed. Leaving the origin (another
/// scheme, host or port) drops the ``credentialFields`` (`Authorization`, `Cookie`, API keys…)
/// and a `Host` the caller set; `Proxy-Authorization` goes on only while the same proxy
/// carries the next request. A Location with userinfo (`http://user:pw@host/`) brings its own
/// Basic credentials only when host and port stay the same, as curl does.
public struct RedirectPolicy: Sendable, Hashable {
    /// Follow redirects at all; when false a 3xx response is returned as it is.
    public var follow: Bool
    /// Redirects followed at most for one request; one more fails with `.tooManyRedirects`.
    public var maxRedirects: Int
    /// Follow a redirect from https down to plain http (default: refuse, `.redirectRefused`).
    public var allowHTTPSToHTTP: Bool
    /// The fields dropped when a redirect leaves the origin (default: the standard list;
    /// extend it with your API's own: `.standard.adding([name])`).
    public var credentialFields: CredentialFields

    public init(follow: Bool = true, maxRedirects: Int = 10, allowHTTPSToHTTP: Bool = false,
                credentialFields: CredentialFields = .standard) {
        self.follow = follow
        self.maxRedirects = maxRedirects
        self.allowHTTPSToHTTP = allowHTTPSToHTTP
        self.credentialFields = credentialFields
    }

    /// Follow up to 10 redirects.
    public static let follow = RedirectPolicy()
    /// Return 3xx responses to the caller.
    public static let disabled = RedirectPolicy(follow: false)
}

/// The redirects one request has followed so far, and the rules for the next. No I/O.
struct RedirectState: Sendable {
    enum Outcome: Equatable {
        /// Not a redirect to follow: the response goes to the caller.
        case deliver
        /// A redirect that cannot be followed (a 307 or 308 with a body that cannot be sent
        /// again): the response goes to the caller with this explanation.
        case deliverUnfollowed(String)
        /// Send `request` next; `keepBody` says whether the body goes with it.
        case follow(HTTPRequest, keepBody: Bool)
    }

    let policy: RedirectPolicy
    static let host = HTTPField.Name("Host")!
    /// Every URL requested so far, the first one included.
    private(set) var chain: [String] = []
    /// How often each method and URL has been requested, to notice a loop.
    private var visits: [String: Int] = [:]
    /// A redirect back to a URL already requested is followed — servers do that after
    /// setting state (a cookie, a session) — but a request made this many times is a loop.
    static let maxVisitsPerURL = 3

    init(policy: RedirectPolicy) {
        self.policy = policy
    }

    static func isRedirect(_ status: Int) -> Bool {
        status == 301 || status == 302 || status == 303 || status == 307 || status == 308
    }

    /// Decides what follows a response with `status` and `location` to `request`.
    /// `replayableBody` is false when the request has a body that cannot be sent twice.
    mutating func decide(
        request: HTTPRequest, status: Int, location: String?, hasBody: Bool, replayableBody: Bool
    ) throws(HTTPClientError) -> Outcome {
        guard self.policy.follow, Self.isRedirect(status), let location, !location.isEmpty else { return .deliver }
        let base = request.urlString
        if self.chain.isEmpty {
            self.chain.append(base)
            self.visits["\(request.method.rawValue) \(base)"] = 1
        }
        guard self.chain.count <= self.policy.maxRedirects else {
            throw HTTPClientError(.tooManyRedirects, phase: .readHead,
                                  detail: "more than \(self.policy.maxRedirects) redirects, the last to \(location)")
        }
        let target: RequestURL
        do {
            target = try RequestURL(URLReference.resolve(location, against: base))
        } catch {
            throw HTTPClientError(.redirectRefused, phase: .readHead,
                                  detail: "Location \"\(RequestEncoder.printable(location))\": \(error.detail ?? error.code.description)")
        }
        let current = try request.connectionKey()
        if current.scheme == .https && target.scheme == .http && !self.policy.allowHTTPSToHTTP {
            throw HTTPClientError(.redirectRefused, phase: .readHead, detail: "from https down to \(target)")
        }

        var method = request.method
        var keepBody = hasBody
        if (status == 303 && method != .head) || ((status == 301 || status == 302) && method == .post) {
            method = .get
            keepBody = false
        }
        if keepBody && !replayableBody {
            return .deliverUnfollowed("the \(status) asks to send the body again to \(target), but a streamed body cannot be replayed")
        }
        let url = target.description
        let visit = "\(method.rawValue) \(url)"
        let visits = self.visits[visit, default: 0] + 1
        guard visits <= Self.maxVisitsPerURL else {
            throw HTTPClientError(.redirectLoop, phase: .readHead, detail: "\(url) was requested \(visits - 1) times already")
        }
        self.visits[visit] = visits
        self.chain.append(url)

        var next = HTTPRequest(method: method, scheme: target.scheme.rawValue, authority: target.key.authority,
                               path: target.target, headerFields: request.headerFields)
        if !keepBody {
            for name in [HTTPField.Name.contentLength, .contentType, .contentEncoding, .transferEncoding, .expect] {
                next.headerFields[name] = nil
            }
        }
        if target.key != current {
            // Another origin: no credential goes there, nor a Host the caller set for this one
            // (it may name an internal host). A Proxy-Authorization is the proxy's: whether it
            // goes on is decided when the next request is prepared, by the proxy that carries it.
            for name in self.policy.credentialFields.names where name != .proxyAuthorization {
                next.headerFields[name] = nil
            }
            next.headerFields[Self.host] = nil
        }
        if let credentials = target.basicAuthorization,
           target.key.host.lowercased() == current.host.lowercased(), target.key.port == current.port {
            // The Location's own userinfo, only for the host and port the request was already
            // going to (curl's rule): a redirect cannot send credentials of its choosing elsewhere.
            next.headerFields[.authorization] = credentials
        }
        return .follow(next, keepBody: keepBody)
    }
}

extension HTTPRequest {
    /// scheme://authority/path?query, as the request was built.
    var urlString: String {
        "\(self.scheme ?? "http")://\(self.authority ?? "")\(self.path ?? "/")"
    }
}

/// Resolving a URI reference (a Location value) against a base URL, RFC 3986 §5.2.
package enum URLReference {
    struct Parts: Equatable {
        var scheme: Substring?
        var authority: Substring?
        var path: Substring
        var query: Substring?
    }

    /// The target of `reference` seen from `base`, fragment dropped (it never goes on the
    /// wire). Bytes a URL may not hold (spaces, controls, non-ASCII) are percent-encoded, as
    /// browsers and curl do with sloppy Location values.
    static func resolve(_ reference: String, against base: String) -> String {
        let r = self.split(Substring(self.encodeUnsafeBytes(reference, asLocation: true)))
        let b = self.split(Substring(base))
        var result = Parts(path: "")
        if let scheme = r.scheme {
            result = Parts(scheme: scheme, authority: r.authority, path: Substring(self.removeDotSegments(r.path)), query: r.query)
        } else if let authority = r.authority {
            result = Parts(scheme: b.scheme, authority: authority, path: Substring(self.removeDotSegments(r.path)), query: r.query)
        } else if r.path.isEmpty {
            result = Parts(scheme: b.scheme, authority: b.authority, path: b.path, query: r.query ?? b.query)
        } else if r.path.hasPrefix("/") {
            result = Parts(scheme: b.scheme, authority: b.authority, path: Substring(self.removeDotSegments(r.path)), query: r.query)
        } else {
            result = Parts(scheme: b.scheme, authority: b.authority,
                           path: Substring(self.removeDotSegments(Substring(self.merge(base: b, path: r.path)))), query: r.query)
        }
        var text = ""
        if let scheme = result.scheme { text += scheme.lowercased() + ":" }
        if let authority = result.authority { text += "//" + authority }
        text += result.path
        if let query = result.query { text += "?" + query }
        return text
    }

    static func split(_ text: Substring) -> Parts {
        var rest = text
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var parts = Parts(path: "")
        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
        if let colon = rest.firstIndex(of: ":"), let first = rest.first, first.isASCII, first.isLetter,
           rest[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }) {
            parts.scheme = rest[..<colon]
            rest = rest[rest.index(after: colon)...]
        }
        // As curl reads a Location: http or https followed by one or three slashes has its host
        // after them (`http:///host/x` is `http://host/x`); four or more is no URL.
        if let scheme = parts.scheme, ["http", "https"].contains(scheme.lowercased()) {
            let slashes = rest.prefix(while: { $0 == "/" }).count
            if slashes == 1 || slashes == 3 { rest = "//" + rest.dropFirst(slashes) }
        }
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            parts.authority = rest[..<end]
            rest = rest[end...]
        }
        if let question = rest.firstIndex(of: "?") {
            parts.query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        parts.path = rest
        return parts
    }

    /// §5.2.3.
    static func merge(base: Parts, path: Substring) -> String {
        if base.authority != nil && base.path.isEmpty { return "/" + path }
        guard let slash = base.path.lastIndex(of: "/") else { return String(path) }
        return String(base.path[...slash] + path)
    }

    /// §5.2.4, over whole segments.
    package static func removeDotSegments(_ path: Substring) -> String {
        guard path.contains(".") else { return String(path) }
        let absolute = path.hasPrefix("/")
        var segments = path.split(separator: "/", omittingEmptySubsequences: false)
        if absolute { segments.removeFirst() }
        var output: [Substring] = []
        for (index, segment) in segments.enumerated() {
            let last = index == segments.count - 1
            switch segment {
            case ".":
                if last { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if last { output.append("") }
            default:
                output.append(segment)
            }
        }
        let joined = output.joined(separator: "/")
        return absolute ? "/" + joined : joined
    }

    /// The bytes `text` stands for, `%XX` escapes decoded (a `%` not followed by two hex
    /// digits stays as it is, as curl leaves it).
    static func percentDecoded(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return bytes }
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return output
    }

    /// `text` with the bytes a URL may not hold (spaces, controls, non-ASCII) percent-encoded
    /// in upper-case hex (RFC 3986 §2.1). `asLocation`: as curl encodes a sloppy Location
    /// instead — lower-case hex, and a space in the query as `+` (in the path, `%20`).
    static func encodeUnsafeBytes(_ text: String, asLocation: Bool = false) -> String {
        guard text.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) else { return text }
        let hex = Array((asLocation ? "0123456789abcdef" : "0123456789ABCDEF").utf8)
        var bytes: [UInt8] = []
        var inQuery = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: "?") { inQuery = asLocation }
            if byte == 0x20 && inQuery {
                bytes.append(UInt8(ascii: "+"))
            } else if byte <= 0x20 || byte >= 0x7F {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
