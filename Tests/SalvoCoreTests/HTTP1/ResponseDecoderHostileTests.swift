import HTTPTypes
import Testing
@_spi(Benchmarks) @testable import SalvoCore
@_spi(Benchmarks) import SalvoTransport

/// What a hostile or broken server sends the decoder: conflicting framing, heads that need
/// repair and heads that cannot have it, counts past any integer, floods of interim responses,
/// heads past the limits, upgrades nobody asked for. Each is refused with a typed error or
/// read as curl reads it; none is taken for a response it is not.
@Suite struct ResponseDecoderHostileTests {
    @Test func differingDuplicateContentLengthIsRejected() {
        let text = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"
        guard case .failed(_, let code) = decode(text) else { Issue.record("accepted"); return }
        #expect(code == .invalidResponse)
    }

    @Test func chunkedWinsOverContentLengthAndTheConnectionIsNotKept() {
        // RFC 9112 §6.3: Transfer-Encoding overrides Content-Length; curl reads it as chunked.
        let text = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        for splits in [[], [20], [40, 60]] {
            #expect(decode(text, splits: splits) == .complete([
                .head(200, ["Content-Length: 5", "Transfer-Encoding: chunked"]), .body(Array("abc".utf8)),
                .end(trailers: nil, keepAlive: false),
            ], consumed: text.utf8.count), "splits \(splits)")
        }
    }

    @Test func bareLineFeedsEndLinesOfTheHead() {
        // RFC 9112 §2.2: a recipient may take a lone LF as a line end; curl does.
        let text = "HTTP/1.1 200 OK\nContent-Length: 3\nX-A: b\n\nabcHTTP/1.1"
        let expected = DecodeOutcome.complete([.head(200, ["Content-Length: 3", "X-A: b"]), .body(Array("abc".utf8)),
                                               .end(trailers: nil, keepAlive: true)], consumed: 45)
        for split in 0..<text.utf8.count {
            #expect(decode(text, splits: split == 0 ? [] : [split]) == expected, "split at \(split)")
        }
        let mixed = "HTTP/1.1 204 No Content\r\nX-A: b\nX-B: c\r\n\n"
        #expect(decode(mixed) == .complete([.head(204, ["X-A: b", "X-B: c"]), .end(trailers: nil, keepAlive: true)],
                                           consumed: mixed.utf8.count))
    }

    @Test func interimHeadsWithBareLineFeeds() {
        let text = "HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\nContent-Length: 2\n\nok"
        for splits in [[], [10], [23], [24], [30, 50]] {
            #expect(decode(text, splits: splits) == .complete([
                .informational(100), .head(200, ["Content-Length: 2"]), .body(Array("ok".utf8)), .end(trailers: nil, keepAlive: true),
            ], consumed: text.utf8.count), "splits \(splits)")
        }
        let crlfThenBare = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\nContent-Length: 2\n\nok"
        #expect(decode(crlfThenBare) == .complete([
            .informational(100), .head(200, ["Content-Length: 2"]), .body(Array("ok".utf8)), .end(trailers: nil, keepAlive: true),
        ], consumed: crlfThenBare.utf8.count))
    }

    @Test func repeatedIdenticalContentLengthIsOneLength() {
        // RFC 9110 §8.6: identical values, as fields or as a list, may be taken as one.
        for (fields, text) in [
            (["Content-Length: 2"], "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"),
            (["Content-Length: 2"], "HTTP/1.1 200 OK\r\nContent-Length: 2, 02,2\r\n\r\nok"),
            (["Content-Length: 2", "X-A: b"], "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nX-A: b\r\nContent-Length:2\r\n\r\nok"),
        ] {
            let outcome = decode(text)
            guard case .complete(let events, let consumed) = outcome else { Issue.record("\(text.debugDescription): \(outcome)"); continue }
            #expect(consumed == text.utf8.count)
            #expect(events.count == 3 && events[1] == .body(Array("ok".utf8)), "\(text.debugDescription)")
            if case .head(200, let got) = events.first {
                #expect(got.map { $0.lowercased() } == fields.map { $0.lowercased() }, "\(text.debugDescription)")
            } else {
                Issue.record("no head: \(events)")
            }
        }
        for text in ["HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok", "HTTP/1.1 200 OK\r\nContent-Length: 2,\r\n\r\nok",
                     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: +2\r\n\r\nok"] {
            guard case .failed(_, let code) = decode(text) else { Issue.record("accepted \(text.debugDescription)"); continue }
            #expect(code == .invalidResponse, "\(text.debugDescription)")
        }
    }

    @Test func aContentLengthPastAnyCountIsIgnored() {
        // curl: "overflow content-length" — the body ends at the close; the head still shows it.
        let text = "HTTP/1.1 200 OK\r\nContent-Length: 36893488147419103232\r\n\r\nabc"
        #expect(decode(text, eof: true) == .endOfInput([
            .head(200, ["Content-Length: 36893488147419103232"]), .body(Array("abc".utf8)), .end(trailers: nil, keepAlive: false),
        ], eofComplete: true))
        // Beside a readable one, the readable one frames the body; the connection is not kept.
        let both = "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\nContent-Length: 2\r\n\r\nokHTTP"
        guard case .complete(let events, let consumed) = decode(both) else { Issue.record("\(decode(both))"); return }
        #expect(consumed == both.utf8.count - 4 && events.contains(.body(Array("ok".utf8))))
        #expect(events.last == .end(trailers: nil, keepAlive: false))
        // Past 2^63 − 1 but within what llhttp counts: the same.
        let big = "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\nabc"
        #expect(decode(big, eof: true) == .endOfInput([
            .head(200, ["Content-Length: 9223372036854775808"]), .body(Array("abc".utf8)), .end(trailers: nil, keepAlive: false),
        ], eofComplete: true))
        // Not digits, or negative: refused as before.
        for value in ["-1", "1e9", "9223372036854775808x", "1 99999999999999999999"] {
            guard case .failed = decode("HTTP/1.1 200 OK\r\nContent-Length: \(value)\r\n\r\n") else { Issue.record("accepted \(value)"); continue }
        }
    }

    /// What a hostile server might send around a repaired head stays bounded and flat.
    @Test func hostileHeadsAroundTheRepair() {
        // Empty lines before a bare-LF head: skipped, as llhttp skips them (this once
        // recursed once per two bytes).
        let padded = String(repeating: "\n", count: 60_000) + "HTTP/1.1 200 OK\nX: y\nContent-Length: 2\n\nok"
        guard case .complete(let events, _) = decode(padded) else { Issue.record("\(decode(padded))"); return }
        #expect(events.first == .head(200, ["X: y", "Content-Length: 2"]))
        let crlfFirst = "\r\n\r\nHTTP/1.1 200 OK\nContent-Length: 2\n\nok"
        for split in [0, 2, 4, 10] {
            guard case .complete = decode(crlfFirst, splits: [split]) else { Issue.record("split \(split): \(decode(crlfFirst, splits: [split]))"); continue }
        }
        // Bytes llhttp skips without counting them still meet the head's limit.
        let limits = ResponseHeadLimits(maxHeaderBytes: 1024)
        let spaces = "HTTP/1.1 200 OK\r\nX:" + String(repeating: " ", count: 20_000)
        #expect(decode(spaces, splits: Array(stride(from: 100, to: 20_000, by: 100)), limits: limits) == .failed([], .headerTooLarge))
        let blank = String(repeating: "\r\n", count: 10_000)
        #expect(decode(blank, splits: Array(stride(from: 100, to: 20_000, by: 100)), limits: limits) == .failed([], .headerTooLarge))
        // A bare-LF head trickled a byte at a time: repaired once at its end.
        let trickled = "HTTP/1.1 200 OK\n" + String(repeating: "X-A: b\n", count: 500) + "Content-Length: 2\n\nok"
        guard case .complete = decode(trickled, splits: Array(1..<trickled.utf8.count)) else { Issue.record("trickled"); return }
        // A Content-Length spelled with a CR for its hyphen is not one.
        guard case .failed = decode("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent\rLength: 2\r\n\r\nok") else {
            Issue.record("accepted a CR in a field name"); return
        }
    }

    @Test func chunkExtensionsAreBoundedPerLine() {
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        let long = head + "3;x=" + String(repeating: "a", count: 20_000) + "\r\nabc\r\n0\r\n\r\n"
        for splits in [[], [100, 5000, 15000]] {
            guard case .failed(_, let code) = decode(long, splits: splits) else { Issue.record("accepted 20 KB of extensions"); continue }
            #expect(code == .chunkLineTooLong)
        }
        // Empty extensions and leading zeros pass llhttp no bytes to count: still bounded.
        for line in [String(repeating: ";", count: 40_000), "=" + String(repeating: ";=", count: 20_000)] {
            guard case .failed(_, let code) = decode(head + "1" + line + "\r\nx\r\n0\r\n\r\n", splits: [60, 5000]) else {
                Issue.record("accepted \(line.prefix(4))…"); continue
            }
            #expect(code == .chunkLineTooLong || code == .invalidResponse, "refused either way")
        }
        let zeros = head + String(repeating: "0", count: 200_000) + "1\r\nx\r\n0\r\n\r\n"
        guard case .failed(_, let code) = decode(zeros, splits: Array(stride(from: 100, to: 200_000, by: 4096))) else {
            Issue.record("accepted 200,000 leading zeros"); return
        }
        #expect(code == .chunkLineTooLong)
        // A stream of one-byte chunks is real: its framing is five times its data.
        let tiny = head + String(repeating: "1\r\nx\r\n", count: 30_000) + "0\r\n\r\n"
        guard case .complete = decode(tiny, splits: Array(stride(from: 100, to: 180_000, by: 1000))) else { Issue.record("refused tiny chunks"); return }
        // Many lines, each under the bound: the count starts again on every line.
        let line = ";name=" + String(repeating: "v", count: 10_000)
        let many = head + (0..<5).map { _ in "1\(line)\r\nx\r\n" }.joined() + "0\r\n\r\n"
        guard case .complete(let events, _) = decode(many) else { Issue.record("\(decode(many))"); return }
        #expect(events.contains(.body(Array("xxxxx".utf8))))
    }

    /// A chunk size past 2^63 − 1 fits llhttp's unsigned count but no signed one (curl's
    /// included): it is refused as soon as its line is read, and not one byte after that line
    /// — the framing llhttp would take for data — reaches the delegate, however the bytes are
    /// cut. The data of an earlier, sane chunk still does.
    @Test func chunkSizesPastASignedCountAreRefused() throws {
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        let fields = DecoderEvent.head(200, ["Transfer-Encoding: chunked"])
        for size in ["ffffffffffffffff", "FFFFFFFFFFFFFFFF", "8000000000000000", "0000ffffffffffffffff", "8000000000000000;ext=1"] {
            expectEverySplit(head + size + "\r\nhello\r\n0\r\n\r\n", eof: true, .failed([fields], .invalidResponse))
            expectEverySplit(head + "5\r\nfirst\r\n" + size + "\r\nhello\r\n0\r\n\r\n", eof: true,
                             .failed([fields, .body(Array("first".utf8))], .invalidResponse))
        }
        // The error says what was refused, and where.
        let decoder = ResponseDecoder()
        let delegate = RecordingDelegate()
        decoder.delegate = delegate
        decoder.prepareForNextResponse(expectNoBody: false)
        let bytes = Array((head + "ffffffffffffffff\r\nhello\r\n0\r\n\r\n").utf8)
        let error = try #require(throws: TransportError.self) { try bytes.withUnsafeBytes { try decoder.feed($0) } }
        #expect(error.code == .invalidResponse && error.phase == .readBody)
        #expect(error.detail == "chunk size ffffffffffffffff (hex) is larger than 7fffffffffffffff, the largest this client counts")
        #expect(delegate.events == [fields])
    }

    /// The largest signed count is still a size: its chunk is read as data, and a connection
    /// that closes long before its end is a body cut short, as with any other chunk.
    @Test func theLargestSignedChunkSizeIsReadAsData() {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\nhello\r\n0\r\n\r\n"
        expectEverySplit(text, eof: true, .failed([.head(200, ["Transfer-Encoding: chunked"]), .body(Array("hello\r\n0\r\n\r\n".utf8))],
                                                  .truncatedBody))
        guard case .endOfInput(let events, eofComplete: false) = decode(text) else { Issue.record("\(decode(text))"); return }
        #expect(events.count == 2, "still waiting for the chunk's data: \(events)")
    }

    @Test func interimResponsesAreBounded() {
        let many = String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 40) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        guard case .failed(_, let code) = decode(many) else { Issue.record("accepted 40 interim heads"); return }
        #expect(code == .headerTooLarge)
        let few = String(repeating: "HTTP/1.1 103 Early Hints\nLink: </a>\n\n", count: 5) + "HTTP/1.1 200 OK\nContent-Length: 0\n\n"
        guard case .complete(let events, _) = decode(few) else { Issue.record("\(decode(few))"); return }
        #expect(events.filter { $0 == .informational(103) }.count == 5)
    }

    @Test func aStatusCodeHasThreeDigits() {
        for text in ["HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 099 Low\r\n\r\n"] {
            guard case .failed(_, let code) = decode(text) else { Issue.record("accepted \(text.debugDescription)"); continue }
            #expect(code == .notHTTPResponse, "\(text.debugDescription)")
        }
    }

    @Test func aHeadCutShortByCloseIsTruncated() {
        #expect(decode("HTTP/1.1 200 OK\nContent-Length: 3\n", eof: true) == .failed([], .truncatedHead))
        #expect(decode("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n", eof: true) == .failed([], .truncatedHead))
    }

    /// llhttp takes a response's field name with a space in it (`X-A : b`, `Bad Name`); the
    /// decoder refuses it, in the head and in trailers, however the bytes are cut.
    @Test func aFieldNameIsAToken() {
        for text in ["HTTP/1.1 200 OK\r\nX-A : b\r\nContent-Length: 0\r\n\r\n",
                     "HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 0\r\n\r\n"] {
            for split in [0, 20, 21, 22] {
                guard case .failed(_, let code) = decode(text, splits: [split]) else {
                    Issue.record("accepted \(text.debugDescription) cut at \(split)"); continue
                }
                #expect(code == .invalidResponse)
            }
        }
        let trailer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nBad Trailer: x\r\n\r\n"
        guard case .failed(let events, .invalidResponse) = decode(trailer) else { Issue.record("\(decode(trailer))"); return }
        #expect(events.first == .head(200, ["Transfer-Encoding: chunked"]))
    }

    @Test func whatIsNotRepairableStaysRefused() {
        for text in ["HTTP/1.1 200 OK\nBad Name: x\n\n", "HTTP/1.1 200 OK\r\nX-A: b\rc\r\n\r\n", "HTTP/1.1 200 OK\nX: \u{1}\n\n"] {
            guard case .failed = decode(text) else { Issue.record("accepted \(text.debugDescription)"); continue }
        }
    }

    @Test func notHTTPAtAll() {
        for text in ["SPAM\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/2.5 200 OK\r\n\r\n", "hello world"] {
            guard case .failed(_, let code) = decode(text) else { Issue.record("accepted \(text.debugDescription)"); continue }
            #expect(code == .notHTTPResponse, "\(text.debugDescription)")
        }
    }

    @Test func transferCodingsOtherThanChunkedAreRefused() {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
        guard case .failed(_, let code) = decode(text) else { Issue.record("accepted"); return }
        #expect(code == .unsupportedEncoding)
        let fine = "HTTP/1.1 200 OK\r\nTransfer-Encoding:  Chunked \r\n\r\n2\r\nok\r\n0\r\n\r\n"
        guard case .complete = decode(fine) else { Issue.record("rejected chunked"); return }
    }

    @Test func closeAfterOnlyInterimResponsesIsAnEmptyReply() {
        #expect(decode("HTTP/1.1 100 Continue\r\n\r\n", eof: true) == .failed([.informational(100)], .emptyResponse))
    }

    @Test func garbageIsRejected() {
        for text in ["HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
                     "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n"] {
            guard case .failed(_, let code) = decode(text) else { Issue.record("accepted \(text.debugDescription)"); continue }
            #expect(code == .invalidResponse, "\(text.debugDescription)")
        }
    }

    @Test func headerBytesLimit() {
        let text = "HTTP/1.1 200 OK\r\nX-Big: " + String(repeating: "a", count: 200) + "\r\n\r\n"
        let limits = ResponseHeadLimits(maxHeaderBytes: 100, maxHeaderCount: 10)
        guard case .failed(_, let code) = decode(text, limits: limits) else { Issue.record("accepted"); return }
        #expect(code == .headerTooLarge)
        guard case .failed(_, let split) = decode(text, splits: Array(1..<text.utf8.count), limits: limits) else {
            Issue.record("accepted bytewise"); return
        }
        #expect(split == .headerTooLarge)
    }

    @Test func headerCountLimit() {
        var text = "HTTP/1.1 200 OK\r\n"
        for i in 0..<11 { text += "X-\(i): v\r\n" }
        text += "Content-Length: 0\r\n\r\n"
        let limits = ResponseHeadLimits(maxHeaderBytes: 10_000, maxHeaderCount: 10)
        guard case .failed(_, let code) = decode(text, limits: limits) else { Issue.record("accepted"); return }
        #expect(code == .tooManyHeaders)
    }

    @Test func defaultLimitsAcceptLargeButSaneHeads() {
        var text = "HTTP/1.1 200 OK\r\n"
        for i in 0..<999 { text += "X-\(i): v\r\n" }
        text += "Content-Length: 0\r\n\r\n"
        guard case .complete = decode(text) else { Issue.record("rejected 1000 fields"); return }
    }

    @Test func endOfStreamErrors() {
        #expect(decode("", eof: true) == .failed([], .emptyResponse))
        #expect(decode("HTTP/1.1 200 OK\r\nContent-Le", eof: true) == .failed([], .truncatedHead))
        let truncated = decode("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", eof: true)
        #expect(truncated == .failed([.head(200, ["Content-Length: 10"]), .body(Array("abc".utf8))], .truncatedBody))
        let chunked = decode("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", eof: true)
        #expect(chunked == .failed([.head(200, ["Transfer-Encoding: chunked"]), .body(Array("abc".utf8))], .truncatedBody))
    }

    @Test func switchingProtocolsIsRefused() {
        let text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"
        guard case .failed(_, let code) = decode(text) else { Issue.record("accepted"); return }
        #expect(code == .invalidResponse)
    }

    /// Refused the same when its head needs repair (bare LF line ends), however it is split:
    /// the repaired head was parsed on its own, where llhttp ends at the head without pausing
    /// for the upgrade, and the 101 passed for an interim response. (Found by fuzzing.)
    @Test func switchingProtocolsIsRefusedInARepairedHead() {
        let text = "HTTP/1.1 101 Switching Protocols\nUpgrade: h2c\n\nHTTP/1.1 200 OK\nContent-Length: 2\n\nok"
        let whole = decode(text)
        #expect(whole == .failed([], .invalidResponse), "\(whole)")
        for offset in 1..<text.utf8.count {
            let split = decode(text, splits: [offset])
            #expect(split == .failed([], .invalidResponse), "split at \(offset): \(split)")
        }
    }
}
