// Built against an installed Salvo by cmake/consumer: the typed layer answers from a mock, and
// the engine starts and stops its loops. Prints "salvo-consumer: ok" and exits 0, or says what
// went wrong and exits 1.
import Foundation
import Salvo
import SalvoCore

struct User: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

do {
    let client = try Client(baseURL: "http://consumer.test", transport: MockTransport(always: try .json(User(id: 7, name: "Ada"))))
    let user = try await client.value(Endpoint<User>.get("/users/7"))
    guard user == User(id: 7, name: "Ada") else {
        print("salvo-consumer: decoded \(user)")
        exit(1)
    }
    let engine = try HTTPClient()
    engine.shutdown()
    print("salvo-consumer: ok (Salvo \(SalvoVersion.string))")
} catch {
    print("salvo-consumer: \(error)")
    exit(1)
}
