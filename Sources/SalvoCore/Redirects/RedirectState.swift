import SalvoTransport
import HTTPTypes

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
    ) throws(TransportError) -> Outcome {
        guard self.policy.follow, Self.isRedirect(status), let location, !location.isEmpty else { return .deliver }
        let base = request.urlString
        if self.chain.isEmpty {
            self.chain.append(base)
            self.visits["\(request.method.rawValue) \(base)"] = 1
        }
        guard self.chain.count <= self.policy.maxRedirects else {
            throw TransportError(.tooManyRedirects, phase: .readHead,
                                  detail: "more than \(self.policy.maxRedirects) redirects, the last to \(location)")
        }
        let target: RequestURL
        do {
            target = try RequestURL(URLReference.resolve(location, against: base))
        } catch {
            throw TransportError(.redirectRefused, phase: .readHead,
                                  detail: "Location \"\(RequestEncoder.printable(location))\": \(error.detail ?? error.code.description)")
        }
        let current = try request.connectionKey()
        if current.scheme == .https && target.scheme == .http && !self.policy.allowHTTPSToHTTP {
            throw TransportError(.redirectRefused, phase: .readHead, detail: "from https down to \(target)")
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
            throw TransportError(.redirectLoop, phase: .readHead, detail: "\(url) was requested \(visits - 1) times already")
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
