import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// Static credentials, token stores, and the single-flight refresh, over a mock server whose
/// valid token can be changed.
@Suite struct AuthorizationTests {
    /// Accepts `Bearer <valid>`, answers 401 otherwise; counts what it saw.
    final class TokenServer: Sendable {
        let valid = Mutex("t1")
        let seen = Mutex<[String]>([])
        let mock = MockTransport()

        init() {
            self.mock.fallback { [self] request in
                let header = request.headerFields[.authorization] ?? ""
                self.seen.withLock { $0.append(header) }
                return header == "Bearer \(self.valid.withLock { $0 })" ? .text("ok") : .status(.unauthorized)
            }
        }
    }

    final class Counter: Sendable {
        let value = Mutex(0)
        func next() -> Int { self.value.withLock { count in count += 1; return count } }
        var count: Int { self.value.withLock { $0 } }
    }

    @Test func staticCredentials() async throws {
        let mock = MockTransport(always: .text("ok"))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [
            StaticAuthorization(.basic(username: "Aladdin", password: "open sesame")),
        ]))
        _ = try await client.value(Endpoint<String>.get("/a"))
        _ = try await client.value(Endpoint<String>.get("/b").tagged(StaticAuthorization.noAuthorization))
        _ = try await client.value(Endpoint<String>.get("/c", headers: [.authorization: "Bearer own"]))
        #expect(mock.requests.map { $0.headerFields[.authorization] } == ["Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", nil, "Bearer own"])
        #expect(HTTPCredentials.bearer("x").headerValue == "Bearer x")
    }

    /// 100 requests meet a 401 together: one refresh, all sent again with its token.
    @Test func concurrentUnauthorizedRequestsShareOneRefresh() async throws {
        let server = TokenServer()
        let refreshes = Counter()
        let auth = TokenAuthorization(store: InMemoryTokenStore(AuthToken(accessToken: "t0"))) { _ in
            let number = refreshes.next()
            try await Task.sleep(for: .milliseconds(50))   // long enough for every request to meet its 401
            return AuthToken(accessToken: "t\(number)")
        }
        let client = try Client(baseURL: "http://api.test", transport: server.mock, configuration: .init(middleware: [auth]))
        let results = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<100 { group.addTask { try? await client.value(Endpoint<String>.get("/data")) } }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(refreshes.count == 1)
        #expect(results.allSatisfy { $0 == "ok" }, "\(results.filter { $0 != "ok" }.count) failed")
        #expect(server.seen.withLock { $0 }.filter { $0 == "Bearer t1" }.count == 100)
        #expect(auth.currentToken()?.accessToken == "t1")
    }

    /// A request that went out with an older token than the current one is sent again with
    /// the current one; no second refresh.
    @Test func anOlderTokenIsReplacedWithoutAnotherRefresh() async throws {
        let server = TokenServer()
        let refreshes = Counter()
        let auth = TokenAuthorization(store: InMemoryTokenStore(AuthToken(accessToken: "t0"))) { _ in
            AuthToken(accessToken: "t\(refreshes.next())")
        }
        let client = try Client(baseURL: "http://api.test", transport: server.mock, configuration: .init(middleware: [auth]))
        #expect(try await client.value(Endpoint<String>.get("/first")) == "ok")
        #expect(refreshes.count == 1)
        // A request that went with t0 (generation 0) and met a 401 after the refresh.
        let (token, _) = try await auth.coordinator.refreshed(after: 0)
        #expect(token.accessToken == "t1" && refreshes.count == 1)
    }

    @Test func aFailedRefreshFailsEveryWaiter() async throws {
        let server = TokenServer()
        struct Denied: Error {}
        let refreshes = Counter()
        let auth = TokenAuthorization(store: InMemoryTokenStore(AuthToken(accessToken: "t0"))) { _ in
            _ = refreshes.next()
            // Fails only once all ten have met their 401 and wait for this refresh.
            let end = ContinuousClock.now + .seconds(10)
            while server.seen.withLock({ $0.count }) < 10, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(5)) }
            throw Denied()
        }
        let client = try Client(baseURL: "http://api.test", transport: server.mock, configuration: .init(middleware: [auth]))
        let errors = await withTaskGroup(of: ClientError?.self) { group in
            for _ in 0..<10 { group.addTask { await client.outcome(Endpoint<String>.get("/data")).error } }
            return await group.reduce(into: [ClientError?]()) { $0.append($1) }
        }
        #expect(errors.allSatisfy { $0?.code == .authorizationFailed && $0?.underlyingError is Denied })
        #expect(refreshes.count == 1, "one refresh, its failure shared")
    }

    /// An expired token is refreshed before it is sent: no 401 round trip.
    @Test func anExpiredTokenIsRefreshedFirst() async throws {
        let server = TokenServer()
        let refreshes = Counter()
        let expired = AuthToken(accessToken: "t0", expiresAt: Date(timeIntervalSinceNow: -60))
        let auth = TokenAuthorization(store: InMemoryTokenStore(expired)) { old in
            #expect(old?.accessToken == "t0", "the refresh sees the token it replaces")
            return AuthToken(accessToken: "t\(refreshes.next())")
        }
        let client = try Client(baseURL: "http://api.test", transport: server.mock, configuration: .init(middleware: [auth]))
        #expect(try await client.value(Endpoint<String>.get("/data")) == "ok")
        #expect(server.seen.withLock { $0 } == ["Bearer t1"])
    }

    /// A refresh that hangs holds a call no longer than the call's timeout.
    @Test func waitingForARefreshIsBoundedByTheCallsTimeout() async throws {
        let server = TokenServer()
        let auth = TokenAuthorization(store: InMemoryTokenStore(AuthToken(accessToken: "t0"))) { _ in
            try await Task.sleep(for: .seconds(60))
            return AuthToken(accessToken: "late")
        }
        let client = try Client(baseURL: "http://api.test", transport: server.mock, configuration: .init(middleware: [auth]))
        let error = await client.outcome(Endpoint<String>.get("/data"), options: .init(timeout: .milliseconds(200))).error
        #expect(error?.transportError?.code == .totalTimeout, "\(String(describing: error))")
    }

    /// The refresh itself goes through the same client: its 401 does not start another refresh.
    @Test func theRefreshRequestNeverRefreshes() async throws {
        let server = TokenServer()
        let refreshes = Counter()
        let box = Mutex<Client?>(nil)
        let auth = TokenAuthorization(store: InMemoryTokenStore(AuthToken(accessToken: "t0"))) { _ in
            _ = refreshes.next()
            let client = box.withLock { $0 }!
            return AuthToken(accessToken: try await client.value(Endpoint<String>.post("/refresh")))
        }
        let client = try Client(baseURL: "http://api.test", transport: server.mock, configuration: .init(middleware: [auth]))
        box.withLock { $0 = client }
        let (_, error) = await client.outcome(Endpoint<String>.get("/data"))
        #expect(error?.code == .authorizationFailed)
        #expect(refreshes.count == 1)
        #expect(server.seen.withLock { $0 }.count == 2, "the request, then the refresh (without a token); no loop")
    }

    /// A refresh that hangs does not pin a caller that gives up.
    @Test func aCallerWaitingForAHungRefreshCanLeave() async throws {
        let server = TokenServer()
        let started = Counter()
        let auth = TokenAuthorization { _ in
            _ = started.next()
            try await Task.sleep(for: .seconds(30))
            return AuthToken(accessToken: "late")
        }
        let client = try Client(baseURL: "http://api.test", transport: server.mock, configuration: .init(middleware: [auth]))
        let call = Task { await client.outcome(Endpoint<String>.get("/data")).error }
        while started.count == 0 { try await Task.sleep(for: .milliseconds(2)) }
        call.cancel()
        #expect(await call.value?.code == .cancelled)
    }

    @Test func aLoginResponseSetsTheToken() async throws {
        let mock = MockTransport()
        mock.on(.post, "/login", reply: .text(#"{"token": "t9"}"#, contentType: "application/json"))
        mock.on(.get, "/me") { request in request.headerFields[.authorization] == "Bearer t9" ? .text("me") : .status(.unauthorized) }
        struct Login: Decodable { var token: String }
        let auth = TokenAuthorization(capture: { head, body in
            (try? JSONDecoder().decode(Login.self, from: Data(body))).map { AuthToken(accessToken: $0.token) }
        }, refresh: { _ in throw ClientError(.authorizationFailed, detail: "log in first") })
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))
        // Before the login: sent without a token, its 401 meets a refresh that refuses.
        #expect(await client.outcome(Endpoint<String>.get("/me")).error?.detail == "log in first")
        #expect(mock.requests.first?.headerFields[.authorization] == nil)
        let login = try await client.value(Endpoint<JSONValue>.post("/login").tagged(TokenAuthorization.login))
        #expect(login["token"]?.stringValue == "t9", "the caller still gets the body")
        #expect(try await client.value(Endpoint<String>.get("/me")) == "me")
        #expect(mock.requests.last?.headerFields[.authorization] == "Bearer t9")
    }

    /// A login that carries credentials of its own (Basic, to a token endpoint): sent with
    /// them, its token still captured.
    @Test func aLoginWithItsOwnCredentialsIsCaptured() async throws {
        let mock = MockTransport()
        mock.on(.post, "/token", reply: .text("t7"))
        mock.on(.get, "/me", reply: .text("me"))
        let auth = TokenAuthorization(capture: { _, body in AuthToken(accessToken: String(decoding: body, as: UTF8.self)) },
                                      refresh: { _ in throw ClientError(.authorizationFailed, detail: "log in first") })
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))
        let login = Endpoint<String>.post("/token", headers: [.authorization: HTTPCredentials.basic(username: "app", password: "s3cret").headerValue])
            .tagged(TokenAuthorization.login)
        #expect(try await client.value(login) == "t7")
        #expect(mock.requests.first?.headerFields[.authorization]?.hasPrefix("Basic ") == true, "its own credentials")
        #expect(try await client.value(Endpoint<String>.get("/me")) == "me")
        #expect(mock.requests.last?.headerFields[.authorization] == "Bearer t7")
    }

    /// Over the engine against the test API: a 401 for the stored token, one refresh, then 200.
    @Test func overTheEngine() async throws {
        let refreshes = Counter()
        let auth = TokenAuthorization(store: InMemoryTokenStore(AuthToken(accessToken: "stale"))) { _ in
            _ = refreshes.next()
            return AuthToken(accessToken: "fresh")
        }
        let client = try await SharedAPI.client(.init(middleware: [auth]))
        let answer = try await client.value(Endpoint<JSONValue>.get("/protected", query: [QueryItem("token", "fresh")]))
        #expect(answer["ok"] == .bool(true))
        #expect(refreshes.count == 1)
        #expect(try await client.value(Endpoint<JSONValue>.get("/protected", query: [QueryItem("token", "fresh")]))["ok"] == .bool(true))
        #expect(refreshes.count == 1, "the new token is kept")
    }

    @Test func theFileStoreIsPrivateWholeAndForgiving() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-tokens-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("token.json").path
        let store = FileTokenStore(path: path)
        #expect(try store.load() == nil)
        let token = AuthToken(accessToken: "a", refreshToken: "r", expiresAt: Date(timeIntervalSince1970: 2_000_000_000))
        try store.save(token)
        #expect(try store.load() == token)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["token.json"], "no temporary file left")
        // Corrupt: a typed error from the store; the middleware treats it as no token.
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: ClientError.self) { try store.load() }
        let auth = TokenAuthorization(store: store) { _ in AuthToken(accessToken: "new") }
        #expect(auth.currentToken() == nil)
        try store.save(nil)
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
