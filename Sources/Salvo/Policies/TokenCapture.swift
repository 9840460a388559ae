/// How a ``TokenAuthorization`` takes a token from the response to a login — a request
/// tagged ``TokenAuthorization/login``.
///
/// ```swift
/// struct LoginReply: Decodable, Sendable { var token: String; var user: String }
///
/// // The reply decoded with the client's coders, then turned into a token:
/// let auth = TokenAuthorization(capture: .decoding(LoginReply.self) { reply in
///     AuthToken(accessToken: reply.token, extra: ["user": reply.user])
/// }, refresh: renew)
///
/// // An OAuth 2 token reply (`access_token`, `expires_in`, …) as it is:
/// let oauth = TokenAuthorization(capture: .oauth2, refresh: renew)
///
/// // The raw response, head and bytes:
/// let raw = TokenAuthorization(capture: .bytes { head, body in
///     head.status == .ok ? AuthToken(accessToken: String(decoding: body, as: UTF8.self)) : nil
/// }, refresh: renew)
/// ```
///
/// The caller of the login still gets the whole response. A login read as a stream
/// (`stream`, `download`) is not captured: its body is the caller's alone.
public struct TokenCapture: Sendable {
    let take: @Sendable (HTTPResponse, [UInt8], Coders) throws(ClientError) -> AuthToken?

    /// The login response's head and whole body, as they came, whatever the status: return
    /// the token, or nil to leave the current one.
    public static func bytes(_ take: @escaping @Sendable (HTTPResponse, [UInt8]) -> AuthToken?) -> TokenCapture {
        TokenCapture { head, body, _ throws(ClientError) in take(head, body) }
    }

    /// A successful (2xx) login response's body decoded as `Reply` with the client's coders
    /// (its key mapping and date strategy), then turned into a token by `token` — nil leaves
    /// the current one. A response of another status is left alone. A 2xx body that does
    /// not decode fails the login call with `.decodingFailed` (saying where), and sets no
    /// token: a login that silently captured nothing would show up only as later 401s.
    public static func decoding<Reply: Decodable & Sendable>(_ type: Reply.Type,
                                                  token: @escaping @Sendable (Reply) -> AuthToken?) -> TokenCapture {
        TokenCapture { head, body, coders throws(ClientError) in
            guard head.status.kind == .successful else { return nil }
            let reply: Reply
            do throws(ClientError) {
                reply = try coders.decodeJSON(Reply.self, from: body)
            } catch {
                var failure = error
                failure.responseHead = head
                failure.responseBody = body
                throw failure
            }
            return token(reply)
        }
    }

    /// A successful login response whose body is an OAuth 2 token reply (RFC 6749 §5.1), or
    /// an ``AuthToken`` in its own encoded form, taken as it is.
    public static var oauth2: TokenCapture {
        .decoding(AuthToken.self) { $0 }
    }
}
