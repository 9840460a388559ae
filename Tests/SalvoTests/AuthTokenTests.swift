import Foundation
@testable import Salvo
import SalvoTestSupport
import Testing

/// `AuthToken` as it is stored and as a token endpoint sends it: its own form, kept as it
/// always was, and an OAuth 2 token reply (RFC 6749 §5.1).
@Suite struct AuthTokenTests {
    /// The reply of RFC 6749 §5.1's example (with a scope).
    static let reply = #"""
        {"access_token": "2YotnFZFEjr1zCsicMWpAA", "token_type": "example", "expires_in": 3600,
         "refresh_token": "tGzv3JOkF0XG5Qx2TlKWIA", "scope": "read write", "example_parameter": "example_value"}
        """#

    @Test(arguments: [Coders.json, .json(keys: .snakeCase)])
    func anOAuthReplyDecodes(coders: Coders) throws {
        let before = Date()
        let token = try coders.decodeJSON(AuthToken.self, from: Array(Self.reply.utf8))
        #expect(token.accessToken == "2YotnFZFEjr1zCsicMWpAA")
        #expect(token.refreshToken == "tGzv3JOkF0XG5Qx2TlKWIA")
        #expect(token.tokenType == "example")
        #expect(token.scope == "read write")
        #expect(token.extra.isEmpty)
        let expiry = try #require(token.expiresAt)
        #expect(expiry >= before.addingTimeInterval(3600) && expiry <= Date().addingTimeInterval(3600),
                "expires_in is counted from the moment of decoding")
    }

    /// Foundation's own decoder, converting snake_case keys, hands the members over camel-cased.
    @Test func aSnakeCaseConvertingJSONDecoderToo() throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let token = try decoder.decode(AuthToken.self, from: Data(Self.reply.utf8))
        #expect(token.accessToken == "2YotnFZFEjr1zCsicMWpAA" && token.refreshToken == "tGzv3JOkF0XG5Qx2TlKWIA")
        #expect(token.expiresAt != nil)
    }

    @Test func theSmallestReplyAndExpiresInAsText() throws {
        let bare = try Coders.json.decodeJSON(AuthToken.self, from: Array(#"{"access_token": "a", "token_type": "Bearer"}"#.utf8))
        #expect(bare == AuthToken(accessToken: "a", tokenType: "Bearer"))
        let text = try Coders.json.decodeJSON(AuthToken.self, from: Array(#"{"access_token": "a", "expires_in": "60"}"#.utf8))
        #expect(text.expiresAt.map { abs($0.timeIntervalSinceNow - 60) < 5 } == true)
    }

    /// Bad replies are typed errors, never a token that looks valid.
    @Test(arguments: [
        #"{"token_type": "Bearer"}"#,
        #"{"access_token": ""}"#,
        #"{"access_token": 7}"#,
        #"{"access_token": "a", "expires_in": "soon"}"#,
        #"{"access_token": "a", "expires_in": true}"#,
        #"{"access_token": "a", "extra": {"user": 1}}"#,
        #"["access_token"]"#,
    ])
    func aBadReplyIsADecodingError(json: String) {
        #expect(throws: ClientError.self) { try Coders.json.decodeJSON(AuthToken.self, from: Array(json.utf8)) }
        let error = try? #require(throws: ClientError.self) { try Coders.json.decodeJSON(AuthToken.self, from: Array(json.utf8)) }
        #expect(error?.code == .decodingFailed)
    }

    /// What a store wrote before these members existed still loads, and a token without
    /// them encodes as it did.
    @Test func theOwnFormStillRoundTrips() throws {
        let stored = #"{"accessToken":"a","expiresAt":600000000,"refreshToken":"r"}"#
        let token = try JSONDecoder().decode(AuthToken.self, from: Data(stored.utf8))
        #expect(token == AuthToken(accessToken: "a", refreshToken: "r", expiresAt: Date(timeIntervalSinceReferenceDate: 600_000_000)))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(token), as: UTF8.self) == stored)
        let full = AuthToken(accessToken: "a", refreshToken: "r", expiresAt: Date(timeIntervalSince1970: 2_000_000_000),
                             tokenType: "Bearer", scope: "read", extra: ["user": "ada", "apiKey": "k-1"])
        #expect(try JSONDecoder().decode(AuthToken.self, from: encoder.encode(full)) == full)
    }

    /// `extra` goes to the file and comes back with the token.
    @Test func theFileStoreKeepsTheExtraCredentials() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-token-\(UInt32.random(in: 0 ... .max)).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = FileTokenStore(path: path)
        let token = AuthToken(accessToken: "a", scope: "read", extra: ["user": "ada", "apiKey": "k-1"])
        try store.save(token)
        #expect(try store.load() == token)
        let auth = TokenAuthorization(store: FileTokenStore(path: path)) { _ in AuthToken(accessToken: "b") }
        #expect(auth.currentToken()?.extra["user"] == "ada")
    }
}
