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
