// A tour of Salvo's typed layer against the demo API (scripts/demo-api.py):
// typed GET, POST with JSON, a multipart upload, a decoded failure body, a streamed JSON
// Lines response, a download, and the same client offline over a mock transport.
//
//     swift run -c release TypedClientDemo http://127.0.0.1:8080
import Foundation
import Salvo

// MARK: The API, as types

struct User: Codable, Sendable {
    var id: Int
    var name: String
    var emailAddress: String?
}

struct NewUser: Encodable, Sendable {
    var name: String
    var emailAddress: String
}

struct APIProblem: Decodable, Sendable, Error {
    var error: String
}

/// The protocol spelling: an endpoint as a type.
struct GetUser: Request {
    typealias SuccessResponseBody = User
    typealias FailureResponseBody = APIProblem
    var id: Int
    var path: String { "/users/\(segment: self.id)" }
}

/// The value spelling: endpoints as static members.
extension TypedEndpoint where Success == [User], Failure == APIProblem {
    static func users(named name: String? = nil) -> Self {
        Endpoint<[User]>.get("/users", query: [QueryItem("name", name)]).failing(as: APIProblem.self)
    }
}

struct UploadReceipt: Decodable, Sendable {
    struct Part: Decodable, Sendable {
        var name: String
        var filename: String?
        var size: Int
    }
    var parts: [Part]
}

struct Tick: Decodable, Sendable {
    var index: Int
}

// MARK: The tour

@main
struct TypedClientDemo {
    static func main() async {
        let arguments = CommandLine.arguments
        let baseURL = arguments.count > 1 ? arguments[1] : "http://127.0.0.1:8080"
        do {
            try await self.tour(baseURL: baseURL)
        } catch {
            print("demo failed: \(error)")
            exit(1)
        }
    }

    static func tour(baseURL: String) async throws {
        let client = try Client(baseURL: baseURL, configuration: .init(
            coders: .json(keys: .snakeCase), headerFields: [.userAgent: "salvo-typed-demo"], timeout: .seconds(10)))
        print("typed client for \(client.baseURL)")

        // 1. A typed GET: the body decoded straight into the type.
        let ada = try await client.value(GetUser(id: 1))
        print("  GET /users/1                 → \(ada.name) <\(ada.emailAddress ?? "-")>")
        let found = try await client.value(.users(named: "tur"))
        print("  GET /users?name=tur          → \(found.map(\.name))")

        // 2. POST with a JSON body (snake_case on the wire), the status kept with the value.
        let (created, response) = try await client.valueAndResponse(
            Endpoint<User>.post("/users", body: NewUser(name: "Edsger Dijkstra", emailAddress: "ewd@example.test")))
        print("  POST /users                  → \(response.status.code), id \(created.id)")

        // 3. A multipart upload: a text field and a file streamed from disk.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-demo-notes.txt")
        try Data(String(repeating: "A note on structured programming.\n", count: 2_000).utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let upload = try HTTPBody.multipart([.text("Ada", name: "author"), try .file(path: file.path, name: "notes")])
        let receipt = try await client.value(Endpoint<UploadReceipt>.post("/multipart", body: upload))
        print("  POST /multipart              → " + receipt.parts.map { "\($0.name)\($0.filename.map { " (\($0))" } ?? ""): \($0.size) B" }
            .joined(separator: ", "))

        // 4. A failure, decoded: the error carries the status, the raw body and the typed problem.
        do {
            _ = try await client.value(GetUser(id: 99))
        } catch {
            let problem = error.failureBody(as: APIProblem.self)
            print("  GET /users/99                → \(error.status?.code ?? 0): \(problem?.error ?? "?")")
        }

        // 5. A stream of JSON Lines, decoded as each line arrives.
        let stream = try await client.stream(Endpoint<Empty>.get("/jsonl", query: [QueryItem("n", "5"), QueryItem("ms", "50")]))
        var indexes: [Int] = []
        for try await tick in stream.jsonLines(of: Tick.self) {
            indexes.append(tick.index)
        }
        print("  GET /jsonl (streamed)        → \(indexes)")

        // 6. A download to a file, with progress, moved into place when complete.
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-demo-download.bin").path
        defer { unlink(target) }
        let downloaded = try await client.download(Endpoint<Empty>.get("/download", query: [QueryItem("size", "4000000")]), to: target)
        print("  GET /download                → \(downloaded.size) bytes in \(downloaded.path), "
            + "\(downloaded.head.headerFields[.contentType] ?? "?")")

        // 7. Offline: the same request types, answered by a mock from a directory tree
        //    (GET /users/1 is answered by GET/users/1.json), as in tests and previews.
        let fixtures = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-demo-mock")
        try FileManager.default.createDirectory(at: fixtures.appendingPathComponent("GET/users"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: fixtures) }
        try Data(#"{"id": 1, "name": "Ada (from a file)", "email_address": null}"#.utf8)
            .write(to: fixtures.appendingPathComponent("GET/users/1.json"))
        let offline = try Client(baseURL: "http://offline.test", transport: MockTransport(directory: fixtures.path),
                                 configuration: .init(coders: .json(keys: .snakeCase)))
        print("  offline GET /users/1         → \(try await offline.value(GetUser(id: 1)).name)")

        let metrics = response.metrics
        let toHead = metrics.timeToHead.map { String(format: "%.2f ms", Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1000) }
        print("  the POST's metrics           → connection reused: \(metrics.reusedConnection), time to head: \(toHead ?? "?")")
    }
}
