import Foundation
@testable import Salvo
import Synchronization
import Testing

/// The interceptor and hooks spellings of middleware.
@Suite struct InterceptorTests {
    final class Journal: Sendable {
        let lines = Mutex<[String]>([])
        func add(_ line: String) { self.lines.withLock { $0.append(line) } }
        var all: [String] { self.lines.withLock { $0 } }
    }

    /// Adds the current token; on a 401 renews it once and asks to send again.
    final class Session: Interceptor {
        let token: Mutex<String>
        let journal: Journal
        init(journal: Journal) {
            self.token = Mutex("old")
            self.journal = journal
        }
        func adaptRequest(_ request: ClientRequest) async throws -> ClientRequest {
            var request = request
            request.head.headerFields[.authorization] = "Bearer \(self.token.withLock { $0 })"
            self.journal.add("adapt")
            return request
        }
        func rescue(_ error: ClientError, for request: ClientRequest, attempt: Int) async -> Bool {
            self.journal.add("rescue \(error.status?.code ?? 0) #\(attempt)")
            guard error.status == .unauthorized else { return false }
            self.token.withLock { $0 = "new" }
            return true
        }
        func adaptResponse(_ response: ClientResponse, for request: ClientRequest) async throws -> ClientResponse {
            var response = response
            response.head.headerFields[HTTPField.Name("X-Adapted")!] = "yes"
            return response
        }
        func receivedResponse(_ result: Result<ClientResponse, ClientError>, for request: ClientRequest) async {
            switch result {
            case .success(let response): self.journal.add("received \(response.status.code)")
            case .failure(let error):
                let adapted = error.responseHead?.headerFields[HTTPField.Name("X-Adapted")!] == "yes"
                self.journal.add("failed \(error.status?.code ?? 0)\(adapted ? " adapted" : "")")
            }
        }
    }

    @Test func theFourHooksInOrder() async throws {
        let mock = MockTransport()
        mock.fallback { request in request.headerFields[.authorization] == "Bearer new" ? .text("ok") : .status(.unauthorized) }
        let journal = Journal()
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [Session(journal: journal)]))
        let (value, response) = try await client.valueAndResponse(Endpoint<String>.get("/x"))
        #expect(value == "ok" && response.headerFields[HTTPField.Name("X-Adapted")!] == "yes")
        #expect(journal.all == ["adapt", "rescue 401 #1", "adapt", "received 200"])

        // Not rescued: the refused response reaches the client's validators as without the interceptor.
        let denied = MockTransport(always: .status(.forbidden))
        let other = Journal()
        let strict = try Client(baseURL: "http://api.test", transport: denied, configuration: .init(middleware: [Session(journal: other)]))
        let sent = try await strict.send(Endpoint<String>.get("/y"))
        #expect(sent.status == .forbidden)
        #expect(sent.headerFields[HTTPField.Name("X-Adapted")!] == "yes", "adaptResponse sees a 4xx handed on too")
        #expect(await strict.outcome(Endpoint<String>.get("/y")).error?.status?.code == 403)
        // What rescue took for a failure is one for receivedResponse too.
        #expect(other.all.prefix(3) == ["adapt", "rescue 403 #1", "failed 403 adapted"], "\(other.all)")
    }

    /// A transport failure: offered to rescue, then heard as the failure it is; a streamed
    /// call's 404 is a response to every hook (its body is the caller's).
    @Test func failuresAndStreamsTellTheSameStory() async throws {
        let mock = MockTransport(always: .status(.notFound))
        mock.fail(.get, "/down", times: 5, with: TransportError(.connectionRefused))
        let journal = Journal()
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [Session(journal: journal)]))
        #expect(await client.outcome(Endpoint<String>.get("/down")).error?.transportError?.code == .connectionRefused)
        #expect(journal.all == ["adapt", "rescue 0 #1", "failed 0"])

        let streamed = Journal()
        let streaming = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [Session(journal: streamed)]))
        let response = try await streaming.send(Endpoint<String>.get("/missing"))
        #expect(response.status == .notFound)
        #expect(streamed.all == ["adapt", "rescue 404 #1", "failed 404 adapted"])
        // No validators for the call: the 404 is a response like any other.
        _ = try await streaming.send(Endpoint<String>.get("/missing"), options: .init(validators: []))
        #expect(streamed.all.suffix(2) == ["adapt", "received 404"])
        await #expect(throws: ClientError.self) { try await streaming.stream(Endpoint<String>.get("/missing")) }
        #expect(streamed.all.suffix(2) == ["adapt", "received 404"], "\(streamed.all)")
    }

    @Test func beforeAndAfterEach() async throws {
        let mock = MockTransport(always: .text("ok"))
        mock.fail(.get, "/down", times: 1, with: TransportError(.connectionRefused))
        let journal = Journal()
        let hooks = CallHooks(beforeEach: { request in
            request.head.headerFields[HTTPField.Name("X-Api-Key")!] = "k"
            if request.head.path == "/refused" { throw ClientError(.invalidRequest, detail: "not here") }
        }, afterEach: { request, result in
            journal.add("\(request.head.path ?? "") \((try? result.get()).map { "\($0.status.code)" } ?? "failed")")
        })
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [hooks]))
        _ = try await client.value(Endpoint<String>.get("/up"))
        _ = await client.outcome(Endpoint<String>.get("/down"))
        #expect(await client.outcome(Endpoint<String>.get("/refused")).error?.detail == "not here")
        #expect(journal.all == ["/up 200", "/down failed", "/refused failed"], "afterEach hears a refusal too")
        #expect(mock.requests.allSatisfy { $0.headerFields[HTTPField.Name("X-Api-Key")!] == "k" })
    }

    /// An interceptor that always rescues: its attempts share the call's deadline instead of
    /// each getting the whole timeout again.
    @Test func rescuesShareTheCallsDeadline() async throws {
        struct Persistent: Interceptor {
            var maxAttempts: Int { 50 }
            func rescue(_ error: ClientError, for request: ClientRequest, attempt: Int) async -> Bool { true }
        }
        let mock = MockTransport(always: .status(.serviceUnavailable).delayed(by: .milliseconds(100)))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [Persistent()]))
        let error = await client.outcome(Endpoint<String>.get("/x"), options: .init(timeout: .milliseconds(350))).error
        // The deadline ends it: in an attempt, or just after one (its 503 then stands).
        #expect(error?.transportError?.code == .totalTimeout || error?.status == .serviceUnavailable, "\(String(describing: error))")
        #expect(mock.requests.count <= 4, "\(mock.requests.count) attempts in 350 ms of 100 ms each")
    }

    /// The call's own validators decide what a failure is, for the hooks as for the caller.
    @Test func theCallsValidatorsJudge() async throws {
        let mock = MockTransport(always: .text("absent", status: .notFound))
        let journal = Journal()
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [Session(journal: journal)]))
        let lenient = Client.CallOptions(validators: [StatusCodeValidator(acceptable: 200...404)])
        #expect(try await client.value(Endpoint<String>.get("/x"), options: lenient) == "absent")
        #expect(journal.all == ["adapt", "received 404"], "\(journal.all)")

        let strict = Client.CallOptions(validators: [StatusCodeValidator(), ClosureValidator { response, body, _ throws(ClientError) in
            if body.isEmpty { throw ClientError(.validationFailed, detail: "empty") }
        }])
        let empty = MockTransport(always: .status(.ok))
        let other = Journal()
        let checking = try Client(baseURL: "http://api.test", transport: empty, configuration: .init(middleware: [Session(journal: other)]))
        #expect(await checking.outcome(Endpoint<Empty>.get("/y"), options: strict).error?.code == .validationFailed)
        #expect(other.all == ["adapt", "rescue 200 #1", "failed 200 adapted"], "\(other.all)")
    }
}
