import Foundation
import Salvo
import SalvoTestSupport
import Testing

/// The API server shared by the tests of a run (it stops by itself when the run ends).
enum SharedAPI {
    static let server = SharedFixture { try APIServer.launch() }

    static func client(_ configuration: Client.Configuration = .init()) async throws -> Client {
        try Client(baseURL: try await self.server.get().baseURL, configuration: configuration)
    }
}

struct APIUser: Codable, Sendable, Equatable {
    var id: Int
    var name: String
    var emailAddress: String?
}

struct Echo: Decodable, Sendable {
    var method: String
    var path: String
    var query: String
    var headers: [[String]]
    var body: String
    var bodyLength: Int

    func header(_ name: String) -> String? {
        self.headers.first { $0[0].lowercased() == name.lowercased() }?[1]
    }
}

/// The typed layer over Salvo's engine, against a real HTTP server on loopback.
@Suite struct EngineEndToEndTests {
    static let snakeCase = Client.Configuration(coders: .json(keys: .snakeCase))

    @Test func requestStylesOverTheEngine() async throws {
        let client = try await SharedAPI.client(Self.snakeCase)
        let users = try await client.value(Endpoint<[APIUser]>.get("/users"))
        #expect(users.map(\.id) == [1, 2, 3])
        #expect(users[0].emailAddress == "ada@example.test")

        let found = try await client.value(Endpoint<[APIUser]>.get("/users", query: [QueryItem("name", "tur")]))
        #expect(found.map(\.name) == ["Alan Turing"])

        let token = try await client.value(Login(body: Credentials(username: "ada", password: "secret")))
        #expect(token == Token(token: "t-ada"))

        let created = try await client.send(Endpoint<APIUser>.post("/users", body: APIUser(id: 0, name: "Edsger", emailAddress: nil)))
        #expect(created.status == .created)
        #expect(try created.decodeSuccessBody().id == 4)
        #expect(created.url.hasSuffix("/users"))
    }

    @Test func failureBodiesAndRawBytesSurvive() async throws {
        let client = try await SharedAPI.client()
        do {
            _ = try await client.value(Endpoint<APIUser>.get("/users/99").failing(as: Problem.self))
            Issue.record("a 404 decoded as a user")
        } catch {
            #expect(error.code == .unacceptableStatus)
            #expect(error.status == .notFound)
            #expect(error.failureBody(as: Problem.self) == Problem(error: "no user 99"))
            #expect(String(decoding: error.responseBody ?? [], as: UTF8.self) == #"{"error": "no user 99"}"#)
            #expect(error.mayHaveBeenProcessed)
        }
        let raw = try await client.send(Endpoint<APIUser>.get("/status/503"))
        #expect(raw.status == .serviceUnavailable)
        #expect(raw.text == #"{"error": "status 503"}"#)
        #expect(try await client.value(Endpoint<String>.get("/text")) == "plain text")
        let empty = try await client.send(Endpoint<Empty>.get("/empty"))
        #expect(empty.status == .noContent)
        _ = try empty.decodeSuccessBody()
    }

    @Test func echoShowsWhatWentOnTheWire() async throws {
        let client = try Client(baseURL: try await SharedAPI.server.get().baseURL, configuration: .init(
            coders: .json(keys: .snakeCase), headerFields: [.userAgent: "salvo-tests"], queryItems: [QueryItem("client_id", "c 1")]))
        let echo = try await client.value(Endpoint<Echo>.put("/echo", body: ["a": "b"], query: [QueryItem("x", "1&2")]),
                                          options: .init(validators: []))
        #expect(echo.method == "PUT")
        #expect(echo.query == "x=1%262&client_id=c%201")
        #expect(echo.header("Content-Type") == "application/json")
        #expect(echo.header("User-Agent") == "salvo-tests")
        #expect(echo.body == #"{"a":"b"}"#)
    }

    @Test func timeoutsAndTransportErrorsAreTyped() async throws {
        let client = try await SharedAPI.client()
        do {
            _ = try await client.value(Endpoint<Empty>.get("/slow", query: [QueryItem("ms", "2000")]),
                                       options: .init(timeout: .milliseconds(200)))
            Issue.record("no timeout")
        } catch {
            #expect(error.code == .transportFailed)
            #expect(error.transportError?.code == .totalTimeout)
        }
        let refused = try Client(baseURL: "http://127.0.0.1:1")
        let (_, error) = await refused.outcome(Endpoint<Empty>.get("/"))
        #expect(error?.transportError?.code == .connectionRefused)
        #expect(error?.mayHaveBeenProcessed == false)
    }

    /// What the transport tells besides head and body reaches the typed response.
    @Test func exchangeDetailsReachTheResponse() async throws {
        let client = try await SharedAPI.client()
        let first = try await client.send(Endpoint<[APIUser]>.get("/users"))
        #expect(first.version == .http1_1)
        #expect(first.metrics.bodyBytesDelivered == first.body.count)
        #expect(first.metrics.total != nil)
        #expect(first.effectiveRequest.path == "/users")
        #expect(first.redirects.isEmpty)
        let stream = try await client.stream(Endpoint<Empty>.get("/jsonl", query: [QueryItem("n", "2")]))
        #expect(stream.metrics.timeToHead != nil)
        _ = try await stream.collect()
        #expect(stream.metrics.total != nil, "complete once the body is read")
        do {
            _ = try await client.value(Endpoint<Empty>.get("/slow", query: [QueryItem("ms", "2000")]),
                                       options: .init(headTimeout: .milliseconds(200)))
            Issue.record("no head timeout")
        } catch {
            #expect(error.transportError?.code == .headTimeout)
        }
    }

    @Test func cancellingTheTaskCancelsTheCall() async throws {
        let client = try await SharedAPI.client()
        let task = Task { try await client.value(Endpoint<Empty>.get("/slow", query: [QueryItem("ms", "3000")])) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("not cancelled")
        } catch let error as ClientError {
            #expect(error.code == .cancelled, "the response would have come after 3 s")
        }
    }
}
