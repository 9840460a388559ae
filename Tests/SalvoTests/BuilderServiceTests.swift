import Foundation
import HTTPTypes
import Logging
import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// A builder service's hooks and logger run around each request built from it, mocked results
/// stand in for the network with everything else as for a real answer, and a queue sends its
/// requests one after another.
@Suite struct BuilderServiceTests {
    struct X_Api_Key: HeaderComponent {
        let value: String
        var field: HTTPField { HTTPField(name: HTTPField.Name("X-Api-Key")!, value: self.value) }
    }

    final class Seen: Sendable {
        let statuses = Mutex<[Int]>([])
        let order = Mutex<[String]>([])
        let logs = Mutex<[String]>([])
    }

    struct Counting: LogHandler {
        let seen: Seen
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { self.metadata[key] }
            set { self.metadata[key] = newValue }
        }
        func log(event: LogEvent) { self.seen.logs.withLock { $0.append("\(event.message)") } }
    }

    struct Backend: Service {
        let base: String
        let seen: Seen
        var baseURL: URL { URL(string: self.base)! }
        var logger: Logger { Logger(label: "backend") { _ in Counting(seen: self.seen) } }

        func beforeEach(_ request: ClientRequest) -> ClientRequest {
            request.headers { X_Api_Key(value: "secret_token") }
        }

        func afterEach(_ response: ClientResponse) -> ClientResponse {
            self.seen.statuses.withLock { $0.append(response.statusCode) }
            return response
        }
    }

    struct Echo: Decodable, Sendable {
        let method: String
        let path: String
        let headers: [[String]]
        func header(_ name: String) -> String? { self.headers.first { $0.first?.lowercased() == name.lowercased() }?.last }
    }

    @Test func hooksAndLoggerRunAroundEachRequest() async throws {
        let server = try await APIServer.start()
        let seen = Seen()
        let backend = Backend(base: server.baseURL, seen: seen)
        let client = try Client(baseURL: "http://unused.test")
        let echo = try await client.value(Get("echo", "a b", from: backend).responseBody(Echo.self))
        #expect(echo.path == "/echo/a%20b")
        #expect(echo.header("X-Api-Key") == "secret_token")
        let (_, error) = await client.outcome(Get("status", 404, from: backend))
        #expect(error?.status == .notFound)
        #expect(seen.statuses.withLock { $0 } == [200, 404])
        #expect(seen.logs.withLock { $0 }.count == 2)
    }

    @Test func aServiceWithoutHooksChangesNothing() async throws {
        struct Plain: Service { var baseURL: URL { URL(string: "http://plain.test")! } }
        let mock = MockTransport()
        mock.on(.get, "/x") { request in
            #expect(request.headerFields[HTTPField.Name("X-Api-Key")!] == nil)
            return .text("ok")
        }
        let client = try Client(baseURL: "http://unused.test", transport: mock)
        #expect(try await client.value(Get("x", from: Plain()).responseBody(String.self)) == "ok")
    }

    @Test func aBadHeaderNameInBeforeEachFailsTheSend() async throws {
        struct Bad: Service {
            var baseURL: URL { URL(string: "http://bad.test")! }
            func beforeEach(_ request: ClientRequest) -> ClientRequest { request.headers { HeaderField("Bad Name", "x") } }
        }
        let client = try Client(baseURL: "http://unused.test", transport: MockTransport(always: .text("never")))
        let (_, error) = await client.outcome(Get("x", from: Bad()))
        #expect(error?.code == .invalidRequest)
    }

    @Test func mockedResultsRunThroughHooksValidationAndDecoding() async throws {
        let seen = Seen()
        let backend = Backend(base: "http://mocked.test", seen: seen)
        struct User: Codable, Sendable, Equatable { let id: Int; let name: String }
        struct Problem: Codable, Sendable, Equatable { let message: String }
        // No transport would answer: only the mock can.
        let client = try Client(baseURL: "http://unused.test", transport: MockTransport())
        let user = try await client.value(Get("users", 7, from: backend).responseBody(User.self)
            .mocked(try .json(User(id: 7, name: "Ada"))))
        #expect(user == User(id: 7, name: "Ada"))

        let checked = Get("users", 8, from: backend).responseBody(User.self).responseError(Problem.self)
            .mocked(where: { request in
                #expect(request.head.headerFields[HTTPField.Name("X-Api-Key")!] == "secret_token")
                return try .json(Problem(message: "gone"), status: .gone)
            })
        let (value, error) = await client.outcome(checked)
        #expect(value == nil)
        #expect(error?.failureBody(for: checked) == Problem(message: "gone"))
        #expect(seen.statuses.withLock { $0 } == [200, 410])

        let failing = Get("users", from: backend).mocked(.error(TransportError(.connectionRefused)))
        let (_, refused) = await client.outcome(failing)
        #expect(refused?.code == .transportFailed)
    }

    @Test func aMockedRequestStillGoesThroughTheClientsMiddleware() async throws {
        struct Plain: Service { var baseURL: URL { URL(string: "http://plain.test")! } }
        let client = try Client(baseURL: "http://unused.test", transport: MockTransport(), configuration: .init(middleware: [
            StaticAuthorization(.bearer("t0k")),
        ]))
        let request = Get("me", from: Plain()).responseBody(String.self).mocked(where: { request in
            request.head.headerFields[.authorization] == "Bearer t0k" ? .text("authorized") : .status(.unauthorized)
        })
        #expect(try await client.value(request) == "authorized")
    }

    @Test func aQueueSendsInOrderAndCanStopAtAFailure() async throws {
        let server = try await APIServer.start()
        let seen = Seen()
        let backend = Backend(base: server.baseURL, seen: seen)
        let client = try Client(baseURL: "http://unused.test")
        let includeLast = true
        let queue = Queue {
            Get("echo", "one", from: backend).responseBody(Echo.self)
            Get("status", 500, from: backend)
            if includeLast { Get("echo", "three", from: backend).responseBody(Echo.self) }
        }
        let all = await client.outcomes(of: queue)
        #expect(all.count == 3)
        #expect(all[0].value(as: Echo.self)?.path == "/echo/one")
        #expect(all[1].error?.status == .internalServerError)
        #expect(all[2].value(as: Echo.self)?.path == "/echo/three")
        #expect(seen.statuses.withLock { $0 } == [200, 500, 200])

        let stopped = await client.outcomes(of: queue, stopAtFailure: true)
        #expect(stopped.count == 2)
        #expect(stopped.map(\.operationName) == ["GET /echo/one", "GET /status/500"])
    }
}
