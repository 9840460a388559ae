import SalvoTestSupport
import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore

/// Streamed and file request bodies, their framing and backpressure, and Expect: 100-continue.
@Suite(.serialized) struct RequestBodyTests {
    static func pattern(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    /// Splits `bytes` into chunks of uneven sizes.
    static func chunks(of bytes: [UInt8]) -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            var offset = 0
            var size = 1
            while offset < bytes.count {
                let end = min(bytes.count, offset + size)
                continuation.yield(Array(bytes[offset..<end]))
                offset = end
                size = size * 3 % 70_001 + 1
            }
            continuation.finish()
        }
    }

    func post(_ url: String) throws -> HTTPRequest {
        var request = try HTTPRequest(method: .post, url: url)
        request.headerFields[.contentType] = "application/octet-stream"
        return request
    }

    @Test func streamsWithAndWithoutLength() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient { $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        let payload = Self.pattern(2 << 20)
        let known = try await client.execute(try post(server.url("/echo-body")), body: .stream(Self.chunks(of: payload), length: payload.count))
        #expect(known.body == payload)
        let chunked = try await client.execute(try post(server.url("/echo-body")), body: .stream(Self.chunks(of: payload)))
        #expect(chunked.body == payload)
        let empty = try await client.execute(try post(server.url("/echo-body")), body: .stream(AsyncStream<[UInt8]> { $0.finish() }))
        #expect(empty.body.isEmpty)
        let log = try server.log()
        #expect(log.requests[0].header("content-length") == String(payload.count))
        #expect(log.requests[1].header("transfer-encoding") == "chunked")
        #expect(log.requests[1].header("content-length") == nil)
        #expect(log.connections == 1, "streamed bodies leave the connection reusable")
    }

    @Test func filesAreStreamedFromDisk() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let payload = Self.pattern(3 << 20 + 17, seed: 7)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-upload-\(UUID().uuidString)").path
        try Data(payload).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let response = try await client.execute(try post(server.url("/echo-body")), body: try .file(path: path))
        #expect(response.body == payload)
        #expect(try server.log().requests.last?.header("content-length") == String(payload.count))
        // A file body is replayable: a 307 sends it again.
        let redirected = try await client.execute(try post(server.url("/redirect?code=307&to=%2Fecho-body")), body: try .file(path: path))
        #expect(redirected.body == payload)
        #expect(throws: TransportError.self) { try HTTPBody.file(path: path + ".missing") }
        #expect(throws: TransportError.self) { try HTTPBody.file(path: "/tmp") }
    }

    @Test func badStreamsFailTheRequest() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let short = await errorCode {
            _ = try await client.execute(try post(server.url("/echo-body")), body: .stream(Self.chunks(of: Self.pattern(1000)), length: 2000))
        }
        #expect(short == .requestBodyFailed)
        let long = await errorCode {
            _ = try await client.execute(try post(server.url("/echo-body")), body: .stream(Self.chunks(of: Self.pattern(3000)), length: 2000))
        }
        #expect(long == .requestBodyFailed)
        struct Broken: Error {}
        let throwing = await errorCode {
            _ = try await client.execute(try post(server.url("/echo-body")), body: .producer { writer in
                try await writer.write([1, 2, 3])
                throw Broken()
            })
        }
        #expect(throwing == .requestBodyFailed)
        // The client is fine afterwards.
        #expect(try await client.execute(try get(server.url("/ok"))).text == "hello")
        // A streamed body is not replayed for a 307: the redirect comes back, explained.
        let unfollowed = try await client.execute(try post(server.url("/redirect?code=307&to=%2Fecho-body")),
                                                  body: .stream(Self.chunks(of: Self.pattern(10))))
        #expect(unfollowed.status.code == 307)
        #expect(unfollowed.unfollowedRedirect?.contains("cannot be replayed") == true)
    }

    /// A body that reaches its announced length and then goes on, or throws after its last
    /// byte, fails the request: the server got a body its producer disowned.
    @Test func bodiesThatBreakTheirLengthFail() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let twoChunks = AsyncStream<[UInt8]> { continuation in
            continuation.yield(Array("abc".utf8))
            continuation.yield(Array("de".utf8))
            continuation.finish()
        }
        let extra = await errorCode {
            _ = try await client.execute(try post(server.url("/echo-body")), body: .stream(twoChunks, length: 3))
        }
        #expect(extra == .requestBodyFailed)
        struct Broken: Error {}
        let thrownAfterLast = await errorCode {
            _ = try await client.execute(try post(server.url("/echo-body")), body: .producer(length: 3) { writer in
                try await writer.write(Array("abc".utf8))
                try await Task.sleep(for: .milliseconds(50))
                throw Broken()
            })
        }
        #expect(thrownAfterLast == .requestBodyFailed)
        // Exactly the announced bytes, ending well: fine, and the connection is reused.
        let exact = try await client.execute(try post(server.url("/echo-body")), body: .producer(length: 3) { writer in
            try await writer.write(Array("abc".utf8))
        })
        #expect(exact.text == "abc")
    }

    /// A body whose sequence gives every announced byte and then never ends does not hold a
    /// complete exchange for ever: after a short grace the response is delivered.
    @Test func aProducerThatNeverEndsDoesNotHoldTheResponse() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let endless = AsyncStream<[UInt8]> { continuation in
            continuation.yield(Array("abc".utf8))
            // Never finished.
        }
        let response = try await withWatchdog {
            try await client.execute(try self.post(server.url("/echo-body")), body: .stream(endless, length: 3))
        }
        #expect(response.text == "abc")
    }

    /// A negative length is the caller's mistake: a typed error, never a trap.
    @Test func negativeLengthsAreInvalidRequests() async throws {
        let client = try makeClient()
        defer { client.shutdown() }
        let request = try post("http://127.0.0.1:9/")
        let stream = await errorCode {
            _ = try await client.execute(request, body: .stream(AsyncStream<[UInt8]> { $0.finish() }, length: -1))
        }
        #expect(stream == .invalidRequest)
        let producer = await errorCode {
            _ = try await client.execute(request, body: .producer(length: -5) { _ in })
        }
        #expect(producer == .invalidRequest)
        let streamed = await errorCode { _ = try await client.stream(request, body: .producer(length: Int.min) { _ in }) }
        #expect(streamed == .invalidRequest)
    }

    /// The read timeout stays on guard after a producer that paused: a server that then
    /// stays silent is a read timeout, not a hang. The pause itself is not the server's fault.
    @Test func readTimeoutAfterASlowProducer() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.readTimeout = .milliseconds(300) }
        defer { client.shutdown() }
        let started = ContinuousClock.now
        let code = try await withWatchdog {
            await errorCode {
                _ = try await client.execute(try self.post(server.url("/stall")), body: .producer { writer in
                    try await writer.write(Array("first".utf8))
                    try await Task.sleep(for: .milliseconds(700))
                    try await writer.write(Array("second".utf8))
                })
            }
        }
        #expect(code == .readTimeout)
        #expect(ContinuousClock.now - started >= .milliseconds(700), "no read timeout while the producer paused")
    }

    /// A server that never reads: the producer is held back once the socket buffers and the
    /// body queue are full, instead of the client buffering everything it is given.
    @Test func slowServersHoldTheProducerBack() async throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let client = try makeClient()
        defer { client.shutdown() }
        let produced = Atomic<Int>(0)
        let body = HTTPBody.producer { writer in
            let chunk = [UInt8](repeating: 0x61, count: 1 << 20)
            for _ in 0..<512 {
                try await writer.write(chunk)
                produced.add(chunk.count, ordering: .relaxed)
            }
        }
        let code = await errorCode {
            _ = try await client.execute(try post("http://127.0.0.1:\(listener.port)/"), body: body,
                                         options: .init(timeout: .seconds(1)))
        }
        #expect(code == .totalTimeout)
        // Loopback socket buffers take a few MiB; 512 MiB would mean no backpressure at all.
        #expect(produced.load(ordering: .relaxed) < 64 << 20, "produced \(produced.load(ordering: .relaxed)) bytes")
    }

    @Test func expectContinue() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient { $0.expectContinueTimeout = .milliseconds(300); $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        // Waits long for a 100, so that "did not wait" is clear however busy the machine.
        let patient = try makeClient { $0.expectContinueTimeout = .seconds(30); $0.maxConnectionsPerHost = 1 }
        defer { patient.shutdown() }
        let payload = Self.pattern(100_000)
        func send(_ query: String, body: HTTPBody, on sender: HTTPClient? = nil) async throws -> CollectedResponse {
            var request = try post(server.url("/echo-body" + query))
            request.headerFields[.expect] = "100-continue"
            return try await (sender ?? client).execute(request, body: body)
        }
        // The server says 100: the body goes at once.
        let began = ContinuousClock.now
        #expect(try await send("", body: .bytes(payload), on: patient).body == payload)
        #expect(try await send("", body: .stream(Self.chunks(of: payload)), on: patient).body == payload)
        #expect(ContinuousClock.now - began < .seconds(15), "did not wait for the timeout")
        // The server says nothing: the body goes after the timeout.
        #expect(try await send("?expect=none", body: .bytes(payload)).body == payload)
        #expect(try await send("?expect=none", body: .stream(Self.chunks(of: payload), length: payload.count)).body == payload)

        // A final answer first: the body is never sent, and the connection is not reused.
        try server.resetLog()
        let early = try await send("?expect=final&code=401", body: .bytes(payload))
        #expect(early.status == .unauthorized)
        let earlyStream = try await send("?expect=final&code=403", body: .stream(Self.chunks(of: payload)))
        #expect(earlyStream.status == .forbidden)
        #expect(try await client.execute(try get(server.url("/ok"))).text == "hello")
        try await Task.sleep(for: .milliseconds(100))
        let log = try server.log()
        #expect(log.requests.prefix(2).map(\.afterBytes) == [0, 0], "no body byte after the early answer")
        let connections = log.requests.prefix(3).map(\.connection)
        #expect(Set(connections).count == 3, "each early answer closed its connection: \(connections)")
        let refused = try await send("?expect=417", body: .bytes(payload))
        #expect(refused.status.code == 417)
    }
}

/// A loopback listener that accepts connections and never reads from them.
final class SilentListener: @unchecked Sendable {
    // @unchecked Sendable: fds are set in init; close() is called once by the test.
    let port: Int
    private let fd: Int32
    private final class Accepted: Sendable {
        let fds = Mutex<[Int32]>([])
    }
    private let accepted = Accepted()
    private let thread: Thread

    init() throws {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard let port = bindToLoopback(listening), listen(listening, 16) == 0 else { throw TestServerError("cannot listen") }
        self.fd = listening
        self.port = port
        let accepted = self.accepted
        self.thread = Thread {
            while true {
                let client = accept(listening, nil, nil)
                if client < 0 { return }
                accepted.fds.withLock { $0.append(client) }
            }
        }
        self.thread.start()
    }

    func close() {
        shutdown(self.fd, Int32(SHUT_RDWR))
        Glibc.close(self.fd)
        for client in self.accepted.fds.withLock({ $0 }) { Glibc.close(client) }
    }
}
