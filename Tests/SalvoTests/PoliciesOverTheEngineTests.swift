import Foundation
import Logging
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// Coalescing, interceptors, hooks and logging over the engine, against the test API.
@Suite struct PoliciesOverTheEngineTests {
    struct Stats: Decodable { var now: Int; var most: Int; var total: Int }
    struct Attempts: Decodable { var attempts: Int }

    @Test func identicalCallsShareOneRequestOnTheWire() async throws {
        let client = try await SharedAPI.client(.init(middleware: [RequestCoalescing()]))
        let key = UUID().uuidString
        let shared = Endpoint<Empty>.get("/concurrent", query: [QueryItem("key", key), QueryItem("ms", "300")])
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<10 { group.addTask { (try? await client.send(shared))?.status == .ok } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0 }, "\(outcomes)")
        let stats = try await client.value(Endpoint<Stats>.get("/concurrent", query: [QueryItem("key", key), QueryItem("stats", "1")]))
        // Callers that came after the shared request ended would go on their own: at most a few.
        #expect(stats.total < 10 && stats.most == 1, "\(stats)")
    }

    /// A 503 rescued by an interceptor, each attempt logged by the middleware after it, and
    /// hooks around the whole call.
    @Test func interceptorHooksAndLogging() async throws {
        struct RescueOnce: Interceptor {
            func rescue(_ error: ClientError, for request: ClientRequest, attempt: Int) async -> Bool {
                error.status == .serviceUnavailable && attempt == 1
            }
        }
        final class Lines: Sendable {
            let list = Mutex<[String]>([])
        }
        struct Handler: LogHandler {
            let lines: Lines
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { self.metadata[key] }
                set { self.metadata[key] = newValue }
            }
            func log(event: LogEvent) { self.lines.list.withLock { $0.append("\(event.message)") } }
        }
        let lines = Lines()
        let heard = Mutex<[String]>([])
        let hooks = CallHooks(beforeEach: { request in
            request.head.headerFields[HTTPField.Name("X-Trace")!] = "t-9"
        }, afterEach: { _, result in
            heard.withLock { $0.append((try? result.get()).map { "\($0.status.code)" } ?? "failed") }
        })
        let client = try await SharedAPI.client(.init(coders: .json(keys: .snakeCase), middleware: [
            hooks, RescueOnce(), LoggingMiddleware(logger: Logger(label: "e2e") { _ in Handler(lines: lines) }),
        ]))
        let key = UUID().uuidString
        let answer = try await client.value(Endpoint<Attempts>.get("/flaky", query: [QueryItem("key", key), QueryItem("fail", "1")]))
        #expect(answer.attempts == 2)
        let logged = lines.list.withLock { $0 }
        #expect(logged.count == 2 && logged[0].contains("→ 503") && logged[1].contains("→ 200"), "\(logged)")
        #expect(logged.allSatisfy { !$0.contains(key) }, "query values stay out of the log")
        #expect(heard.withLock { $0 } == ["200"], "the hooks hear the call, not its attempts")
        let echo = try await client.value(Endpoint<Echo>.get("/echo"))
        #expect(echo.header("X-Trace") == "t-9")
    }
}
