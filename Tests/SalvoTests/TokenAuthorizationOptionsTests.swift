import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

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
}
