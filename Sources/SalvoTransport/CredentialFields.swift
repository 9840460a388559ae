import HTTPTypes

/// The header fields that carry credentials: what a redirect to another origin drops, what
/// logs redact, what an exported `curl` command can hide. One list for every layer, which a
/// caller extends with the fields of their own API.
///
/// ```swift
/// let fields = CredentialFields.standard.adding([HTTPField.Name("X-Tenant-Secret")!])
/// var redirects = RedirectPolicy()
/// redirects.credentialFields = fields            // the engine: not sent to another origin
/// let logging = LoggingMiddleware(logger: logger, redactedFields: fields)   // the typed layer
/// ```
///
/// `Proxy-Authorization` is in the list, but a redirect does not drop it by itself: it is the
/// proxy's, and goes on while the same proxy carries the next request (never to an origin).
public struct CredentialFields: Sendable, Hashable, ExpressibleByArrayLiteral {
    /// The names, matched without regard to case (as `HTTPField.Name` compares).
    public var names: Set<HTTPField.Name>

    public init(_ names: some Sequence<HTTPField.Name>) {
        self.names = Set(names)
    }

    public init(arrayLiteral names: HTTPField.Name...) {
        self.names = Set(names)
    }

    /// `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `X-Api-Key`,
    /// `Api-Key`, `X-Auth-Token`, `X-Access-Token`, `X-CSRF-Token`.
    public static let standard: CredentialFields = [
        .authorization, .proxyAuthorization, .cookie, .setCookie,
        HTTPField.Name("X-Api-Key")!, HTTPField.Name("Api-Key")!, HTTPField.Name("X-Auth-Token")!,
        HTTPField.Name("X-Access-Token")!, HTTPField.Name("X-CSRF-Token")!,
    ]

    /// No field at all.
    public static let none: CredentialFields = []

    public func contains(_ name: HTTPField.Name) -> Bool {
        self.names.contains(name)
    }

    /// These fields and `more`.
    public func adding(_ more: some Sequence<HTTPField.Name>) -> CredentialFields {
        CredentialFields(self.names.union(more))
    }
}
