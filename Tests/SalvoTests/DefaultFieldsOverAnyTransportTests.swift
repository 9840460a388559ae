import Foundation
@testable import Salvo
import Testing

/// The typed client applies its default fields before any middleware or transport sees the
/// request — the mock included — by the same rule as the engine.
@Suite struct DefaultFieldsOverAnyTransportTests {
    @Test func defaultsGivenTwiceReachTheTransportWithBothValues() async throws {
        let mock = MockTransport(always: .text("ok"))
        var fields = HTTPFields()
        fields.append(HTTPField(name: .accept, value: "application/json"))
        fields.append(HTTPField(name: .accept, value: "text/plain;q=0.5"))
        fields[HTTPField.Name("X-Tenant")!] = "acme"
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(headerFields: fields))
        _ = try await client.send(Endpoint<Empty>.post("/notes", body: ["text": "hi"]))
        _ = try await client.send(Endpoint<Empty>.get("/notes").header(HTTPField.Name("X-Tenant")!, "other"))
        let seen = mock.requests
        #expect(seen.count == 2)
        #expect(seen[0].headerFields[values: .accept] == ["application/json", "text/plain;q=0.5"])
        #expect(seen[0].headerFields[.contentType] == "application/json", "the body's type, in the head for middleware and mocks")
        #expect(seen[1].headerFields[values: HTTPField.Name("X-Tenant")!] == ["other"], "the request's own value wins")
    }
}
