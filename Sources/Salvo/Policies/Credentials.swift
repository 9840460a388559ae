import Foundation

/// What goes in the `Authorization` header.
public enum HTTPCredentials: Sendable, Hashable {
    /// `Bearer <token>` (RFC 6750).
    case bearer(String)
    /// `Basic <base64(username:password)>` (RFC 7617), UTF-8.
    case basic(username: String, password: String)

    /// The header's value.
    public var headerValue: String {
        switch self {
        case .bearer(let token): "Bearer \(token)"
        case .basic(let username, let password): "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
        }
    }
}

/// Adds fixed credentials to the requests of its ``AuthorizationScope``: by default every
/// request that has no `Authorization` of its own and is not tagged ``noAuthorization``;
/// with `scope: .optIn`, only those tagged ``authorize`` (`endpoint.authorized()`).
///
/// ```swift
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(middleware: [
///     StaticAuthorization(.basic(username: "ada", password: "…")),
/// ]))
/// ```
public struct StaticAuthorization: Middleware {
    /// The tag of requests that go without credentials (`endpoint.tagged(StaticAuthorization.noAuthorization)`).
    public static let noAuthorization = "no-auth"
    /// The tag of requests that ask for credentials (`endpoint.authorized()`): with
    /// `scope: .optIn`, only they get them.
    public static let authorize = "authorize"

    public var credentials: HTTPCredentials
    /// Which requests get the credentials.
    public var scope: AuthorizationScope

    /// - Parameters:
    ///   - credentials: what goes in the `Authorization` header.
    ///   - scope: every request but those that opt out (the default), or only those that opt in.
    public init(_ credentials: HTTPCredentials, scope: AuthorizationScope = .optOut) {
        self.credentials = credentials
        self.scope = scope
    }

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        guard request.head.headerFields[.authorization] == nil, self.scope.covers(request.metadata.tags) else {
            return try await next(request)
        }
        var request = request
        request.head.headerFields[.authorization] = self.credentials.headerValue
        return try await next(request)
    }
}
