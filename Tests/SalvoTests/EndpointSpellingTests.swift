import Foundation
@testable import Salvo
import Testing

struct PostItem: Codable, Sendable, Equatable { let id: Int; let title: String }
struct Refusal: Codable, Sendable, Equatable { let message: String }

/// Endpoints grouped in one extension, each saying what it returns.
extension Endpoint {
    static func posts(by user: Int) -> Endpoint<[PostItem]> { .get("/users/\(segment: user)/posts") }
    static func deletePost(_ id: Int) -> Endpoint<Void> { .delete("/posts/\(segment: id)") }
    static func lockedPost(_ id: Int) -> TypedEndpoint<Void, Refusal> { Endpoint<Void>.delete("/posts/\(segment: id)").failing(as: Refusal.self) }
}

/// The first spelling a newcomer tries: constrained to a success type, no word about failures.
extension Endpoint where Success == [PostItem] {
    static func recent() -> Self { .get("/users/7/posts") }
}

/// Endpoint spellings that must compile and work: an `extension Endpoint where Success == X`
/// (no word about the failure type), `Endpoint<Void>`, a declared failure type.
@Suite struct EndpointSpellingTests {
    let mock: MockTransport = {
        let mock = MockTransport()
        mock.on(.get, "/users/7/posts", reply: try! .json([PostItem(id: 1, title: "first")]))
        mock.on(.delete, "/posts/1", reply: .status(.noContent))
        mock.on(.delete, "/posts/2", reply: try! .json(Refusal(message: "locked"), status: .conflict))
        return mock
    }()

    @Test func anExtensionOfEndpointNeedsNoWordAboutFailures() async throws {
        let client = try Client(baseURL: "http://api.test", transport: self.mock)
        #expect(try await client.value(.posts(by: 7)) == [PostItem(id: 1, title: "first")])
        #expect(try await client.value(Endpoint<[PostItem]>.recent()).count == 1)
    }

    @Test func voidEndpoints() async throws {
        let client = try Client(baseURL: "http://api.test", transport: self.mock)
        try await client.value(.deletePost(1))                    // nothing to discard
        try await client.value(Endpoint<Void>.delete("/posts/1"))
        try await client.value(Endpoint<Empty>.delete("/posts/1"))   // no `_ =` either
        do {
            try await client.value(.lockedPost(2))
            Issue.record("a 409 is refused")
        } catch {
            #expect(error.status == .conflict)
            #expect(error.failureBody(as: Refusal.self) == Refusal(message: "locked"))
        }
    }

    @Test func aFailureTypeThatIsNotDecodableSaysSo() throws {
        struct Opaque: Sendable {}
        let decode = ResponseDecoding.decoder(for: Opaque.self)
        #expect(throws: ClientError.self) { try decode(Array("{}".utf8), .json) }
        let void = ResponseDecoding.decoder(for: Void.self)
        #expect(throws: Never.self) { try void([], .json) }
    }
}
