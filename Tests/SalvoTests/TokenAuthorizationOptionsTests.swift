import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// A request type that asks for credentials through its metadata.
private struct Profile: Request {
    typealias SuccessResponseBody = String
    var path: String { "/profile" }
    var metadata: RequestMetadata { RequestMetadata(tags: [TokenAuthorization.authorize]) }
}

/// The choices a `TokenAuthorization` offers: what to do with no token yet, which requests
/// get the token, and how a login's token is captured.
@Suite struct TokenAuthorizationOptionsTests {
    typealias Counter = AuthorizationTests.Counter

    /// `/public` answers anyone; everything else wants `Bearer t1`.
    private func server() -> MockTransport {
        let mock = MockTransport()
        mock.on(.get, "/public", reply: .text("public"))
        mock.fallback { request in request.headerFields[.authorization] == "Bearer t1" ? .text("ok") : .status(.unauthorized) }
        return mock
    }

    // MARK: No token yet

    /// The default: no token, no header; a 401 brings a refresh and one more try.
    @Test func withNoTokenARequestGoesWithoutOneUntilA401() async throws {
        let mock = self.server()
        let refreshes = Counter()
        let auth = TokenAuthorization { old in
            #expect(old == nil)
            return AuthToken(accessToken: "t\(refreshes.next())")
        }
        #expect(auth.whenNoToken == .sendWithout)
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))
        #expect(try await client.value(Endpoint<String>.get("/public")) == "public")
        #expect(refreshes.count == 0, "no refresh for a request the server accepts without a token")
        #expect(try await client.value(Endpoint<String>.get("/private")) == "ok")
        #expect(refreshes.count == 1)
        #expect(mock.requests.map { $0.headerFields[.authorization] } == [nil, nil, "Bearer t1"])
        #expect(try await client.value(Endpoint<String>.get("/public")) == "public")
        #expect(mock.requests.last?.headerFields[.authorization] == "Bearer t1", "once there is a token, it goes along")
    }

    /// Twenty requests without a token meet their 401s together: one refresh serves them all.
    @Test func requestsWithoutATokenShareOneRefresh() async throws {
        let mock = self.server()
        let refreshes = Counter()
        let auth = TokenAuthorization { _ in
            let number = refreshes.next()
            try await Task.sleep(for: .milliseconds(50))
            return AuthToken(accessToken: "t\(number)")
        }
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))
        let results = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<20 { group.addTask { try? await client.value(Endpoint<String>.get("/private")) } }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(refreshes.count == 1)
        #expect(results.allSatisfy { $0 == "ok" })
    }

    /// `.refreshFirst`: the old behaviour — a token before anything goes out.
    @Test func refreshFirstFetchesATokenBeforeTheFirstRequest() async throws {
        let mock = self.server()
        let refreshes = Counter()
        let auth = TokenAuthorization(whenNoToken: .refreshFirst) { _ in AuthToken(accessToken: "t\(refreshes.next())") }
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))
        #expect(try await client.value(Endpoint<String>.get("/public")) == "public")
        #expect(refreshes.count == 1)
        #expect(mock.requests.map { $0.headerFields[.authorization] } == ["Bearer t1"])
    }

    /// `.refreshFirst` with a refresh that fails: the request is never sent.
    @Test func refreshFirstSendsNothingWhenTheRefreshFails() async throws {
        let mock = self.server()
        struct Denied: Error {}
        let auth = TokenAuthorization(whenNoToken: .refreshFirst) { _ in throw Denied() }
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))
        let error = await client.outcome(Endpoint<String>.get("/public")).error
        #expect(error?.code == .authorizationFailed && error?.underlyingError is Denied)
        #expect(mock.requests.isEmpty)
    }

    // MARK: Opt in, opt out

    /// `scope: .optIn`: only requests tagged `authorize` get the token; the others go bare
    /// and their 401 is the caller's, without a refresh.
    @Test func optInAuthorizesOnlyTheRequestsThatAsk() async throws {
        let mock = self.server()
        let refreshes = Counter()
        let auth = TokenAuthorization(store: InMemoryTokenStore(AuthToken(accessToken: "t1")), scope: .optIn) { _ in
            AuthToken(accessToken: "t\(refreshes.next())")
        }
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))
        #expect(try await client.value(Endpoint<String>.get("/public")) == "public")
        #expect(try await client.send(Endpoint<String>.get("/private")).status == .unauthorized)
        #expect(refreshes.count == 0, "a request that did not ask never triggers a refresh")
        #expect(try await client.value(Endpoint<String>.get("/private").authorized()) == "ok")
        #expect(try await client.value(Profile()) == "ok")
        let both = Endpoint<String>.get("/private").authorized().tagged(TokenAuthorization.noAuthorization)
        #expect(try await client.send(both).status == .unauthorized, "opting out wins")
        #expect(mock.requests.map { $0.headerFields[.authorization] } == [nil, nil, "Bearer t1", "Bearer t1", nil])
    }

    /// The default scope still opts out by tag.
    @Test func optOutSkipsOnlyTheTaggedRequests() async throws {
        let mock = self.server()
        let auth = TokenAuthorization(store: InMemoryTokenStore(AuthToken(accessToken: "t1"))) { _ in AuthToken(accessToken: "x") }
        #expect(auth.scope == .optOut)
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))
        _ = try await client.value(Endpoint<String>.get("/a"))
        _ = try await client.value(Endpoint<String>.get("/public").tagged(TokenAuthorization.noAuthorization))
        #expect(mock.requests.map { $0.headerFields[.authorization] } == ["Bearer t1", nil])
    }

    /// Fixed credentials, opt in: only `authorized()` requests carry them; a request's own
    /// header is left alone.
    @Test func optInStaticCredentials() async throws {
        let mock = MockTransport(always: .text("ok"))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [
            StaticAuthorization(.bearer("k"), scope: .optIn),
        ]))
        _ = try await client.value(Endpoint<String>.get("/a"))
        _ = try await client.value(Endpoint<String>.get("/b").authorized())
        _ = try await client.value(Endpoint<String>.get("/c", headers: [.authorization: "Bearer own"]).authorized())
        #expect(mock.requests.map { $0.headerFields[.authorization] } == [nil, "Bearer k", "Bearer own"])
        #expect(AuthorizationScope.optIn.covers([StaticAuthorization.authorize]))
        #expect(!AuthorizationScope.optIn.covers([]))
        #expect(AuthorizationScope.optOut.covers([]))
        #expect(!AuthorizationScope.optOut.covers([StaticAuthorization.noAuthorization, StaticAuthorization.authorize]))
    }

    // MARK: Capturing a login's token

    private struct LoginReply: Decodable, Sendable { var sessionToken: String }

    /// A login answered with `{"session_token": …}` on a snake_case client: decoded with the
    /// client's coders, its token used from then on.
    @Test func aTypedCaptureDecodesWithTheClientsCoders() async throws {
        let mock = MockTransport()
        mock.on(.post, "/login", reply: .text(#"{"session_token": "s1"}"#, contentType: "application/json"))
        mock.fallback { request in request.headerFields[.authorization] == "Bearer s1" ? .text("ok") : .status(.unauthorized) }
        let auth = TokenAuthorization(capture: .decoding(LoginReply.self) { reply in AuthToken(accessToken: reply.sessionToken) },
                                      refresh: { _ in throw ClientError(.authorizationFailed, detail: "log in first") })
        let client = try Client(baseURL: "http://api.test", transport: mock,
                                configuration: .init(coders: .json(keys: .snakeCase), middleware: [auth]))
        let reply = try await client.value(Endpoint<JSONValue>.post("/login").tagged(TokenAuthorization.login))
        #expect(reply["session_token"]?.stringValue == "s1", "the caller still gets the body")
        #expect(auth.currentToken()?.accessToken == "s1")
        #expect(try await client.value(Endpoint<String>.get("/me")) == "ok")
    }

    /// A refused login sets nothing and stays the caller's answer; a 2xx login whose body is
    /// not the reply fails with `.decodingFailed`, saying where.
    @Test func aTypedCaptureLeavesRefusalsAloneAndReportsABadReply() async throws {
        let mock = MockTransport()
        mock.on(.post, "/refused", reply: .text(#"{"error": "bad password"}"#, status: .unauthorized, contentType: "application/json"))
        mock.on(.post, "/odd", reply: .text(#"{"token": 7}"#, contentType: "application/json"))
        let auth = TokenAuthorization(capture: .decoding(LoginReply.self) { AuthToken(accessToken: $0.sessionToken) },
                                      refresh: { _ in throw ClientError(.authorizationFailed, detail: "log in first") })
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))
        #expect(try await client.send(Endpoint<JSONValue>.post("/refused").tagged(TokenAuthorization.login)).status == .unauthorized)
        let error = await client.outcome(Endpoint<JSONValue>.post("/odd").tagged(TokenAuthorization.login)).error
        #expect(error?.code == .decodingFailed, "\(String(describing: error))")
        #expect(error?.status == .ok)
        #expect(auth.currentToken() == nil)
    }

    /// `.bytes`: the raw response, whatever its status.
    @Test func aBytesCaptureSeesTheRawResponse() async throws {
        let mock = MockTransport()
        mock.on(.post, "/token", reply: .text("raw-7", status: .created))
        let auth = TokenAuthorization(capture: .bytes { head, body in
            head.status == .created ? AuthToken(accessToken: String(decoding: body, as: UTF8.self)) : nil
        }, refresh: { _ in throw ClientError(.authorizationFailed, detail: "log in first") })
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))
        #expect(try await client.value(Endpoint<String>.post("/token").tagged(TokenAuthorization.login)) == "raw-7")
        #expect(auth.currentToken()?.accessToken == "raw-7")
    }
}
