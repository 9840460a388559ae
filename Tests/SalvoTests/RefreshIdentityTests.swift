import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// A token refresh is one `TokenAuthorization`'s: only its own requests go bare, another
/// client's authorization and request control treat a refresh's requests as any others —
/// except that a call waiting for a refresh lends it its place, so that nothing deadlocks.
@Suite struct RefreshIdentityTests {
    final class Counter: Sendable {
        let value = Mutex(0)
        func next() -> Int { self.value.withLock { count in count += 1; return count } }
        var count: Int { self.value.withLock { $0 } }
    }

    /// Client A's refresh calls through client B, which has a TokenAuthorization of its own:
    /// B authorizes the call with its token — refreshing it first, since it has none — and
    /// A's request is sent again with the token the call brought.
    @Test func aRefreshThroughAnotherAuthorizedClientIsAuthorizedThere() async throws {
        let mock = MockTransport()
        mock.on(.post, "/b/token") { request in
            request.headerFields[.authorization] == "Bearer b1" ? .text("a-fresh") : .status(.unauthorized)
        }
        mock.on(.get, "/a/data") { request in
            request.headerFields[.authorization] == "Bearer a-fresh" ? .text("ok") : .status(.unauthorized)
        }
        let bRefreshes = Counter()
        let authB = TokenAuthorization(whenNoToken: .refreshFirst) { _ in AuthToken(accessToken: "b\(bRefreshes.next())") }
        let clientB = try Client(baseURL: "http://b.test", transport: mock, configuration: .init(middleware: [authB]))
        let authA = TokenAuthorization(store: InMemoryTokenStore(AuthToken(accessToken: "a-stale"))) { _ in
            AuthToken(accessToken: try await clientB.value(Endpoint<String>.post("/b/token")))
        }
        let clientA = try Client(baseURL: "http://a.test", transport: mock, configuration: .init(middleware: [authA]))

        let answer = try await withWatchdog { try await clientA.value(Endpoint<String>.get("/a/data")) }
        #expect(answer == "ok")
        #expect(mock.requests.map { "\($0.path) \($0.headerFields[.authorization] ?? "-")" }
                    == ["/a/data Bearer a-stale", "/b/token Bearer b1", "/a/data Bearer a-fresh"])
        #expect(bRefreshes.count == 1, "B refreshed its own token inside A's refresh")
        #expect(authA.currentToken()?.accessToken == "a-fresh")
    }

    /// Client B has a serial queue: while a call of B's own holds it, a request that A's
    /// refresh sends through B waits for its turn like any call (the queue is not skipped
    /// because some refresh is under way), then goes.
    @Test func anotherClientsQueueStillLimitsARefreshsRequests() async throws {
        let mock = MockTransport()
        let gateOpen = Mutex(false)
        mock.on(.get, "/b/gate") { _ in
            for _ in 0..<5000 where !gateOpen.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(2)) }
            return .text("gate")
        }
        mock.on(.post, "/b/token", reply: .text("a-fresh"))
        mock.on(.get, "/a/data") { request in
            request.headerFields[.authorization] == "Bearer a-fresh" ? .text("ok") : .status(.unauthorized)
        }
        let control = RequestControl.serialQueue()
        let clientB = try Client(baseURL: "http://b.test", transport: mock, configuration: .init(middleware: [control]))
        let authA = TokenAuthorization(whenNoToken: .refreshFirst) { _ in
            AuthToken(accessToken: try await clientB.value(Endpoint<String>.post("/b/token")))
        }
        let clientA = try Client(baseURL: "http://a.test", transport: mock, configuration: .init(middleware: [authA]))

        try await withWatchdog {
            let holder = Task { try await clientB.value(Endpoint<String>.get("/b/gate")) }
            while mock.requests.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
            let call = Task { try await clientA.value(Endpoint<String>.get("/a/data")) }
            // Until the refresh's request is queued behind the gate — or, wrongly, sent.
            while control.inFlight.count < 2, !mock.requests.contains(where: { $0.path == "/b/token" }) {
                try await Task.sleep(for: .milliseconds(2))
            }
            #expect(mock.requests.map(\.path) == ["/b/gate"], "the refresh's request skipped B's queue")
            gateOpen.withLock { $0 = true }
            #expect(try await holder.value == "gate")
            #expect(try await call.value == "ok")
        }
        #expect(mock.requests.map(\.path) == ["/b/gate", "/b/token", "/a/data"])
    }

    /// The refresh is started by a call that holds no place in the control (through a second
    /// client sharing the TokenAuthorization); the call that holds the control's only place
    /// waits for that refresh, which goes through the controlled client: the waiting call
    /// lends it its place instead of the two waiting for each other.
    @Test func aCallWaitingForARefreshLendsItItsPlace() async throws {
        let mock = MockTransport()
        mock.on(.post, "/token", reply: .text("fresh"))
        mock.fallback { request in request.headerFields[.authorization] == "Bearer fresh" ? .text("ok") : .status(.unauthorized) }
        let gateOpen = Mutex(false)
        let started = Counter()
        let box = Mutex<Client?>(nil)
        let auth = TokenAuthorization { _ in
            _ = started.next()
            for _ in 0..<5000 where !gateOpen.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(2)) }
            return AuthToken(accessToken: try await box.withLock { $0 }!.value(Endpoint<String>.post("/token")))
        }
        let control = RequestControl.serialQueue()
        let queued = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [control, auth]))
        box.withLock { $0 = queued }
        let free = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [auth]))

        try await withWatchdog {
            let first = Task { try await free.value(Endpoint<String>.get("/first")) }   // starts the refresh
            while started.count == 0 { try await Task.sleep(for: .milliseconds(2)) }
            let second = Task { try await queued.value(Endpoint<String>.get("/second")) }
            while control.inFlight.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
            gateOpen.withLock { $0 = true }
            #expect(try await first.value == "ok")
            #expect(try await second.value == "ok")
        }
        #expect(mock.requests.filter { $0.path == "/token" }.count == 1)
    }
}
