import Foundation
@testable import SalvoCore
@testable import SalvoLoad
import SalvoTestSupport
import Testing
import Synchronization

/// `salvo bench --http2`: bounded runs against nginx with HTTP/2 (cleartext with prior
/// knowledge, TLS through ALPN), with several streams per connection, native and through
/// the client's APIs — and against the scripted server when it misbehaves.
@Suite struct LoadHTTP2Tests {
    func configuration(_ url: String, _ adjust: (inout LoadConfiguration) -> Void) throws -> LoadConfiguration {
        var configuration = LoadConfiguration(url: try RequestURL(url))
        configuration.threads = 1
        configuration.connections = 2
        configuration.http2 = true
        configuration.streams = 8
        configuration.requestLimit = 1001
        configuration.duration = .zero
        adjust(&configuration)
        return configuration
    }

    @Test func exactCountOverCleartextAndTLS() async throws {
        let fixture = try await HTTP2ClientTests.shared.get()
        for url in ["http://127.0.0.1:\(fixture.nginx.h2cPort)/small", "https://localhost:\(fixture.nginx.tlsPort)/small"] {
            let configuration = try self.configuration(url) {
                $0.tls.trustRoots = .file(fixture.certificates.path("ca.pem"))
            }
            let statistics = try await LoadGenerator(configuration: configuration).run()
            #expect(statistics.requests == 1001, "\(url)")
            #expect(statistics.statusCounts == [200: 1001], "\(url)")
            #expect(statistics.latency.totalCount == 1001)
            #expect(statistics.connectionsOpened == 2, "\(url): streams multiplexed, no reconnects")
            #expect(statistics.errors == LoadStatistics.Errors(), "\(url)")
        }
    }

    @Test func bodiesAndStatusesAreCounted() async throws {
        let fixture = try await HTTP2ClientTests.shared.get()
        let post = try self.configuration("http://127.0.0.1:\(fixture.nginx.h2cPort)/sink") {
            $0.method = .post
            $0.body = Array(repeating: 0x61, count: 20_000)
        }
        let posted = try await LoadGenerator(configuration: post).run()
        #expect(posted.statusCounts == [200: 1001])
        let missing = try self.configuration("http://127.0.0.1:\(fixture.nginx.h2cPort)/status/404") { $0.requestLimit = 100 }
        let statistics = try await LoadGenerator(configuration: missing).run()
        #expect(statistics.statusCounts == [404: 100])
        #expect(statistics.errors.status == 100)
    }

    @Test(arguments: [ClientAPI.callbacks, .async, .preparedCallbacks, .preparedAsync])
    func throughTheClientAPIs(_ api: ClientAPI) async throws {
        let fixture = try await HTTP2ClientTests.shared.get()
        let configuration = try self.configuration("http://127.0.0.1:\(fixture.nginx.h2cPort)/small") {
            $0.requestLimit = 600
            $0.duration = .seconds(120)
        }
        let statistics = try await ClientLoad(configuration: configuration, api: api).run()
        #expect(statistics.requests == 600 && statistics.statusCounts == [200: 600])
        #expect(statistics.errors == LoadStatistics.Errors())
        // 16 callers, one connection's streams: HTTP/2 needs no more.
        #expect(statistics.connectionsOpened == 1)
    }

    @Test func aServerThatResetsOrGoesAwayIsCountedAndTheRunEnds() async throws {
        let server = try await HTTP2HostileServerTests.shared.get()
        for scenario in ["reset-mid-body", "goaway-storm", "settings-flood"] {
            let configuration = try self.configuration(server.url(scenario)) {
                $0.requestLimit = nil
                // Long enough for a busy shared server to reset or go away at least once.
                $0.duration = .milliseconds(1500)
                $0.connections = 1
                $0.streams = 2
            }
            let statistics = try await LoadGenerator(configuration: configuration).run()
            #expect(statistics.requests == 0, "\(scenario)")
            if scenario == "goaway-storm" {
                // Refused unprocessed: not errors, the requests go again — on new connections.
                #expect(statistics.connectionsOpened > 1, "\(scenario)")
            } else {
                #expect(statistics.errors.total > 0, "\(scenario)")
            }
        }
    }

    @Test func settingsThatCannotRunAreRefused() throws {
        var configuration = try self.configuration("http://127.0.0.1:1/") { $0.pipeline = 2 }
        #expect(throws: TransportError.self) { try configuration.validate() }
        configuration.pipeline = 1
        configuration.http2 = false
        #expect(throws: TransportError.self) { try configuration.validate() }
        configuration.http2 = true
        configuration.streams = 0
        #expect(throws: TransportError.self) { try configuration.validate() }
    }

    /// A workload over HTTP/2, cleartext and TLS: each user one call at a time on its own
    /// connection, paths built per call, a body posted, fields and bodies kept for the checks
    /// and the hook, a 404 counted — every count exact.
    @Test func workloadsOverHTTP2() async throws {
        struct Visitor { var calls = 0; var lastType: String? }
        let fixture = try await HTTP2ClientTests.shared.get()
        let workload = Workload<Void, Visitor>(user: { _ in Visitor() }, scenarios: [
            Scenario("read", weight: 3, checks: [.status(200), .field(.contentType, equals: "text/plain"),
                                                 .body(contains: "hello")]) { visitor, request in
                visitor.calls += 1
                request.path = "/small?call=\(visitor.calls)"
            } response: { visitor, response in
                visitor.lastType = response.value(of: .contentType)
                guard response.bodyText == "hello, world\n", response.value(of: .contentLength) == "13" else {
                    throw ScriptFailure("the hook saw \(response.bodyCount) bytes")
                }
            },
            Scenario("post", method: .post, checks: [.status(200), .body(contains: "ok")]) { _, request in
                request.path = "/sink"
                request.body = Array(repeating: 0x62, count: 40_000)
            },
            Scenario("missing", checks: [.status(404)]) { _, request in request.path = "/status/404" },
            Scenario("head", method: .head, checks: [.status(200), Check("no body") { $0.bodyCount == 0 }]) { _, request in
                request.path = "/small"
            },
        ])
        for url in ["http://127.0.0.1:\(fixture.nginx.h2cPort)/", "https://localhost:\(fixture.nginx.tlsPort)/"] {
            let statistics = try await workload.run(try self.configuration(url) {
                $0.tls.trustRoots = .file(fixture.certificates.path("ca.pem"))
                $0.streams = 1
                $0.requestLimit = 300
            })
            let script = try #require(statistics.script, "\(url)")
            #expect(statistics.requests == 300 && statistics.latency.totalCount == 300, "\(url)")
            #expect(script.scriptErrors == 0, "\(url): \(script.firstScriptError ?? "")")
            #expect(script.allPassed && script.checks.values.map { $0.passed + $0.failed }.reduce(0, +) > 300, "\(url): \(script.checks)")
            #expect(script.scenarios.values.reduce(0, +) == 300 && script.scenarios.count == 4, "\(url): \(script.scenarios)")
            #expect(statistics.statusCounts[200, default: 0] + statistics.statusCounts[404, default: 0] == 300, "\(url)")
            // The 404s are the run's status errors, and the only errors.
            #expect(statistics.connectionsOpened == 2 && statistics.errors.total == 0, "\(url): \(statistics.errors)")
            #expect(statistics.errors.status == statistics.statusCounts[404, default: 0], "\(url)")
        }
        // The command line's --http2, as a workload's user runs it.
        let h2c = "http://127.0.0.1:\(fixture.nginx.h2cPort)/"
        #expect(await workload.command(url: h2c, arguments: ["-n", "20", "-c", "1", "-t", "1", "--http2", "--strict"]) == 0)
        // One call at a time per user: several streams are refused.
        await #expect(throws: WorkloadError.self) {
            _ = try await workload.run(try self.configuration("http://127.0.0.1:\(fixture.nginx.h2cPort)/") { $0.streams = 2 })
        }
    }

    /// A workload against a server that resets its streams or keeps going away: calls that
    /// get no answer fail their checks and are counted as unanswered; the run ends on time.
    @Test func workloadsAgainstAServerThatResetsOrGoesAway() async throws {
        let server = try await HTTP2HostileServerTests.shared.get()
        for scenario in ["reset-mid-body", "goaway-storm"] {
            let workload = Workload(scenarios: [Scenario("call", checks: [.status(200)]) { _, _ in }])
            let configuration = try self.configuration(server.url(scenario)) {
                $0.requestLimit = nil
                // Long enough for a busy shared server to reset or go away at least once.
                $0.duration = .milliseconds(1500)
                $0.connections = 1
                $0.streams = 1
            }
            let statistics = try await workload.run(configuration)
            let script = try #require(statistics.script)
            #expect(statistics.requests == 0 && script.scriptErrors == 0, "\(scenario)")
            #expect(script.checks["status is 200"]?.passed == 0, "\(scenario)")
            if scenario == "reset-mid-body" {
                #expect((script.unanswered["call"] ?? 0) > 0 && (script.checks["status is 200"]?.failed ?? 0) > 0, "\(scenario): \(script)")
            } else {
                #expect(statistics.connectionsOpened > 1, "\(scenario)")
            }
        }
    }

    /// A call the server refuses unprocessed (REFUSED_STREAM) goes again as it was built: the
    /// user's code runs once per call, and every call is answered and counted once.
    @Test func aRefusedCallGoesAgain() async throws {
        let server = try await HTTP2HostileServerTests.shared.get()
        final class Built: Sendable { let count = Mutex(0) }
        let built = Built()
        let workload = Workload(scenarios: [Scenario("call", checks: [.status(200)]) { _, _ in built.count.withLock { $0 += 1 } }])
        let statistics = try await workload.run(try self.configuration(server.url("refused-once")) {
            $0.requestLimit = 10
            $0.connections = 1
            $0.streams = 1
        })
        let script = try #require(statistics.script)
        #expect(statistics.requests == 10 && script.checks["status is 200"]?.passed == 10, "\(script)")
        #expect(script.unanswered.isEmpty && script.scriptErrors == 0)
        #expect(built.count.withLock { $0 } == 10, "each call built once, the refused one sent again")
    }
}
