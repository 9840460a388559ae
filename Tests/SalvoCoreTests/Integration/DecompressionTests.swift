import SalvoTestSupport
import CSalvo
import Foundation
import HTTPTypes
import Testing
@_spi(Benchmarks) @testable import SalvoCore

/// Compressed responses from real servers: every coding the fault server makes, nginx's
/// on-the-fly gzip and gzip_static, broken data, bombs, and gzipped uploads.
@Suite(.serialized) struct DecompressionTests {
    @Test func everyCodingDecodes() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let plain = try await client.execute(try get(server.url("/plain?n=300000"))).body
        #expect(plain.count == 300_000)
        for coding in ["gzip", "gzip2", "deflate", "raw", "chain"] {
            for chunked in [0, 1] {
                let url = server.url("/coded?n=300000&coding=\(coding)&chunked=\(chunked)")
                let response = try await client.execute(try get(url))
                #expect(response.body == plain, "\(coding) chunked=\(chunked)")
                // The stream API, read slowly so that decoding pauses and resumes.
                let streamed = try await client.stream(try get(url))
                var received: [UInt8] = []
                for try await chunk in streamed.body {
                    received += chunk
                    if received.count % 3 == 0 { try await Task.sleep(for: .milliseconds(1)) }
                }
                #expect(received == plain, "\(coding) chunked=\(chunked), streamed")
            }
        }
        let log = try server.log()
        #expect(log.requests.allSatisfy { $0.header("accept-encoding") == "gzip, deflate" })
        // A caller's own Accept-Encoding: the body comes as sent.
        var own = try get(server.url("/coded?n=1000"))
        own.headerFields[.acceptEncoding] = "gzip"
        let raw = try await client.execute(own)
        #expect(raw.body.starts(with: [0x1F, 0x8B]))
        let off = try await client.execute(try get(server.url("/coded?n=1000")), options: .init(decompression: .disabled))
        #expect(off.body.starts(with: [0x1F, 0x8B]))
    }

    /// A stream consumer that falls behind pauses decoding mid-read, while more chunks of
    /// the same read are still to come.
    @Test func slowStreamConsumersPauseDecoding() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let plain = try await client.execute(try get(server.url("/plain?n=3000000"))).body
        // Chunks of 30,000 bytes: two in one read, each inflating to several buffers, so the
        // consumer's pause lands with input left and the next chunk still to come.
        for query in ["chunked=1&chunk=30000", "chunked=1", "chunked=0"] {
            let response = try await client.stream(try get(server.url("/coded?n=3000000&coding=gzip&" + query)))
            try await Task.sleep(for: .milliseconds(200))  // let the connection fill the stream and pause
            var received: [UInt8] = []
            for try await chunk in response.body {
                received += chunk
                if received.count < 1_000_000 { try await Task.sleep(for: .milliseconds(2)) }
            }
            #expect(received == plain, "\(query)")
        }
    }

    /// A response that ended on the wire while its decoded body waited for a slow consumer
    /// ends for that consumer too, however the last of the decoding meets its pauses: with
    /// the final piece (the one after which no encoded byte is left) landing over the
    /// stream's high watermark, the end used to be kept back for a resume that no one would
    /// ever ask for, and the consumer waited forever.
    @Test func aDeferredEndReachesAConsumerThatPausedOnTheLastPiece() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let piece = 64 * 1024   // the decoder's output piece; the stream pauses past 256 KiB
        // Zeros compress ~1000:1, so the whole response comes in one read, its end with it,
        // while the first pause (at five pieces) still holds most of the input. Each resume
        // (at one piece left buffered) then adds four pieces; the sizes put the partial last
        // piece at each place of a resume's four.
        for size in (7...11).map({ $0 * piece + 1000 }) {
            let plain = [UInt8](repeating: 0, count: size)
            let body = GzipEncoder.gzip(plain)
            let head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(body.count)\r\n\r\n"
            let b64 = Data(Array(head.utf8) + body).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let response = try await client.stream(try get(server.url("/raw?b=\(b64)&then=keep")))
            try await Task.sleep(for: .milliseconds(200))  // all of it read, the decoding paused
            let received = try await withThrowingTaskGroup(of: Int?.self) { group in
                group.addTask {
                    var count = 0
                    for try await chunk in response.body {
                        count += chunk.count
                        try await Task.sleep(for: .milliseconds(2))  // slower than the loop's resume
                    }
                    return count
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(10))
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            #expect(received == size, "\(size) bytes: the body never ended")
        }
    }

    @Test func brokenBodiesAreClearErrors() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        for query in ["corrupt=1", "truncate=20", "truncate=20&chunked=1", "ce=br", "ce=gzip,%20gzip,%20gzip", "coding=raw&ce=gzip"] {
            let code = await errorCode { _ = try await client.execute(try get(server.url("/coded?n=100000&" + query))) }
            #expect(code == .contentDecodingFailed, "\(query)")
        }
        // The client goes on as before.
        #expect(try await client.execute(try get(server.url("/coded?n=10"))).body.count == 10)
    }

    /// A 1 GiB bomb (1 MiB on the wire) fails fast, and the heap does not grow with it.
    @Test func bombsFailFastWithFlatMemory() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        _ = server.url("/bomb?mib=1024")
        // Warm up: the server builds the bomb once, the client its buffers.
        _ = await errorCode { _ = try await client.execute(try get(server.url("/bomb?mib=1024"))) }
        let heapBefore = salvo_heap_in_use()
        let began = ContinuousClock.now
        for _ in 0..<3 {
            let collected = await errorCode { _ = try await client.execute(try get(server.url("/bomb?mib=1024"))) }
            #expect(collected == .compressionRatioExceeded)
            let streamed = await errorCode {
                let response = try await client.stream(try get(server.url("/bomb?mib=1024")))
                for try await _ in response.body {}
            }
            #expect(streamed == .compressionRatioExceeded)
        }
        #expect(ContinuousClock.now - began < .seconds(15))
        let growth = Int(salvo_heap_in_use()) - Int(heapBefore)
        #expect(growth < 16 << 20, "heap grew by \(growth) bytes")
        // A size bound instead of the ratio: with the ratio raised, the size bound stops it.
        let sized = await errorCode {
            _ = try await client.execute(try get(server.url("/bomb?mib=1024")),
                                         options: .init(decompression: Decompression(maxDecodedSize: 8 << 20, maxRatio: 1 << 20)))
        }
        #expect(sized == .decodedBodyTooLarge)
    }

    @Test func nginxGzipAndGzipStatic() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let text = try nginx.contents(of: "text.txt")
        for path in ["/text.txt", "/static.txt"] {
            let response = try await client.execute(try get(nginx.url(path)))
            #expect(response.headerFields[.contentEncoding] == "gzip", "\(path)")
            #expect(response.body == text, "\(path)")
        }
        // Redirect rules of nginx, followed: absolute and relative Locations.
        let moved = try await client.execute(try get(nginx.url("/moved")))
        #expect(moved.body == text)
        #expect(moved.redirectChain.last == nginx.url("/text.txt"))
        let relative = try await client.execute(try get(nginx.url("/relative")))
        #expect(relative.text == "hello, world\n")
    }

    /// Uploads nginx stores (WebDAV PUT): a file, a stream, a gzipped stream, and a PUT
    /// replayed through a 307 — checked byte for byte on disk.
    @Test func uploadsLandOnNginxIntact() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let payload = (0..<1_500_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 9) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-put-\(UUID().uuidString)").path
        try Data(payload).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let name = UUID().uuidString
        func put(_ target: String, _ body: HTTPBody) async throws -> CollectedResponse {
            try await client.execute(try HTTPRequest(method: .put, url: nginx.url(target)), body: body)
        }
        #expect(try await put("/dav/\(name)-file", try .file(path: path)).status.code == 201)
        #expect(try nginx.contents(of: "dav/\(name)-file") == payload)
        let chunks = AsyncStream<[UInt8]> { continuation in
            for start in stride(from: 0, to: payload.count, by: 100_000) {
                continuation.yield(Array(payload[start..<min(payload.count, start + 100_000)]))
            }
            continuation.finish()
        }
        #expect(try await put("/dav/\(name)-stream", .stream(chunks)).status.code == 201)
        #expect(try nginx.contents(of: "dav/\(name)-stream") == payload)
        func inflate(_ stored: [UInt8]) throws -> [UInt8] {
            let decoder = try #require(try ContentDecoder.make(contentEncoding: "gzip", limits: .init()))
            var inflated: [UInt8] = []
            _ = try stored.withBytes { (bytes) throws(TransportError) -> Bool in try decoder.decode(bytes) { inflated += $0; return true } }
            try decoder.finish { inflated += $0; return true }
            return inflated
        }
        #expect(try await put("/dav/\(name)-gz", .bytes(payload).gzipped()).status.code == 201)
        let stored = try nginx.contents(of: "dav/\(name)-gz")
        #expect(stored.starts(with: [0x1F, 0x8B]))
        #expect(try inflate(stored) == payload)
        // Streams and files are compressed as they are read.
        #expect(try await put("/dav/\(name)-file-gz", try HTTPBody.file(path: path).gzipped()).status.code == 201)
        #expect(try inflate(try nginx.contents(of: "dav/\(name)-file-gz")) == payload)
        let replayed = try await put("/post-here", try .file(path: path))
        #expect(replayed.status.code == 201 || replayed.status.code == 204)
        #expect(try nginx.contents(of: "dav/posted.bin") == payload)
    }
}
