import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore
@testable import SalvoLoad

/// TLS peers that reset connections: idle in the pool, mid-upload, after an early answer.
/// Each of these once raised SIGPIPE inside OpenSSL's writes and killed the whole process; the
/// suite restores SIGPIPE's default action first, so a regression ends the test run.
@Suite(.serialized) struct TLSFaultTests {
    init() {
        // The library must not depend on its host ignoring SIGPIPE.
        signal(SIGPIPE, SIG_DFL)
    }

    /// A fresh TLS fault server and a client that trusts it (one loop, one connection), for
    /// `body`, under a watchdog.
    func withServerAndClient(_ body: @escaping @Sendable (TLSFaultServer, HTTPClient) async throws -> Void) async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await TLSFaultServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.maxConnectionsPerHost = 1
        configuration.tls.trustRoots = .file(certificates.path("ca.pem"))
        let client = try HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        try await withWatchdog { try await body(server, client) }
    }

    /// Records read ahead of a pause: a streamed body whose reader falls behind pauses the
    /// connection (past 256 KiB waiting: after the 1,311th record of 200 bytes) while the
    /// response's last record is already inside OpenSSL, read ahead with the one before (the
    /// server sends them in full segments), and nothing is left in the socket for epoll to
    /// report. Resuming must read it, not wait for the socket.
    @Test func recordsReadAheadOfAPauseAreDelivered() async throws {
        try await self.withServerAndClient { server, client in
            for round in 0..<3 {
                let response = try await client.stream(try HTTPRequest(method: .get, url: server.url("/records?n=1312&size=200")),
                                                       options: .init(readTimeout: .seconds(5)))
                // Let the loop fill the stream past its high-water mark and pause.
                try await Task.sleep(for: .milliseconds(300))
                var received = 0
                var intact = true
                for try await chunk in response.body {
                    for (offset, byte) in chunk.enumerated() where byte != UInt8(truncatingIfNeeded: ((received + offset) % 200) * 7) {
                        intact = false
                    }
                    received += chunk.count
                }
                #expect(received == 1312 * 200, "round \(round)")
                #expect(intact)
            }
        }
    }

    /// A request that cannot be sent twice (a POST) goes on an idle connection only if nothing
    /// waits on it; over TLS the waiting records are opened first, so a fresh connection's
    /// session tickets, or a reused one's quiet, do not send it elsewhere — one connection
    /// carries all of these.
    @Test func postsRideQuietTLSConnections() async throws {
        try await self.withServerAndClient { server, client in
            for round in 0..<3 {
                var post = try HTTPRequest(method: .post, url: server.url("/ok"))
                post.headerFields[.connection] = round == 2 ? "close" : nil
                let response = try await client.execute(post)
                #expect(String(decoding: response.body, as: UTF8.self) == "ok")
                let get = try await client.execute(try HTTPRequest(method: .get, url: server.url("/ok")))
                #expect(get.status == .ok)
            }
            #expect(await client.poolStatistics().connectionsOpened == 2, "one, then one after the Connection: close")
        }
    }

    /// A load balancer resets a pooled connection while no request uses it.
    @Test func idlePooledConnectionResetByThePeer() async throws {
        try await self.withServerAndClient { server, client in
            for _ in 0..<3 {
                let first = try await client.execute(try HTTPRequest(method: .get, url: server.url("/idle-reset?ms=50")))
                #expect(first.status == .ok)
                // The reset arrives while the connection sits idle in the pool.
                try await Task.sleep(for: .milliseconds(250))
                let next = try await client.execute(try HTTPRequest(method: .get, url: server.url("/ok")))
                #expect(String(decoding: next.body, as: UTF8.self) == "ok")
            }
        }
    }

    /// A server that answers 413 at once and resets while the body is still going out: the
    /// caller gets the 413, over TLS as over plain TCP.
    @Test func earlyAnswerThenResetDuringUpload() async throws {
        let payload = [UInt8](repeating: 0x61, count: 16 << 20)
        try await self.withServerAndClient { server, client in
            var post = try HTTPRequest(method: .post, url: server.url("/early?code=413"))
            post.headerFields[.contentType] = "application/octet-stream"
            let fixed = try await client.execute(post, body: .bytes(payload))
            #expect(fixed.status.code == 413)
            #expect(String(decoding: fixed.body, as: UTF8.self) == "too large\n")
            let chunks = AsyncStream<[UInt8]> { continuation in
                for _ in 0..<256 { continuation.yield([UInt8](repeating: 0x62, count: 65536)) }
                continuation.finish()
            }
            let streamed = try await client.execute(post, body: .stream(chunks))
            #expect(streamed.status.code == 413)
        }
    }

    /// A reset in the middle of the upload, with no answer: a typed send or receive error.
    @Test func resetDuringUpload() async throws {
        let payload = [UInt8](repeating: 0x61, count: 16 << 20)
        try await self.withServerAndClient { server, client in
            let post = try HTTPRequest(method: .post, url: server.url("/reset-body?after=100000"))
            let code = await errorCode { _ = try await client.execute(post, body: .bytes(payload)) }
            #expect(code == .writeFailed || code == .readFailed, "\(String(describing: code))")
        }
    }

    /// The load generator's connections meet the same resets.
    @Test func loadGeneratorSurvivesResets() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await TLSFaultServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { server.stop() }
        var settings = LoadConfiguration(url: try RequestURL(server.url("/reset-body?after=0")))
        settings.threads = 1
        settings.connections = 4
        settings.duration = .milliseconds(400)
        settings.tls.trustRoots = .file(certificates.path("ca.pem"))
        let configuration = settings
        let statistics = try await withWatchdog { try await LoadGenerator(configuration: configuration).run() }
        #expect(statistics.requests == 0)
        #expect(statistics.errors.read + statistics.errors.write > 0)
    }
}
