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

/// Adds fixed credentials to every request that has no `Authorization` of its own and is
/// not tagged ``noAuthorization``.
///
/// ```swift
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(middleware: [
///     StaticAuthorization(.basic(username: "ada", password: "…")),
/// ]))
/// ```
public struct StaticAuthorization: Middleware {
    /// The tag of requests that go without credentials (`endpoint.tagged(StaticAuthorization.noAuthorization)`).
    public static let noAuthorization = "no-auth"

    public var credentials: HTTPCredentials

    public init(_ credentials: HTTPCredentials) {
        self.credentials = credentials
    }

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        guard request.head.headerFields[.authorization] == nil, !request.metadata.tags.contains(Self.noAuthorization) else {
            return try await next(request)
        }
        var request = request
        request.head.headerFields[.authorization] = self.credentials.headerValue
        return try await next(request)
    }
}
