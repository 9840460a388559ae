import SalvoTransport
import HTTPTypes

/// The redirects one request has followed so far, and the rules for the next. No I/O.
///
/// Credentials go only where the call began (curl's rule, `Curl_auth_allowed_to_host`): the
/// credential fields and a `Host` the caller set travel with the first request's origin
/// (scheme, host and port) only — dropped for any other, given back when a redirect returns
/// there. A Location's userinfo counts only for that origin, and never over the caller's own
/// `Authorization`.
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
    /// Where the call began, and the first request's credential fields (and Host): what a
    /// redirect back to that origin gets again.
    private var firstOrigin: ConnectionKey?
    private var originFields: [HTTPField] = []
    // Redirects are limited by their count alone (the policy's `maxRedirects`), as curl and
    // browsers do: a redirect back to a URL already requested is followed — servers do that
    // after setting state (a cookie, a session), some several times to the same URL — and a
    // real loop ends at the count, with the same permanent error as any long chain.

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
            self.firstOrigin = try request.connectionKey()
            self.originFields = request.headerFields.filter { self.travelsWithTheOrigin($0.name) }
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
        self.chain.append(url)

        var next = HTTPRequest(method: method, scheme: target.scheme.rawValue, authority: target.key.authority,
                               path: target.target, headerFields: request.headerFields)
        if !keepBody {
            for name in [HTTPField.Name.contentLength, .contentType, .contentEncoding, .transferEncoding, .expect] {
                next.headerFields[name] = nil
            }
        }
        // What travels with the first origin only: taken off, and given back there. (A
        // Proxy-Authorization is the proxy's: whether it goes on is decided when the next
        // request is prepared, by the proxy that carries it.)
        // With `trustsEveryHost`, the credential fields go on (a `Host` still does not).
        for name in Set(next.headerFields.map(\.name))
        where self.travelsWithTheOrigin(name) && !(self.policy.trustsEveryHost && name != Self.host) {
            next.headerFields[name] = nil
        }
        if let first = self.firstOrigin, !Self.sameOrigin(target.key, first), next.headerFields[.authorization] == nil,
           let credentials = self.policy.authorizationByHost[target.key.host.lowercased()] ?? self.policy.authorizationForOtherHosts {
            // The credentials given for this host itself (a netrc entry), never the first one's.
            next.headerFields[.authorization] = credentials
        }
        if let first = self.firstOrigin, Self.sameOrigin(target.key, first) {
            // (Those that went on, with `trustsEveryHost`, are there already.)
            next.headerFields.append(contentsOf: self.originFields.filter { next.headerFields[$0.name] == nil })
            if let credentials = target.basicAuthorization, next.headerFields[.authorization] == nil {
                // The Location's own userinfo, for the origin the call began with, when the
                // caller gave no Authorization: a redirect cannot send credentials of its
                // choosing elsewhere, nor replace the caller's.
                next.headerFields[.authorization] = credentials
            }
        }
        return .follow(next, keepBody: keepBody)
    }
}

extension RedirectState {
    /// Whether a field goes only to the origin the call began with: the credential fields
    /// (`Authorization` and `Cookie` whatever the policy lists) and a `Host` the caller set
    /// (it may name an internal host); not `Proxy-Authorization`, which is the proxy's.
    func travelsWithTheOrigin(_ name: HTTPField.Name) -> Bool {
        name != .proxyAuthorization
            && (name == .authorization || name == .cookie || name == Self.host || self.policy.credentialFields.contains(name))
    }

    /// The same scheme, host (in any case) and port.
    static func sameOrigin(_ a: ConnectionKey, _ b: ConnectionKey) -> Bool {
        a.scheme == b.scheme && a.port == b.port && a.host.lowercased() == b.host.lowercased()
    }
}

extension HTTPRequest {
    /// scheme://authority/path?query, as the request was built.
    var urlString: String {
        "\(self.scheme ?? "http")://\(self.authority ?? "")\(self.path ?? "/")"
    }
}
