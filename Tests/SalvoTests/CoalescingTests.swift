import Foundation
@testable import Salvo
import Synchronization
import Testing

/// Identical GETs in flight share one exchange.
@Suite struct CoalescingTests {
    @Test func identicalGetsShareOneExchange() async throws {
        let gated = Gated()
        let coalescing = RequestCoalescing()
        let client = try Client(baseURL: "http://api.test", transport: gated.mock, configuration: .init(middleware: [coalescing]))
        let answers = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<10 { group.addTask { try? await client.value(Endpoint<String>.get("/config")) } }
            group.addTask { try? await client.value(Endpoint<String>.get("/config", headers: [.acceptLanguage: "fr"])) }
            group.addTask { try? await client.value(Endpoint<String>.post("/config")) }
            group.addTask { try? await client.value(Endpoint<String>.get("/config").tagged("no-auth")) }
            // Every GET waiting (the POST is not shared), then the answers.
            try? await Self.waitUntil(coalescing, hasWaiting: 12)
            gated.release()
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(answers.filter { $0 == "answer to /config" }.count == 13)
        #expect(gated.mock.requests.count == 4, "one shared GET, one with other headers, one with other tags, the POST")
        // Not in flight together: each goes.
        _ = try await client.value(Endpoint<String>.get("/config"))
        #expect(gated.mock.requests.count == 5)
    }

    /// Waits (10 s at most) until `count` callers wait for exchanges in flight: a caller has
    /// joined when this says so, not when a sleep guesses it has.
    static func waitUntil(_ coalescing: RequestCoalescing, hasWaiting count: Int) async throws {
        let end = ContinuousClock.now + .seconds(10)
        while coalescing.callersWaiting < count, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(2)) }
        #expect(coalescing.callersWaiting >= count, "\(count) callers waiting")
    }

    /// A mock whose answers wait until the test opens the gate (10 s at most), so that what
    /// the test checks does not depend on timing.
    final class Gated: Sendable {
        let mock = MockTransport()
        let open = Mutex(false)
        init() {
            self.mock.fallback { [self] request in
                for _ in 0..<5000 where !self.open.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(2)) }
                return .text("answer to \(request.target)")
            }
        }
        func release() { self.open.withLock { $0 = true } }
    }

    @Test func aCancelledCallerStopsWaitingAlone() async throws {
        let gated = Gated()
        let coalescing = RequestCoalescing()
        let client = try Client(baseURL: "http://api.test", transport: gated.mock, configuration: .init(middleware: [coalescing]))
        let first = Task { await client.outcome(Endpoint<String>.get("/slow")) }
        while gated.mock.requests.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
        let second = Task { await client.outcome(Endpoint<String>.get("/slow")) }
        try await Self.waitUntil(coalescing, hasWaiting: 2)
        second.cancel()
        #expect(await second.value.error?.code == .cancelled)
        // A caller that joins keeps its own deadline.
        let hurried = await client.outcome(Endpoint<String>.get("/slow"), options: .init(timeout: .milliseconds(50)))
        #expect(hurried.error?.transportError?.code == .totalTimeout, "\(String(describing: hurried.error))")
        gated.release()
        #expect(await first.value.value == "answer to /slow", "the first caller still gets the answer")
        #expect(gated.mock.requests.count == 1, "one exchange for the three")
    }

    @Test func whenEveryCallerGivesUpTheExchangeIsCancelled() async throws {
        let gated = Gated()
        let client = try Client(baseURL: "http://api.test", transport: gated.mock, configuration: .init(middleware: [RequestCoalescing()]))
        let lone = Task { await client.outcome(Endpoint<String>.get("/alone")) }
        while gated.mock.requests.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
        lone.cancel()
        #expect(await lone.value.error?.code == .cancelled)
        // The exchange itself was cancelled: a new caller starts a new one at once.
        let again = Task { await client.outcome(Endpoint<String>.get("/alone")) }
        let end = ContinuousClock.now + .seconds(10)
        while gated.mock.requests.count < 2, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(2)) }
        #expect(gated.mock.requests.count == 2, "the cancelled exchange is not joined")
        gated.release()
        #expect(await again.value.value == "answer to /alone")
    }

    /// The shared exchange cancelled for its leader's sake (here by a RequestControl placed
    /// after the coalescing): the callers who did not give up go alone and get their answer.
    @Test func followersOfACancelledLeaderGoAlone() async throws {
        let gated = Gated()
        let mock = gated.mock
        let control = RequestControl()
        let coalescing = RequestCoalescing()
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [coalescing, control]))
        let leaderID = RequestID()
        let leader = Task { await client.outcome(Endpoint<String>.get("/shared"), options: .init(id: leaderID)) }
        while mock.requests.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
        let follower = Task { await client.outcome(Endpoint<String>.get("/shared")) }
        try await Self.waitUntil(coalescing, hasWaiting: 2)
        control.cancel(leaderID)
        #expect(await leader.value.error?.code == .cancelled)
        gated.release()
        let followed = await follower.value
        #expect(followed.value == "answer to /shared", "\(String(describing: followed.error))")
        #expect(mock.requests.count == 2, "the follower's own exchange")
    }
}
