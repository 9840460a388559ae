import Foundation
import HTTPTypes
import InMemoryTracing
import Logging
import MetricsTestKit
import SalvoCore
import SalvoObservability
import SalvoTestSupport
import Synchronization
import Testing
import Tracing

/// The engine watched through swift-metrics, swift-distributed-tracing and swift-log: handles
/// per host, a client span per request with its context sent to the server, connection
/// events in the log — and none of it without an observer.
@Suite struct ObservabilityTests {
    static func client(_ observer: Observability) throws -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.observer = observer
        return try HTTPClient(configuration: configuration)
    }

    @Test func metricsPerHostAndStatusClass() async throws {
        let server = try await APIServer.start()
        let metrics = TestMetrics()
        let client = try Self.client(Observability(metrics: metrics))
        for path in ["/users/1", "/users/2", "/status/404"] {
            _ = try await client.execute(HTTPRequest(method: .get, url: server.baseURL + path))
        }
        client.shutdown()
        let dimensions = [("server.address", "127.0.0.1"), ("server.port", String(server.port)), ("url.scheme", "http")]
        #expect(try metrics.expectCounter(ObservabilityMetrics.connectionsOpened, dimensions).totalValue == 1)
        #expect(try metrics.expectCounter(ObservabilityMetrics.connectionsReused, dimensions).totalValue == 2)
        #expect(try metrics.expectCounter(ObservabilityMetrics.connectionsClosed, dimensions + [("closed_by", "client")]).totalValue == 1)
        #expect(try metrics.expectMeter(ObservabilityMetrics.connectionsOpen, dimensions).lastValue == 0)
        // The connection was idle between the requests, and nobody waited for one.
        let idle = try metrics.expectMeter(ObservabilityMetrics.connectionsIdle, dimensions)
        #expect(idle.values.contains(1))
        #expect(idle.lastValue == 0, "nothing idle once the client is shut down")
        #expect(try metrics.expectMeter(ObservabilityMetrics.requestsQueued, dimensions).values.allSatisfy { $0 >= 0 })
        let ok = try metrics.expectTimer(ObservabilityMetrics.requestDuration, dimensions + [("http.response.status_class", "2xx")])
        #expect(ok.values.count == 2)
        #expect(ok.values.allSatisfy { $0 > 0 && $0 < 5_000_000_000 })
        let missing = try metrics.expectTimer(ObservabilityMetrics.requestDuration, dimensions + [("http.response.status_class", "4xx")])
        #expect(missing.values.count == 1)
    }

    @Test func aClientSpanPerRequestAndItsContextSent() async throws {
        let server = try await APIServer.start()
        let tracer = InMemoryTracer()
        let client = try Self.client(Observability(tracer: tracer))
        defer { client.shutdown() }
        let echoed = try await client.execute(HTTPRequest(method: .post, url: server.baseURL + "/echo/items?x=1"),
                                              body: .string("hi"))
        let refused = await #expect(throws: TransportError.self) {
            _ = try await client.execute(HTTPRequest(method: .get, url: "http://127.0.0.1:\(try freePort())/"))
        }
        let spans = tracer.finishedSpans
        #expect(spans.count == 2)
        let span = try #require(spans.first { $0.attributes["http.request.method"]?.toSpanAttribute() == "POST" })
        #expect(span.kind == .client)
        #expect(span.operationName == "POST")
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(span.attributes["server.address"]?.toSpanAttribute() == "127.0.0.1")
        #expect(span.attributes["server.port"]?.toSpanAttribute() == .int64(Int64(server.port)))
        #expect(span.attributes["url.full"]?.toSpanAttribute() == .string("\(server.baseURL)/echo/items"), "no query: tokens may sit there")
        // The server got the span's context, as the tracer writes it.
        let headers = try #require(try JSONSerialization.jsonObject(with: Data(echoed.body)) as? [String: Any])["headers"] as? [[String]]
        let sent = headers?.first { $0.first?.lowercased() == InMemoryTracer.traceIDKey }?.last
        #expect(sent == span.context.inMemorySpanContext?.traceID)

        let failed = try #require(spans.first { $0.attributes["http.request.method"]?.toSpanAttribute() == "GET" })
        #expect(failed.status?.code == .error)
        #expect(failed.errors.count == 1)
        #expect(refused?.code == .connectionRefused)
    }

    @Test func connectionEventsAtDebugAndNothingAtInfo() async throws {
        let server = try await APIServer.start()
        let lines = Mutex<[(Logger.Level, String)]>([])
        struct Capture: LogHandler {
            let lines: @Sendable (Logger.Level, String) -> Void
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { self.metadata[key] }
                set { self.metadata[key] = newValue }
            }
            func log(event: LogEvent) { self.lines(event.level, "\(event.message)") }
        }
        let logger = Logger(label: "engine") { _ in Capture { level, message in lines.withLock { $0.append((level, message)) } } }
        let client = try Self.client(Observability(logger: logger))
        for _ in 0..<2 { _ = try await client.execute(HTTPRequest(method: .get, url: server.baseURL + "/users/1")) }
        client.shutdown()
        let logged = lines.withLock { $0 }
        #expect(logged.contains { $0 == (.debug, "connection opened") })
        #expect(logged.contains { $0 == (.debug, "connection closed") })
        #expect(logged.contains { $0 == (.debug, "connection reused") })
        #expect(!logged.contains { $0.0 >= .info }, "nothing at info or above: \(logged)")
    }
}
