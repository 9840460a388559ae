import SalvoTestSupport
import HTTPTypes
import Testing
@testable import SalvoCore

/// The seam types on their own, and the engine behind the `Transport` protocol.
@Suite struct TransportSeamTests {
    @Test func bodiesInMemoryAndFromSequences() async throws {
        let bytes = ResponseBody.bytes(Array("hello".utf8), trailers: [HTTPField.Name("X-Sum")!: "x"])
        #expect(try await bytes.collect(upTo: 100) == Array("hello".utf8))
        #expect(bytes.trailers?[HTTPField.Name("X-Sum")!] == "x")
        #expect(await errorCode { _ = try await bytes.collect(upTo: 100) } == .bodyAlreadyIterated)

        let chunks = AsyncStream<[UInt8]> { continuation in
            for piece in ["ab", "cd", "ef"] { continuation.yield(Array(piece.utf8)) }
            continuation.finish()
        }
        let streamed = ResponseBody.stream(chunks)
        #expect(await errorCode { _ = try await streamed.collect(upTo: 3) } == .bodyTooLarge)

        struct Broken: Error {}
        let failing = ResponseBody.stream(AsyncThrowingStream<[UInt8], any Error> { $0.finish(throwing: Broken()) })
        #expect(await errorCode { _ = try await failing.collect(upTo: 10) } == .readFailed)

        let long = ResponseBody.stream(AsyncStream<[UInt8]> { continuation in
            for _ in 0..<10 { continuation.yield([UInt8](repeating: 1, count: 100)) }
            continuation.finish()
        })
        #expect(await long.drain(upTo: 250) == false, "past the bound: given up")
        #expect(await ResponseBody.bytes([1, 2, 3]).drain(upTo: 10) == true)
    }

    /// A writable body: written from outside any closure, ended with finish(); its writes
    /// fail once the request is over, instead of waiting.
    @Test func writableBodies() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let (body, writer) = HTTPBody.makeWritable(contentType: "text/plain")
        var request = try HTTPRequest(method: .post, url: server.url("/echo-body"))
        request.headerFields[.accept] = "*/*"
        async let response = client.execute(request, body: body)
        for piece in ["one ", "two ", "three"] { try await writer.write(Array(piece.utf8)) }
        writer.finish()
        #expect(try await response.text == "one two three")

        // A request that fails before any connection takes its body: the writer is told.
        let (lost, lostWriter) = HTTPBody.makeWritable()
        let refused = try HTTPRequest(method: .post, url: "http://127.0.0.1:1/")
        #expect(await errorCode { _ = try await client.execute(refused, body: lost) } == .connectionRefused)
        let code = try await withWatchdog { await errorCode { try await lostWriter.write([1]) } }
        #expect(code == .cancelled)
    }

    /// The engine as a Transport: a head first, the body as it comes, the body's own
    /// content type sent when the request names none.
    @Test func theEngineIsATransport() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let transport: any Transport = client
        let request = try HTTPRequest(method: .post, url: server.url("/echo"))
        let response = try await transport.send(request, body: .string("{}", contentType: "application/json"), options: .init())
        #expect(response.status == .ok)
        let echoed = String(decoding: try await response.body.collect(upTo: 1 << 20), as: UTF8.self)
        #expect(echoed.contains(#"["Content-Type", "application/json"]"#))
        var typed = request
        typed.headerFields[.contentType] = "text/plain"
        let own = try await transport.send(typed, body: .string("x", contentType: "application/json"), options: .init())
        let ownEcho = String(decoding: try await own.body.collect(upTo: 1 << 20), as: UTF8.self)
        #expect(ownEcho.contains(#"["Content-Type", "text/plain"]"#) && !ownEcho.contains("application/json"))
        let injected = await errorCode {
            _ = try await transport.send(request, body: .string("x", contentType: "a\r\nX-Evil: 1"), options: .init())
        }
        #expect(injected == .invalidRequest)
    }
}
