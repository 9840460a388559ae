import Foundation

/// A token, what is needed to renew it, and any other credentials kept with it.
///
/// It decodes from its own form — what it encodes, and what a ``TokenStore`` persists — and
/// from an OAuth 2 token reply (RFC 6749 §5.1), so a token endpoint's answer can be decoded
/// straight into it:
///
/// ```swift
/// // {"access_token": "2YotnFZ", "token_type": "Bearer", "expires_in": 3600,
/// //  "refresh_token": "tGzv3JO", "scope": "read write"}
/// let token = try await authClient.value(Endpoint<AuthToken>.post("/oauth/token", body: .form(grant)))
/// ```
///
/// `expires_in`, seconds from now, becomes the absolute ``expiresAt`` when the reply is
/// decoded. The reply's members may also reach it camel-cased (`accessToken`, `expiresIn`)
/// by a client whose coders convert snake_case keys.
public struct AuthToken: Codable, Sendable, Hashable {
    /// The token sent as `Authorization: Bearer …`. Never empty when decoded.
    public var accessToken: String
    /// What ``TokenAuthorization``'s `refresh` may trade for a new token.
    public var refreshToken: String?
    /// When the token stops being valid; nil when unknown. A token past it is refreshed
    /// before it is sent.
    public var expiresAt: Date?
    /// The token's type as the server named it (`Bearer`). ``TokenAuthorization`` sends the
    /// token as a bearer token whatever it says.
    public var tokenType: String?
    /// The scope granted (space-separated, RFC 6749 §3.3), when the server said.
    public var scope: String?
    /// Other credentials kept with the token — a user name, an API key, a tenant — stored,
    /// loaded and carried over refreshes with it.
    public var extra: [String: String]

    public init(accessToken: String, refreshToken: String? = nil, expiresAt: Date? = nil,
                tokenType: String? = nil, scope: String? = nil, extra: [String: String] = [:]) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.tokenType = tokenType
        self.scope = scope
        self.extra = extra
    }

    /// The members read: the own form's names, the OAuth reply's (RFC 6749 §5.1), and the
    /// reply's as a snake_case-converting decoder hands them over (`expiresIn`).
    private enum Keys: String, CodingKey {
        case accessToken, refreshToken, expiresAt, tokenType, scope, extra, expiresIn
        case oauthAccessToken = "access_token", oauthRefreshToken = "refresh_token"
        case oauthTokenType = "token_type", oauthExpiresIn = "expires_in"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        func string(_ own: Keys, _ oauth: Keys) throws -> String? {
            try container.decodeIfPresent(String.self, forKey: own) ?? container.decodeIfPresent(String.self, forKey: oauth)
        }
        guard let accessToken = try string(.accessToken, .oauthAccessToken) else {
            throw DecodingError.keyNotFound(Keys.oauthAccessToken, DecodingError.Context(
                codingPath: decoder.codingPath, debugDescription: "no access_token (nor accessToken)"))
        }
        guard !accessToken.isEmpty else {
            throw DecodingError.dataCorruptedError(forKey: Keys.oauthAccessToken, in: container, debugDescription: "the access token is empty")
        }
        self.accessToken = accessToken
        self.refreshToken = try string(.refreshToken, .oauthRefreshToken)
        self.tokenType = try string(.tokenType, .oauthTokenType)
        self.scope = try container.decodeIfPresent(String.self, forKey: .scope)
        self.extra = try container.decodeIfPresent([String: String].self, forKey: .extra) ?? [:]
        if let expiresAt = try container.decodeIfPresent(Date.self, forKey: .expiresAt) {
            self.expiresAt = expiresAt
        } else if let seconds = try Self.seconds(in: container, at: .oauthExpiresIn) ?? Self.seconds(in: container, at: .expiresIn) {
            self.expiresAt = Date(timeIntervalSinceNow: seconds)
        } else {
            self.expiresAt = nil
        }
    }

    /// `expires_in`: a number of seconds (RFC 6749 says a number; some servers send it as a
    /// string of digits, accepted too). Anything else is an error, not "never expires".
    private static func seconds(in container: KeyedDecodingContainer<Keys>, at key: Keys) throws -> TimeInterval? {
        guard container.contains(key), try !container.decodeNil(forKey: key) else { return nil }
        let seconds: Double
        if let number = try? container.decode(Double.self, forKey: key) {
            seconds = number
        } else {
            let text = try container.decode(String.self, forKey: key)
            guard let number = Double(text.trimmingCharacters(in: .whitespaces)) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\"\(text)\" is not a number of seconds")
            }
            seconds = number
        }
        guard seconds.isFinite else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\(seconds) is not a number of seconds")
        }
        return seconds
    }

    /// Always the own form; members without a value are left out, so a token without the
    /// newer members encodes as it always did.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(self.accessToken, forKey: .accessToken)
        try container.encodeIfPresent(self.refreshToken, forKey: .refreshToken)
        try container.encodeIfPresent(self.expiresAt, forKey: .expiresAt)
        try container.encodeIfPresent(self.tokenType, forKey: .tokenType)
        try container.encodeIfPresent(self.scope, forKey: .scope)
        if !self.extra.isEmpty { try container.encode(self.extra, forKey: .extra) }
    }

    /// This token, renewed from `old`: what the refresh's answer leaves out is kept — the
    /// refresh token (RFC 6749 §6: the server "MAY issue a new refresh token"; without one,
    /// the old one stays valid) and the ``extra`` members the new token does not set.
    func renewing(_ old: AuthToken?) -> AuthToken {
        guard let old else { return self }
        var renewed = self
        if renewed.refreshToken == nil { renewed.refreshToken = old.refreshToken }
        renewed.extra = old.extra.merging(self.extra) { _, new in new }
        return renewed
    }
}
