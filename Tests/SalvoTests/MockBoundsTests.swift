import Foundation
@testable import Salvo
import Testing

/// The mock reads the time bounds as the engine does: zero (or less) is no bound.
@Suite struct MockBoundsTests {
    @Test func zeroIsNoBoundOverTheMockAsOverTheEngine() async throws {
        let mock = MockTransport(always: MockTransport.Reply.text("ok").delayed(by: .milliseconds(50)))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        let quiet = try await client.send(Endpoint<Empty>.get("/events"), options: .init(timeout: .zero, headTimeout: .zero))
        #expect(quiet.status == .ok)
        do {
            _ = try await client.send(Endpoint<Empty>.get("/events"), options: .init(headTimeout: .milliseconds(10)))
            Issue.record("a reply later than the head timeout arrived")
        } catch {
            #expect(error.transportError?.code == .headTimeout)
        }
    }
}
