import Foundation
@testable import SalvoCore
@testable import SalvoLoad
import SalvoTestSupport
import Testing

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
                $0.duration = .milliseconds(300)
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
}
