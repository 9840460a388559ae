@testable import Salvo
import Testing

/// When `metrics.total` is nil, as its documentation says (the engine's side is in
/// `EngineEndToEndTests.exchangeDetailsReachTheResponse`).
@Suite struct MetricsTotalTests {
    @Test func aTransportThatKeepsNoTimesGivesNoTotal() async throws {
        let client = try Client(baseURL: "http://api.test", transport: MockTransport(always: .text("hi")))
        let response = try await client.send(Endpoint<Empty>.get("/"))
        #expect(response.metrics.total == nil)
        #expect(response.metrics.bodyBytesDelivered == 0)
    }
}
