import SalvoTestSupport
import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore

/// Bad servers: every failure is a typed error, never a hang or a crash.
@Suite struct FaultTests {
    func run(_ path: String, method: HTTPRequest.Method = .get, timeout: Duration = .seconds(10),
             configure: (inout HTTPClient.Configuration) -> Void = { _ in }) async throws -> Result<CollectedResponse, TransportError> {
        let server = try await Shared.faults.get()
        let client = try makeClient(configure)
        defer { client.shutdown() }
        do {
            return .success(try await client.execute(try HTTPRequest(method: method, url: server.url(path)), options: .init(timeout: timeout)))
        } catch {
            return .failure(error)
        }
    }

    func expectError(_ path: String, _ code: TransportError.Code, timeout: Duration = .seconds(10),
                     configure: (inout HTTPClient.Configuration) -> Void = { _ in },
                     sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let result = try await run(path, timeout: timeout, configure: configure)
        switch result {
        case .success(let response):
            Issue.record("\(path): expected \(code), got status \(response.status.code)", sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(error.code == code, "\(path): \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func truncatedBodies() async throws {
        try await expectError("/truncated", .truncatedBody)
        try await expectError("/truncated-chunked", .truncatedBody)
    }

    /// A chunk size no signed 64-bit count holds fails the request at once with
    /// `.invalidResponse`, and the framing after it never reaches the caller as body — also
    /// when the server keeps the connection open after it. The largest signed size is still
    /// read as data, and its chunk cut short by the close is a truncated body.
    @Test func chunkSizesPastASignedCount() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        func raw(_ text: String, then: String) -> String {
            let b64 = Data(text.utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            return server.url("/raw?b=\(b64)&then=\(then)")
        }
        /// The code a stream of `url` ended with, and the body bytes it yielded before.
        func streamed(_ url: String) async throws -> (TransportError.Code?, [UInt8]) {
            var received: [UInt8] = []
            do {
                let response = try await client.stream(try get(url), options: .init(readTimeout: .seconds(30)))
                for try await chunk in response.body { received += chunk }
                return (nil, received)
            } catch let error as TransportError {
                return (error.code, received)
            }
        }
        let framing = "\r\nhello\r\n0\r\n\r\n"
        for then in ["close", "stall"] {
            // The read timeout only bounds a hang: with "stall", nothing but the refusal ends it.
            let huge = raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff" + framing, then: then)
            let code = await errorCode { _ = try await client.execute(try get(huge), options: .init(readTimeout: .seconds(30))) }
            #expect(code == .invalidResponse, "then=\(then)")
            let (streamCode, received) = try await streamed(huge)
            #expect(streamCode == .invalidResponse, "then=\(then)")
            #expect(received.isEmpty, "then=\(then): \(String(decoding: received, as: UTF8.self).debugDescription)")
        }
        let largest = raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff" + framing, then: "close")
        #expect(await errorCode { _ = try await client.execute(try get(largest)) } == .truncatedBody)
        let (code, received) = try await streamed(largest)
        #expect(code == .truncatedBody)
        #expect(received == Array("hello\r\n0\r\n\r\n".utf8))
    }

    @Test func resetMidBody() async throws {
        try await expectError("/reset", .readFailed)
    }

    @Test func garbageAndEmptyReplies() async throws {
        try await expectError("/garbage", .notHTTPResponse)
        try await expectError("/empty", .emptyResponse)
        try await expectError("/dup-cl", .invalidResponse)
    }

    @Test func stallsTimeOut() async throws {
        let start = ContinuousClock.now
        try await expectError("/stall", .totalTimeout, timeout: .milliseconds(300))
        try await expectError("/stall-body", .readTimeout) { $0.readTimeout = .milliseconds(300) }
        // A bound for a hang, not a measurement: a loaded run has taken over 20 s here.
        #expect(ContinuousClock.now - start < .seconds(120), "the server never answers: only the timeouts end these")
    }

    @Test func oneByteWritesWithExtensionsAndTrailers() async throws {
        let response = try await run("/one-byte").get()
        #expect(response.text == "hello world")
        #expect(response.trailers?[HTTPField.Name("X-Trailer")!] == "yes")
    }

    @Test func chunkedWithTrailers() async throws {
        let response = try await run("/chunked").get()
        #expect(response.text == "hello world")
        #expect(response.trailers?[HTTPField.Name("X-Trailer")!] == "yes")
        // Streamed: the trailers are there once the body has ended.
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let streamed = try await client.stream(try get(server.url("/chunked")))
        var text: [UInt8] = []
        for try await chunk in streamed.body { text += chunk }
        #expect(String(decoding: text, as: UTF8.self) == "hello world")
        #expect(streamed.body.trailers?[HTTPField.Name("X-Trailer")!] == "yes")
    }

    @Test func closeDelimitedAndHTTP10() async throws {
        #expect(try await run("/close-delimited").get().text == "close-delimited body")
        #expect(try await run("/http10").get().text == "http/1.0 body")
    }

    @Test func interimResponsesSkipped() async throws {
        let response = try await run("/continue").get()
        #expect(response.status == .ok)
        #expect(response.text == "final")
    }

    @Test func bodilessResponses() async throws {
        #expect(try await run("/head-cl", method: .head).get().body.isEmpty)
        #expect(try await run("/no-content").get().status.code == 204)
        #expect(try await run("/not-modified").get().status.code == 304)
    }

    @Test func headLimits() async throws {
        try await expectError("/big-headers?n=70000", .headerTooLarge)
        try await expectError("/many-headers?n=1001", .tooManyHeaders)
        #expect(try await run("/many-headers?n=900").get().status == .ok)
        try await expectError("/big?n=2000", .bodyTooLarge) { $0.maxBodySize = 1000 }
    }

    @Test func staleKeepAliveConnectionIsRetriedOnceForIdempotentRequests() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        // The server drops the request that reuses the connection: GET goes again, once,
        // on a fresh connection, and the caller never sees the stale one.
        let request = try get(server.url("/drop-next"))
        for _ in 0..<3 {
            let response = try await client.execute(request)
            #expect(response.status == .ok)
        }
        let log = try server.log()
        #expect(log.connections == 3)
        #expect(log.requests.count == 5, "3 answered + 2 dropped and retried")

        // POST is not idempotent: the same situation is an error, not a silent resend.
        try server.resetLog()
        let post = try HTTPRequest(method: .post, url: server.url("/drop-next"))
        let fresh = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1 }
        defer { fresh.shutdown() }
        _ = try await fresh.execute(post, body: .bytes([1]))
        let code = await errorCode { _ = try await fresh.execute(post, body: .bytes([1])) }
        #expect(code == .emptyResponse)
        #expect(try server.log().requests.count == 2)
    }

    @Test func serverClosingIdleConnectionIsNoticed() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        let request = try get(server.url("/idle-close?ms=20"))
        for _ in 0..<3 {
            #expect(try await client.execute(request).status == .ok)
            try await Task.sleep(for: .milliseconds(100))
        }
        // A POST, which is never sent twice, never meets the closed connection either.
        let post = try HTTPRequest(method: .post, url: server.url("/idle-close?ms=20"))
        for _ in 0..<3 {
            #expect(try await client.execute(post, body: .bytes(Array("x".utf8))).status == .ok)
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// A server that closes connections idle for 300 ms while requests keep arriving, some
    /// just as it closes: no idempotent request fails (one that meets a connection closing
    /// under it goes again on a fresh one).
    @Test func idleClosesUnderSteadyTrafficFailNothing() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 4 }
        defer { client.shutdown() }
        let counts = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for caller in 0..<8 {
                group.addTask {
                    // From the caller's own start: a busy test run may start it late.
                    let start = ContinuousClock.now
                    var done = 0
                    var failed = 0
                    var pause = 250 + caller * 13
                    // Six requests at least (a loaded machine is slower), two seconds at least,
                    // thirty at most.
                    while (done + failed < 6 || ContinuousClock.now - start < .seconds(2)) && ContinuousClock.now - start < .seconds(30) {
                        let method: HTTPRequest.Method = done % 2 == 0 ? .get : .put
                        let request = try HTTPRequest(method: method, url: server.url("/idle-close?ms=300"))
                        do {
                            let response = try await client.execute(request, body: method == .put ? .bytes([1]) : nil)
                            if response.status == .ok { done += 1 } else { failed += 1 }
                        } catch {
                            failed += 1
                        }
                        // Around the server's idle limit, on both sides of it.
                        pause = 250 + (pause * 7 + 31) % 100
                        try await Task.sleep(for: .milliseconds(pause))
                    }
                    return (done, failed)
                }
            }
            var total = (0, 0)
            for try await (done, failed) in group { total = (total.0 + done, total.1 + failed) }
            return total
        }
        #expect(counts.1 == 0, "\(counts.1) of \(counts.0 + counts.1) failed")
        #expect(counts.0 >= 48)
        // However busy the connections were kept above (a loaded machine makes each request
        // longer and the idle gaps shorter), a quiet spell past the server's limit has it
        // close every one of them; the next requests find them closed and go on new ones.
        try await Task.sleep(for: .milliseconds(800))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let response = try await client.execute(try get(server.url("/idle-close?ms=300")))
                    #expect(response.status == .ok)
                }
            }
            try await group.waitForAll()
        }
        let closed = await client.poolStatistics().hosts.values.reduce(0) { $0 + $1.closedByServer }
        #expect(closed > 0, "the server did close idle connections")
    }

    /// `Keep-Alive: timeout=N` from the server: the idle connection is retired before the
    /// server would drop it (half a second early), whatever the client's own idle timeout.
    @Test func theServersKeepAliveTimeoutIsRespected() async throws {
        #expect(HTTP1Connection.idleLimit("timeout=5, max=100") == .milliseconds(4500))
        #expect(HTTP1Connection.idleLimit("max=3,timeout = 1") == .milliseconds(500))
        #expect(HTTP1Connection.idleLimit("timeout=0") == .zero)
        #expect(HTTP1Connection.idleLimit("max=3") == nil && HTTP1Connection.idleLimit("timeout=soon") == nil)
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.threads = 1; $0.idleTimeout = .seconds(60) }
        defer { client.shutdown() }
        let announced = "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=1\r\nContent-Length: 2\r\n\r\nok"
        let b64 = Data(announced.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(try await client.execute(try get(server.url("/raw?b=\(b64)&then=keep"))).status == .ok)
        let end = ContinuousClock.now + .seconds(10)
        while await client.poolStatistics().openConnections > 0, ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(await client.poolStatistics().openConnections == 0, "retired before the server's second was up")
        // Without the field, the client's own idle timeout (60 s) keeps it.
        #expect(try await client.execute(try get(server.url("/ok"))).status == .ok)
        try await Task.sleep(for: .milliseconds(700))
        #expect(await client.poolStatistics().openConnections == 1)
    }

    /// Per host: what is open now, and what happened since the client was made.
    @Test func poolStatisticsPerHost() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        for _ in 0..<3 { #expect(try await client.execute(try get(server.url("/ok"))).status == .ok) }
        // The server closes after answering (HTTP/1.0 without keep-alive).
        _ = try await client.execute(try get(server.url("/http10")))
        // A reply that is not HTTP fails the request.
        _ = await errorCode { _ = try await client.execute(try get(server.url("/garbage"))) }
        let statistics = await client.poolStatistics()
        let key = ConnectionKey(scheme: .http, host: "127.0.0.1", port: server.port)
        let host = try #require(statistics.hosts[key], "\(statistics.hosts.keys)")
        #expect(host.requestsCompleted == 4 && host.requestsFailed == 1, "\(host)")
        // One connection for the three /ok and /http10 (which the server then closed), a
        // new one for /garbage, closed by the client when the reply was not HTTP.
        #expect(host.opened == 2 && host.reused == 3, "\(host)")
        #expect(host.closedByServer == 1 && host.closedByUs == 1, "\(host)")
        #expect(host.open == 0 && host.idle == 0 && host.leased == 0 && host.queued == 0, "\(host)")
        // A connection kept: open and idle now.
        #expect(try await client.execute(try get(server.url("/ok"))).status == .ok)
        let after = try #require(await client.poolStatistics().hosts[key])
        #expect(after.open == 1 && after.idle == 1 && after.opened == 3 && after.requestsCompleted == 5, "\(after)")
    }

    /// A server that stops reading an upload: the write timeout ends it, each its own error.
    @Test func aServerThatStopsReadingMeetsTheWriteTimeout() async throws {
        // A server of its own: 64 MiB pushed at a stalled one should not slow the others' tests.
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient { $0.threads = 1 }
        defer { client.shutdown() }
        var options = HTTPClient.RequestOptions()
        options.writeTimeout = .milliseconds(300)
        options.timeout = .seconds(60)   // a bound for the test, should the body ever fit the buffers
        let upload = [UInt8](repeating: 0x61, count: 64 << 20)
        let request = try HTTPRequest(method: .put, url: server.url("/stall"))
        let code = await errorCode { _ = try await client.execute(request, body: .bytes(upload), options: options) }
        #expect(code == .writeTimeout)
        // A slow producer is not the server's silence: no write timeout while it is awaited.
        let slow = HTTPBody.producer(length: 4) { writer in
            for byte in Array("slow".utf8) {
                try await Task.sleep(for: .milliseconds(150))
                try await writer.write([byte])
            }
        }
        let echo = try HTTPRequest(method: .post, url: server.url("/echo-body"))
        #expect(try await client.execute(echo, body: slow, options: options).body == Array("slow".utf8))
    }

    @Test func connectionRefused() async throws {
        // A port that was just free: bind, read the port, close.
        let port = try freePort()
        let client = try makeClient()
        defer { client.shutdown() }
        let code = await errorCode { _ = try await client.execute(try get("http://127.0.0.1:\(port)/")) }
        #expect(code == .connectionRefused)
    }

    @Test func cancellationEndsAStalledRequest() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let request = try get(server.url("/stall"))
        let task = Task { try await client.execute(request) }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        task.cancel()
        let code = await errorCode { _ = try await task.value }
        #expect(code == .cancelled)
        #expect(ContinuousClock.now - start < .seconds(20), "the server never answers: only the cancellation ends it")
    }

    @Test func poolWaitTimeout() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1; $0.poolWaitTimeout = .milliseconds(200) }
        defer { client.shutdown() }
        let stalled = Task { try await client.execute(try get(server.url("/stall")), options: .init(timeout: .seconds(3))) }
        try await Task.sleep(for: .milliseconds(100))
        let code = await errorCode { _ = try await client.execute(try get(server.url("/ok"))) }
        #expect(code == .poolWaitTimeout)
        stalled.cancel()
        _ = try? await stalled.value
    }

    @Test func shutdownFailsRequestsInFlight() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        let stalled = Task { try await client.execute(try get(server.url("/stall"))) }
        try await Task.sleep(for: .milliseconds(100))
        client.shutdown()
        let code = await errorCode { _ = try await stalled.value }
        #expect(code == .shutdown)
        let after = await errorCode { _ = try await client.execute(try get(server.url("/ok"))) }
        #expect(after == .shutdown)
    }

    @Test func pausedStreamStillSeesTheRestAfterTheServerClosed() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let response = try await client.stream(try get(server.url("/close-delimited?n=3000000")))
        // Let the server write everything and close while the connection is paused.
        try await Task.sleep(for: .milliseconds(300))
        var total = 0
        for try await chunk in response.body { total += chunk.count }
        #expect(total == 3_000_000)
    }

    @Test func streamDroppedEarlyClosesTheConnection() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        do {
            let response = try await client.stream(try get(server.url("/big?n=10000000")))
            var iterator = response.body.makeAsyncIterator()
            _ = try await iterator.next()
        }
        // The pool's only connection must be free again for the next request.
        let response = try await client.execute(try get(server.url("/ok")), options: .init(timeout: .seconds(5)))
        #expect(response.text == "hello")
    }
}

/// A port that refuses connections for as long as this is alive: bound, never listening, so
/// no server another test starts meanwhile can take it (a port from ``freePort()`` can be).
final class RefusedPort {
    let port: Int
    private let fd: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard let port = bindToLoopback(fd) else {
            close(fd)
            throw TestServerError("cannot hold a port")
        }
        self.fd = fd
        self.port = port
    }

    deinit { close(self.fd) }
}
