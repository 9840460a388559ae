import Foundation
import HTTPTypes
@testable import SalvoCore
import SalvoTestSupport
import Synchronization
import Testing

/// The engine over HTTP/2 against nginx with HTTP/2 on: ALPN `h2` over TLS and prior knowledge
/// over cleartext, behind the same calls as HTTP/1.1 — collected, streamed, uploads, redirects,
/// decoding — and many requests multiplexed on one connection.
@Suite struct HTTP2ClientTests {
    struct Fixture: Sendable {
        let certificates: TestCertificates
        let nginx: NginxServer
    }

    /// nghttpd (nghttp2's own server) over TLS, answering each request with its body. One per
    /// test, stopped by it: a server left running would hold the test run's output open.
    final class EchoServer: Sendable {
        let port: Int
        private let child: ChildProcess

        init(certificates: TestCertificates) throws {
            let port = try freePort()
            let nghttpd = try TestFixtures.executable("nghttpd", candidates: ["/usr/sbin/nghttpd", "/usr/bin/nghttpd"])
            self.child = try ChildProcess(name: "nghttpd", executable: nghttpd, arguments: [
                "--echo-upload", "-a", "127.0.0.1", "-d", FileManager.default.temporaryDirectory.path, String(port),
                certificates.path("leaf.key"), certificates.path("leaf.pem")])
            self.port = port
            let deadline = Date().addingTimeInterval(10)
            while (try? HTTP2SessionPeerTests.PeerSocket(port: port)) == nil {
                guard Date() < deadline else { throw TestServerError("nghttpd did not listen on \(port)") }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }

        static func start(certificates: TestCertificates) async throws -> EchoServer {
            try await offThePool { try EchoServer(certificates: certificates) }
        }

        func stop() { self.child.stop(grace: 1) }

        deinit { self.stop() }
    }

    static let shared = SharedFixture {
        let certificates = try TestCertificates()
        let nginx = try NginxServer.launch(tls: (certificates.path("leaf.pem"), certificates.path("leaf.key")), http2: true)
        return Fixture(certificates: certificates, nginx: nginx)
    }

    func client(_ fixture: Fixture, threads: Int = 1, _ adjust: (inout HTTPClient.Configuration) -> Void = { _ in }) throws -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.threads = threads
        configuration.tls.trustRoots = .file(fixture.certificates.path("ca.pem"))
        adjust(&configuration)
        return try HTTPClient(configuration: configuration)
    }

    func tls(_ fixture: Fixture, _ path: String) -> String { "https://localhost:\(fixture.nginx.tlsPort)\(path)" }
    func h2c(_ fixture: Fixture, _ path: String) -> String { "http://127.0.0.1:\(fixture.nginx.h2cPort)\(path)" }

    @Test func alpnChoosesHTTP2OverTLS() async throws {
        let fixture = try await Self.shared.get()
        let client = try self.client(fixture)
        defer { client.shutdown() }
        let response = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/small")))
        #expect(response.status == .ok)
        #expect(response.version == .http2)
        #expect(String(decoding: response.body, as: UTF8.self) == "hello, world\n")
        let big = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/1m")))
        #expect(big.body == (try fixture.nginx.contents(of: "1m")))
        #expect(big.metrics.reusedConnection)
        let statistics = await client.poolStatistics()
        #expect(statistics.connectionsOpened == 1)
    }

    @Test func http1OnlyKeepsHTTP11WithTheSameServer() async throws {
        let fixture = try await Self.shared.get()
        let client = try self.client(fixture) { $0.httpVersion = .http1Only }
        defer { client.shutdown() }
        let response = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/small")))
        #expect(response.version == .http1_1)
        // Per request, the other way round: a connection of its own.
        var options = HTTPClient.RequestOptions()
        options.httpVersion = .automatic
        let h2 = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/small")), options: options)
        #expect(h2.version == .http2)
        #expect(await client.poolStatistics().connectionsOpened == 2)
    }

    @Test func priorKnowledgeOverCleartext() async throws {
        let fixture = try await Self.shared.get()
        let client = try self.client(fixture) { $0.httpVersion = .http2PriorKnowledge }
        defer { client.shutdown() }
        let response = try await client.execute(try HTTPRequest(method: .get, url: self.h2c(fixture, "/1k")))
        #expect(response.version == .http2)
        #expect(response.body == (try fixture.nginx.contents(of: "1k")))
        // Without prior knowledge, cleartext stays HTTP/1.1 (no Upgrade dance): nginx's h2c
        // port answers an HTTP/1.1 request with an error or a close, never a success.
        let plain = try self.client(fixture)
        defer { plain.shutdown() }
        let refused = try? await plain.execute(try HTTPRequest(method: .get, url: self.h2c(fixture, "/1k")))
        #expect(refused?.status != .ok)
    }

    @Test func manyRequestsShareOneConnection() async throws {
        let fixture = try await Self.shared.get()
        let client = try self.client(fixture, threads: 2) { $0.maxConnectionsPerHost = 8 }
        defer { client.shutdown() }
        let expected = try fixture.nginx.contents(of: "64k")
        let concurrent = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<64 {
                group.addTask {
                    let path = index % 2 == 0 ? "/64k" : "/small"
                    let response = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, path)))
                    #expect(response.version == .http2)
                    if index % 2 == 0 { #expect(response.body == expected) }
                    // Client streams are odd (RFC 9113 §5.1.1).
                    #expect((response.metrics.streamID ?? 0) % 2 == 1)
                    return response.metrics.concurrentRequests
                }
            }
            return try await group.reduce(0) { max($0, $1) }
        }
        #expect(concurrent > 0, "some requests shared the connection with others in flight")
        let statistics = await client.poolStatistics()
        // One connection for the burst: the first to open showed the host speaks HTTP/2, and
        // every request, from either loop, went to its streams.
        #expect(statistics.connectionsOpened == 1)
        let host = statistics.hosts.values.first
        #expect(host?.multiplexed ?? 0 > 0)
        #expect(host?.http2Connections == 1)
    }

    @Test func connectionPerLoopKeepsEachLoopsRequestsOnItsOwn() async throws {
        let fixture = try await Self.shared.get()
        let group = try EventLoopGroup(numberOfThreads: 2)
        defer { group.shutdown() }
        var configuration = HTTPClient.Configuration()
        configuration.tls.trustRoots = .file(fixture.certificates.path("ca.pem"))
        configuration.http2.connectionPerLoop = true
        let client = try HTTPClient(configuration: configuration, eventLoopGroup: group)
        defer { client.shutdown() }
        // The local port of the connection each request went out on, by the loop it was made on.
        final class Ports: Sendable { let byLoop = Mutex<[Int: Set<String>]>([:]) }
        let ports = Ports()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for index in 0..<64 {
                let loop = index % 2
                tasks.addTask(executorPreference: group.loops[loop]) {
                    var options = HTTPClient.RequestOptions()
                    options.connectionObserver = { report in
                        ports.byLoop.withLock { _ = $0[loop, default: []].insert(report.local.map { "\($0)" } ?? "?") }
                    }
                    let response = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/small")),
                                                            options: options)
                    #expect(response.version == .http2)
                }
            }
            try await tasks.waitForAll()
        }
        let seen = ports.byLoop.withLock { $0 }
        // Each loop opened one connection and kept all of its requests on it.
        #expect(seen[0]?.count == 1)
        #expect(seen[1]?.count == 1)
        #expect(seen[0] != seen[1])
        let statistics = await client.poolStatistics()
        #expect(statistics.connectionsOpened == 2)
        #expect(statistics.hosts.values.first?.http2Connections == 2)
    }

    @Test func preparedCallsMultiplexToo() async throws {
        let fixture = try await Self.shared.get()
        let client = try self.client(fixture)
        defer { client.shutdown() }
        let expected = try fixture.nginx.contents(of: "64k")
        for url in [self.tls(fixture, "/{file}"), self.h2c(fixture, "/{file}")] {
            var template = RequestTemplate(.get, url)
            if url.hasPrefix("http:") { template.options.httpVersion = .http2PriorKnowledge }
            let call = try client.prepare(template)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<32 {
                    group.addTask {
                        let (version, status, matches) = try await call.send([index % 2 == 0 ? "64k" : "small"]) { response in
                            (response.version, response.status, index % 2 == 1 || response.withBody { $0.elementsEqual(expected) })
                        }
                        #expect(version == .http2)
                        #expect(status == .ok)
                        #expect(matches)
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(await client.poolStatistics().connectionsOpened == 2, "one connection for each listener")
    }

    @Test func uploadsInMemoryAndStreamed() async throws {
        let fixture = try await Self.shared.get()
        let client = try self.client(fixture)
        defer { client.shutdown() }
        var post = try HTTPRequest(method: .post, url: self.tls(fixture, "/sink"))
        post.headerFields[.contentType] = "application/octet-stream"
        let inMemory = try await client.execute(post, body: .bytes([UInt8](repeating: 7, count: 300_000)))
        #expect(inMemory.status == .ok)
        #expect(inMemory.version == .http2)
        // Echoed back by nghttpd: every byte went out, in order, through the stream's window.
        let payload = (0..<800_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let chunks = AsyncStream<[UInt8]> { continuation in
            for start in stride(from: 0, to: payload.count, by: 40_000) { continuation.yield(Array(payload[start..<(start + 40_000)])) }
            continuation.finish()
        }
        let server = try await EchoServer.start(certificates: fixture.certificates)
        defer { server.stop() }
        var echo = try HTTPRequest(method: .post, url: "https://localhost:\(server.port)/echo")
        echo.headerFields[.contentType] = "application/octet-stream"
        let streamed = try await client.execute(echo, body: .stream(chunks))
        #expect(streamed.status == .ok)
        #expect(streamed.version == .http2)
        #expect(streamed.body == payload)
        #expect(streamed.metrics.requestBytesSent > 800_000)
        let small = try await client.execute(echo, body: .bytes(Array("ping".utf8)))
        #expect(small.body == Array("ping".utf8))
        // A producer that gave all it announced and then never returns: the stream ends with
        // its last byte, and the answer comes (the producer is cancelled when the call ends).
        let stuck = HTTPBody.producer(length: 5) { writer in
            try await writer.write(Array("hello".utf8))
            try await Task.sleep(for: .seconds(600))
        }
        let answered = try await client.execute(echo, body: stuck, options: .init(timeout: .seconds(20)))
        #expect(answered.body == Array("hello".utf8))
    }

    @Test func streamedResponseWithASlowReader() async throws {
        let fixture = try await Self.shared.get()
        let client = try self.client(fixture)
        defer { client.shutdown() }
        let streamed = try await client.stream(try HTTPRequest(method: .get, url: self.tls(fixture, "/1m")))
        #expect(streamed.version == .http2)
        var received: [UInt8] = []
        for try await chunk in streamed.body {
            received += chunk
            if received.count % 3 == 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(received == (try fixture.nginx.contents(of: "1m")))
    }

    @Test func redirectsHeadAndDecodingBehaveAsOverHTTP11() async throws {
        let fixture = try await Self.shared.get()
        let client = try self.client(fixture)
        defer { client.shutdown() }
        let redirected = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/redirect")))
        #expect(redirected.status == .ok)
        #expect(String(decoding: redirected.body, as: UTF8.self) == "hello, world\n")
        #expect(redirected.metrics.redirects == 1)
        let head = try await client.execute(try HTTPRequest(method: .head, url: self.tls(fixture, "/64k")))
        #expect(head.status == .ok)
        #expect(head.body.isEmpty)
        let missing = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/status/404")))
        #expect(missing.status == .notFound)
        let text = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/text.txt")))
        #expect(text.decodedContentEncoding == "gzip")
        #expect(text.body == (try fixture.nginx.contents(of: "text.txt")))
    }

    @Test func aCancelledStreamLeavesTheConnectionToTheOthers() async throws {
        let fixture = try await Self.shared.get()
        let client = try self.client(fixture)
        defer { client.shutdown() }
        let streamed = try await client.stream(try HTTPRequest(method: .get, url: self.tls(fixture, "/1m")))
        var iterator = streamed.body.makeAsyncIterator()
        _ = try await iterator.next()
        // Dropping the body resets its stream; the connection carries on.
        iterator = streamed.body.makeAsyncIterator()
        _ = consume iterator
        let task = Task { try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/1m"))) }
        task.cancel()
        _ = await task.result
        for _ in 0..<5 {
            let response = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/small")))
            #expect(response.version == .http2)
        }
        #expect(await client.poolStatistics().connectionsOpened == 1)
    }

    @Test func headsAreShownAsCurlShowsThem() async throws {
        let fixture = try await Self.shared.get()
        let client = try self.client(fixture)
        defer { client.shutdown() }
        let heads = Mutex<[ReceivedHead]>([])
        var options = HTTPClient.RequestOptions()
        options.headObserver = { head in heads.withLock { $0.append(head) } }
        _ = try await client.execute(try HTTPRequest(method: .get, url: self.tls(fixture, "/small")), options: options)
        let raw = heads.withLock { $0.first.map { String(decoding: $0.raw, as: UTF8.self) } } ?? ""
        #expect(raw.hasPrefix("HTTP/2 200 \r\n"))
        #expect(raw.contains("\r\ncontent-type: text/plain\r\n"))
        #expect(raw.hasSuffix("\r\n\r\n"))
    }
}
