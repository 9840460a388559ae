import SalvoTransport
import HTTPTypes

/// Whether and how a client follows redirects (301, 302, 303, 307 and 308 with a Location).
///
/// Following a redirect changes the method as browsers and curl do: 303 becomes GET (HEAD
/// stays HEAD) and 301/302 turn a POST into a GET, dropping the body; 307 and 308 keep the
/// method and send the body again when it can be replayed. Credentials go only to the origin
/// the call began with, as curl sends them: `Authorization`, `Cookie`, the other
/// ``credentialFields`` (API keys…) and a `Host` the caller set are dropped for any other
/// origin (scheme, host or port) and given back when a redirect returns; `Proxy-Authorization`
/// goes on only while the same proxy carries the next request. A Location with userinfo
/// (`http://user:pw@host/`) brings its own Basic credentials only for that first origin, and
/// never over the caller's own `Authorization`.
public struct RedirectPolicy: Sendable, Hashable {
    /// Follow redirects at all; when false a 3xx response is returned as it is.
    public var follow: Bool
    /// Redirects followed at most for one request; one more fails with `.tooManyRedirects`.
    public var maxRedirects: Int
    /// Follow a redirect from https down to plain http (default: refuse, `.redirectRefused`).
    public var allowHTTPSToHTTP: Bool
    /// The fields that go only to the origin the call began with, besides `Authorization` and
    /// `Cookie`, which always do (default: the standard list; add your API's own with
    /// `.standard.adding([name])`).
    public var credentialFields: CredentialFields
    /// Send the credential fields (not a `Host` the caller set) to every origin of the chain,
    /// as curl's `--location-trusted` does (default: false, the first origin only). Only for
    /// a chain whose every host you trust with them.
    public var trustsEveryHost: Bool
    /// `Authorization` values for the hosts a redirect may lead to (host names lower-cased),
    /// used on the way to an origin other than the first, in place of the first one's: what
    /// curl does with credentials from a netrc file, looked up again for each host. A host
    /// not listed gets `authorizationForOtherHosts`, if any (a netrc `default`).
    public var authorizationByHost: [String: String]
    /// The `Authorization` for a host `authorizationByHost` does not list (default: none).
    public var authorizationForOtherHosts: String?

    public init(follow: Bool = true, maxRedirects: Int = 10, allowHTTPSToHTTP: Bool = false,
                credentialFields: CredentialFields = .standard, trustsEveryHost: Bool = false,
                authorizationByHost: [String: String] = [:], authorizationForOtherHosts: String? = nil) {
        self.follow = follow
        self.maxRedirects = maxRedirects
        self.allowHTTPSToHTTP = allowHTTPSToHTTP
        self.credentialFields = credentialFields
        self.trustsEveryHost = trustsEveryHost
        self.authorizationByHost = authorizationByHost
        self.authorizationForOtherHosts = authorizationForOtherHosts
    }

    /// Follow up to 10 redirects.
    public static let follow = RedirectPolicy()
    /// Return 3xx responses to the caller.
    public static let disabled = RedirectPolicy(follow: false)
}
