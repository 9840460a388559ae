import Foundation
@testable import Salvo
import Testing

/// `maxLineLength` holds however the body is cut into chunks: a long line that arrives whole
/// in one chunk is refused as surely as one that grows across several, and a line exactly at
/// the limit passes whatever its ending and wherever the chunks break.
@Suite struct LineLengthLimitTests {
    static let limit = 100

    /// The lines of `pieces`, or the error that stopped them.
    func lines(_ pieces: [[UInt8]], bareCR: Bool) -> Result<[String], ClientError> {
        var splitter = LineSplitter(acceptsBareCR: bareCR, maxLineLength: Self.limit)
        var lines: [[UInt8]] = []
        do throws(ClientError) {
            for piece in pieces { try splitter.push(piece, into: &lines) }
        } catch {
            return .failure(error)
        }
        if let rest = splitter.finish() { lines.append(rest) }
        return .success(lines.map { String(decoding: $0, as: UTF8.self) })
    }

    /// `text` cut in two at `offset`.
    func cut(_ text: [UInt8], at offset: Int) -> [[UInt8]] {
        [Array(text[..<offset]), Array(text[offset...])]
    }

    func refused(_ result: Result<[String], ClientError>) -> Bool {
        if case .failure(let error) = result { return error.code == .bodyTooLarge }
        return false
    }

    /// The endings each splitter takes: LF and CRLF for lines, a lone CR too for events.
    static let endings: [(ending: String, bareCR: Bool)] = [("\n", false), ("\r\n", false), ("\n", true), ("\r\n", true), ("\r", true)]

    @Test func aLongLineInOneChunkIsRefused() {
        for (ending, bareCR) in Self.endings {
            let long = String(repeating: "x", count: 4096)
            #expect(self.refused(self.lines([Array((long + ending).utf8)], bareCR: bareCR)), "\(ending.debugDescription), bare CR \(bareCR)")
            #expect(self.refused(self.lines([Array(("ok" + ending + long + ending + "after" + ending).utf8)], bareCR: bareCR)))
        }
    }

    @Test func aLongLineIsRefusedWhereverTheChunksBreak() {
        for (ending, bareCR) in Self.endings {
            let text = Array(("first" + ending + String(repeating: "x", count: 4096) + ending + "last" + ending).utf8)
            let passed = (0...text.count).filter { !self.refused(self.lines(self.cut(text, at: $0), bareCR: bareCR)) }
            #expect(passed.isEmpty, "\(ending.debugDescription), bare CR \(bareCR): let through when cut at \(passed.prefix(5))…")
        }
    }

    @Test func aLineAtTheLimitPassesWhereverTheChunksBreak() {
        for (ending, bareCR) in Self.endings {
            let full = String(repeating: "y", count: Self.limit)
            let text = Array(("first" + ending + full + ending + "last").utf8)
            for offset in 0...text.count {
                let result = self.lines(self.cut(text, at: offset), bareCR: bareCR)
                #expect((try? result.get()) == ["first", full, "last"], "\(ending.debugDescription), bare CR \(bareCR), cut at \(offset): \(result)")
            }
            let bytes = text.map { [$0] }
            #expect((try? self.lines(bytes, bareCR: bareCR).get()) == ["first", full, "last"], "one byte at a time")
            let over = Array(("first" + ending + full + "y" + ending + "last").utf8)
            let passed = (0...over.count).filter { !self.refused(self.lines(self.cut(over, at: $0), bareCR: bareCR)) }
            #expect(passed.isEmpty, "one byte over the limit, \(ending.debugDescription), bare CR \(bareCR): let through when cut at \(passed.prefix(5))…")
            #expect(self.refused(self.lines(over.map { [$0] }, bareCR: bareCR)))
        }
    }

    /// Read from a body in two chunks, cut anywhere: the line before the long one comes out,
    /// then the refusal — the same for every cut.
    @Test func aBodyReadInChunksStopsAtTheSameLineWhereverItIsCut() async {
        let text = Array(("first\r\n" + String(repeating: "x", count: 4096) + "\r\nlast\r\n").utf8)
        var differing: [Int] = []
        for offset in 0...text.count {
            let (chunks, feed) = AsyncStream<[UInt8]>.makeStream()
            for piece in self.cut(text, at: offset) where !piece.isEmpty { feed.yield(piece) }
            feed.finish()
            var lines: [String] = []
            var refused = false
            do {
                for try await line in TextLines(body: .stream(chunks), maxLineLength: Self.limit) { lines.append(line) }
            } catch {
                refused = error.code == .bodyTooLarge
            }
            if lines != ["first"] || !refused { differing.append(offset) }
        }
        #expect(differing.isEmpty, "cuts that gave another outcome: \(differing.prefix(5))…")
    }

    /// Through a client: the mock hands the body over as one chunk.
    @Test func theStreamsHoldTheLimitForABodyInOneChunk() async throws {
        let long = String(repeating: "x", count: 4096)
        let mock = MockTransport()
        mock.on(.get, "/lines", reply: .text("ok\r\n\(long)\r\nafter\r\n"))
        mock.on(.get, "/jsonl", reply: .text("{\"index\": 1}\n{\"pad\": \"\(long)\", \"index\": 2}\n", contentType: "application/x-ndjson"))
        mock.on(.get, "/events", reply: .text(": \(long)\n\ndata: ok\n\n", contentType: "text/event-stream"))
        let client = try Client(baseURL: "http://api.test", transport: mock)

        var lines: [String] = []
        await #expect(throws: ClientError.self) {
            for try await line in try await client.stream(Endpoint<Empty>.get("/lines")).lines(maxLineLength: Self.limit) { lines.append(line) }
        }
        #expect(lines == ["ok"])

        struct Index: Decodable, Sendable { var index: Int }
        var indexes: [Int] = []
        do {
            let response = try await client.stream(Endpoint<Empty>.get("/jsonl"))
            for try await item in response.jsonLines(of: Index.self, maxLineLength: Self.limit) { indexes.append(item.index) }
            Issue.record("a 4 KiB JSON line passed a 100-byte limit")
        } catch {
            #expect(error.code == .bodyTooLarge, "\(error)")
        }
        #expect(indexes == [1])

        do {
            let response = try await client.stream(Endpoint<Empty>.get("/events"))
            for try await _ in response.serverSentEvents(maxEventSize: Self.limit) {}
            Issue.record("a 4 KiB line passed a 100-byte event limit")
        } catch {
            #expect(error.code == .bodyTooLarge, "\(error)")
        }
    }
}
