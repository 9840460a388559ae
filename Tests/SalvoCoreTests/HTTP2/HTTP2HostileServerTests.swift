import Foundation
import HTTPTypes
@testable import SalvoCore
import SalvoTestSupport
import Testing

/// The engine against a scripted HTTP/2 server that misbehaves (Tests/Fixtures/h2_hostile_server.py):
/// floods, HPACK bombs, endless CONTINUATION, a window that never opens, invalid heads, GOAWAY
/// storms, resets. Each ends in a typed error within bounds — or, where the server said it
/// never processed the request, in the request sent again — and never in a crash or a hang.
@Suite struct HTTP2HostileServerTests {
    final class Server: Sendable {
        let ports: [String: Int]
        private let child: ChildProcess

        static let scenarios: Set<String> = [
            "ok", "settings-flood", "ping-flood", "empty-data-flood", "hpack-bomb", "endless-continuation",
            "window-zero", "pseudo-in-response", "uppercase-name", "goaway-storm", "goaway-once", "refused-once",
            "reset-mid-body", "rst-flood", "silent", "ping-silent", "redirect-then-goaway",
        ]

        init() throws {
            let script = try TestFixtures.file("h2_hostile_server.py")
            let python = try TestFixtures.executable("python3", candidates: ["/usr/bin/python3", "/usr/local/bin/python3"])
            self.child = try ChildProcess(name: "h2_hostile_server.py", executable: python, arguments: [script.path])
            do {
                let announced = try self.child.readAnnouncements(Self.scenarios, timeout: 10)
                self.ports = announced.compactMapValues { Int($0) }
            } catch {
                self.child.stop(grace: 1)
                throw error
            }
        }

        func url(_ scenario: String, _ path: String = "/") -> String {
            "http://127.0.0.1:\(self.ports[scenario] ?? 0)\(path)"
        }

        deinit { self.child.stop(grace: 1) }
    }

    static let shared = SharedFixture { try Server() }

    /// A client speaking HTTP/2 with prior knowledge, with short bounds: a hang would show as a
    /// test that takes seconds rather than a minute.
    func client(_ adjust: (inout HTTPClient.Configuration) -> Void = { _ in }) throws -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.httpVersion = .http2PriorKnowledge
        configuration.readTimeout = .seconds(2)
        configuration.headTimeout = .seconds(5)
        adjust(&configuration)
        return try HTTPClient(configuration: configuration)
    }

    /// The call's error, after at most `limit`.
    func failure(_ client: HTTPClient, _ url: String, method: HTTPRequest.Method = .get, body: HTTPBody? = nil,
                 within limit: Duration = .seconds(10), sourceLocation: SourceLocation = #_sourceLocation) async throws -> TransportError? {
        let started = ContinuousClock.now
        defer { #expect(ContinuousClock.now - started < limit, "took too long", sourceLocation: sourceLocation) }
        do {
            let response = try await client.execute(try HTTPRequest(method: method, url: url), body: body)
            Issue.record("expected a failure, got \(response.status)", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    @Test func theScriptedServerAnswersWhenItBehaves() async throws {
        let server = try await Self.shared.get()
        let client = try self.client()
        defer { client.shutdown() }
        let response = try await client.execute(try HTTPRequest(method: .get, url: server.url("ok")))
        #expect(response.version == .http2)
        #expect(String(decoding: response.body, as: UTF8.self) == "ok")
    }

    @Test(arguments: ["settings-flood", "ping-flood", "empty-data-flood", "endless-continuation"])
    func floodsEndTheConnectionWithAProtocolError(scenario: String) async throws {
        let server = try await Self.shared.get()
        let client = try self.client()
        defer { client.shutdown() }
        let error = try await self.failure(client, server.url(scenario))
        #expect(error?.code == .http2ProtocolError, "\(scenario): \(String(describing: error))")
        #expect(error?.isTransient == false)
    }

    @Test func anHPACKBombResetsOnlyItsStream() async throws {
        let server = try await Self.shared.get()
        let client = try self.client()
        defer { client.shutdown() }
        let error = try await self.failure(client, server.url("hpack-bomb"))
        #expect(error?.code == .http2StreamReset, "\(String(describing: error))")
        // The connection goes on: the next request is answered on it.
        let next = try await client.execute(try HTTPRequest(method: .get, url: server.url("hpack-bomb")))
        #expect(next.status == .ok)
        #expect(await client.poolStatistics().connectionsOpened == 1)
    }

    @Test(arguments: ["pseudo-in-response", "uppercase-name"])
    func anInvalidHeadFailsItsStream(scenario: String) async throws {
        let server = try await Self.shared.get()
        let client = try self.client()
        defer { client.shutdown() }
        let error = try await self.failure(client, server.url(scenario))
        #expect(error?.code == .http2StreamReset, "\(scenario): \(String(describing: error))")
        #expect(error?.detail?.contains("PROTOCOL_ERROR") == true)
    }

    @Test func aWindowThatNeverOpensEndsInTheReadTimeout() async throws {
        let server = try await Self.shared.get()
        let client = try self.client { $0.readTimeout = .milliseconds(500) }
        defer { client.shutdown() }
        let inMemory = try await self.failure(client, server.url("window-zero"), method: .post, body: .bytes([UInt8](repeating: 1, count: 1000)))
        #expect(inMemory?.code == .readTimeout)
        let chunks = AsyncStream<[UInt8]> { continuation in
            continuation.yield([UInt8](repeating: 2, count: 1000))
            continuation.finish()
        }
        let streamed = try await self.failure(client, server.url("window-zero"), method: .post, body: .stream(chunks))
        #expect(streamed?.code == .readTimeout)
    }

    @Test func aGOAWAYStormFailsAfterABoundedNumberOfConnections() async throws {
        let server = try await Self.shared.get()
        let client = try self.client()
        defer { client.shutdown() }
        let error = try await self.failure(client, server.url("goaway-storm"))
        #expect(error?.code == .remoteClosed, "\(String(describing: error))")
        // Never processed, by the server's word: the call says so.
        #expect(error?.mayHaveBeenProcessed == false)
        let opened = await client.poolStatistics().connectionsOpened
        #expect(opened >= 2 && opened <= 4, "\(opened) connections")
    }

    @Test func aRequestTheServerNeverProcessedGoesAgain() async throws {
        let server = try await Self.shared.get()
        for scenario in ["goaway-once", "refused-once"] {
            let client = try self.client()
            defer { client.shutdown() }
            var request = try HTTPRequest(method: .post, url: server.url(scenario))
            request.headerFields[.contentType] = "text/plain"
            // Even a POST: the server said it never processed it.
            let response = try await client.execute(request, body: .bytes(Array("once".utf8)))
            #expect(response.status == .ok, "\(scenario)")
            // After a GOAWAY on a new connection; after a refused stream on whichever has room
            // (the same one: it is healthy).
            #expect(response.metrics.connectionsOpened == (scenario == "goaway-once" ? 2 : 1), "\(scenario)")
        }
    }

    @Test func aStreamResetMidBodyFailsWithWhatCame() async throws {
        let server = try await Self.shared.get()
        let client = try self.client()
        defer { client.shutdown() }
        let error = try await self.failure(client, server.url("reset-mid-body"))
        #expect(error?.code == .http2StreamReset)
        #expect(error?.phase == .readBody)
        #expect(error?.detail?.contains("INTERNAL_ERROR") == true)
        #expect(error?.mayHaveBeenProcessed == true)
    }

    @Test func aFloodOfResetsIsHeardOnce() async throws {
        let server = try await Self.shared.get()
        let client = try self.client()
        defer { client.shutdown() }
        let error = try await self.failure(client, server.url("rst-flood"))
        #expect(error?.code == .http2StreamReset, "\(String(describing: error))")
        #expect(error?.detail?.contains("CANCEL") == true)
    }

    @Test func aSilentServerMeetsTheHeadTimeoutAndCancellation() async throws {
        let server = try await Self.shared.get()
        let client = try self.client { $0.headTimeout = .milliseconds(500); $0.readTimeout = nil }
        defer { client.shutdown() }
        let error = try await self.failure(client, server.url("silent"))
        #expect(error?.code == .headTimeout)
        // Cancelled by its caller: the stream is reset, the call ends at once.
        let patient = try self.client { $0.headTimeout = nil; $0.readTimeout = nil }
        defer { patient.shutdown() }
        let task = Task { try await patient.execute(try HTTPRequest(method: .get, url: server.url("silent"))) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        let result = await task.result
        guard case .failure(let cancelled as TransportError) = result else {
            Issue.record("expected a cancellation, got \(result)")
            return
        }
        #expect(cancelled.code == .cancelled)
    }

    /// A response and a GOAWAY in one read: the redirect it asks for goes on a new connection,
    /// not onto the one that is going away.
    @Test func aRedirectBesideAGOAWAYTakesANewConnection() async throws {
        let server = try await Self.shared.get()
        let client = try self.client()
        defer { client.shutdown() }
        let response = try await client.execute(try HTTPRequest(method: .get, url: server.url("redirect-then-goaway")))
        #expect(response.status == .ok)
        #expect(response.metrics.redirects == 1)
        #expect(await client.poolStatistics().connectionsOpened == 2)
    }

    /// A server that answers no PING is found dead while idle: its connection is closed, and
    /// the next request opens another. One that answers keeps its connection — until the idle
    /// timeout, which PINGs do not defer.
    @Test func pingsFindADeadPeerAndDoNotDeferTheIdleTimeout() async throws {
        let server = try await Self.shared.get()
        func client(idle: Duration) throws -> HTTPClient {
            try self.client {
                // A second for each answer: the shared server may be busy with other tests' floods.
                $0.http2.pingInterval = .milliseconds(100)
                $0.http2.pingTimeout = .seconds(1)
                $0.idleTimeout = idle
            }
        }
        let silent = try client(idle: .seconds(30))
        defer { silent.shutdown() }
        _ = try await silent.execute(try HTTPRequest(method: .get, url: server.url("ping-silent")))
        try await self.waitUntil { await silent.poolStatistics().hosts.values.first?.http2Connections == 0 }
        #expect(await silent.poolStatistics().hosts.values.first?.closedByUs == 1)

        let answering = try client(idle: .seconds(30))
        defer { answering.shutdown() }
        _ = try await answering.execute(try HTTPRequest(method: .get, url: server.url("ok")))
        // Past two PING timeouts: an unanswered PING would have closed it by now.
        try await Task.sleep(for: .milliseconds(2500))
        #expect(await answering.poolStatistics().hosts.values.first?.http2Connections == 1, "answered PINGs keep it")

        let idle = try client(idle: .milliseconds(500))
        defer { idle.shutdown() }
        _ = try await idle.execute(try HTTPRequest(method: .get, url: server.url("ok")))
        try await self.waitUntil { await idle.poolStatistics().hosts.values.first?.http2Connections == 0 }
    }

    /// Polls `condition` for up to 10 s (a limit for hang detection, far above the need).
    func waitUntil(sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async -> Bool) async throws {
        let end = ContinuousClock.now + .seconds(10)
        while !(await condition()) {
            guard ContinuousClock.now < end else {
                Issue.record("condition not met in 10 s", sourceLocation: sourceLocation)
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
