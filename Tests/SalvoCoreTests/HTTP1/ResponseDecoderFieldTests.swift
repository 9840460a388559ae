import HTTPTypes
import Testing
@_spi(Benchmarks) @testable import SalvoCore

/// A head's fields are read from its bytes once llhttp has accepted it whole, not piece by
/// piece from llhttp's callbacks: what comes out must be what the callbacks gave — the same
/// values (whitespace and obs-fold as llhttp takes them), the same limits to the byte —
/// however the head is split over reads.
@Suite struct ResponseDecoderFieldTests {
    static let ok = "HTTP/1.1 200 OK\r\n"
    var ok: String { Self.ok }

    func fields(_ fields: [String], body: String = "", consumed: Int) -> DecodeOutcome {
        var events: [DecoderEvent] = [.head(200, fields)]
        if !body.isEmpty { events.append(.body(Array(body.utf8))) }
        events.append(.end(trailers: nil, keepAlive: true))
        return .complete(events, consumed: consumed)
    }

    @Test func whitespaceAroundValues() {
        let text = ok + "X-A:   lead and trail \t \r\nX-E:\r\nX-E2: \t\r\nX-In: a  b  \r\nX-Colon: a:b: c\r\nX-Tab:\tv\t\r\n"
            + "Content-Type:text/plain\r\nContent-Length: 0\r\n\r\n"
        expectEverySplit(text, self.fields([
            "X-A: lead and trail", "X-E: ", "X-E2: ", "X-In: a  b", "X-Colon: a:b: c", "X-Tab: v",
            "Content-Type: text/plain", "Content-Length: 0",
        ], consumed: text.utf8.count))
    }

    /// A line that begins with a space or a tab continues the value before it: its line end
    /// dropped, the line kept whole — unless the value is still empty, when its leading
    /// whitespace goes, as the first line's does.
    @Test func foldedValues() {
        let cases: [(String, [String])] = [
            ("X-A: one\r\n two\r\n", ["X-A: one two"]),
            ("X-A: one  \r\n  two \r\n\tthree\r\n", ["X-A: one    two \tthree"]),
            ("X-A:\r\n two\r\n", ["X-A: two"]),
            ("X-A: \r\n \r\n\t\r\n", ["X-A: "]),
            ("X-A: a\r\n b\r\nX-B: c\r\n\td\r\n", ["X-A: a b", "X-B: c\td"]),
            ("X-A: y\r\n \r\n", ["X-A: y"]),
        ]
        for (lines, expected) in cases {
            let text = ok + lines + "Content-Length: 0\r\n\r\n"
            expectEverySplit(text, self.fields(expected + ["Content-Length: 0"], consumed: text.utf8.count))
        }
        let last = ok + "Content-Length: 0\r\nX-Last: z\r\n \r\n\r\n"
        expectEverySplit(last, self.fields(["Content-Length: 0", "X-Last: z"], consumed: last.utf8.count))
    }

    @Test func foldsInInterimHeadsAndTrailers() {
        let interim = "HTTP/1.1 103 Early Hints\r\nLink: a\r\n b\r\n\r\n" + ok + "Content-Length: 0\r\n\r\n"
        expectEverySplit(interim, .complete([.informational(103), .head(200, ["Content-Length: 0"]),
                                             .end(trailers: nil, keepAlive: true)], consumed: interim.utf8.count))
        let trailers = ok + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-T: a\r\n b\r\n\r\n"
        expectEverySplit(trailers, .complete([.head(200, ["Transfer-Encoding: chunked"]),
                                              .end(trailers: ["X-T: a b"], keepAlive: true)], consumed: trailers.utf8.count))
    }

    @Test func emptyLinesBeforeTheStatusLine() {
        let text = "\r\n\r\n" + ok + "Content-Length: 1\r\n\r\nx"
        expectEverySplit(text, self.fields(["Content-Length: 1"], body: "x", consumed: text.utf8.count))
    }

    /// The reason phrase, each name and each value as llhttp reports it (trailing
    /// whitespace and continuation lines included, line ends and colons not) count against
    /// the limit — 26 bytes in each of these heads.
    @Test(arguments: [Self.ok + "A: 12345 \r\nB: 2\r\nContent-Length: 0\r\n\r\n", Self.ok + "A: 1\r\n 2345\r\nB: 2\r\nContent-Length: 0\r\n\r\n"])
    func theByteLimitCountsWhatItDid(_ text: String) {
        let under = decode(text, limits: ResponseHeadLimits(maxHeaderBytes: 26, maxHeaderCount: 100))
        guard case .complete = under else { Issue.record("refused at its size: \(under)"); return }
        expectEverySplit(text, limits: ResponseHeadLimits(maxHeaderBytes: 25, maxHeaderCount: 100), .failed([], .headerTooLarge))
    }

    @Test func theCountLimitToTheField() {
        let text = ok + "A: 1\r\nB: 2\r\nC: 3\r\nContent-Length: 0\r\n\r\n"
        expectEverySplit(text, limits: ResponseHeadLimits(maxHeaderBytes: 1000, maxHeaderCount: 3), .failed([], .tooManyHeaders))
        expectEverySplit(text, limits: ResponseHeadLimits(maxHeaderBytes: 1000, maxHeaderCount: 4),
                         self.fields(["A: 1", "B: 2", "C: 3", "Content-Length: 0"], consumed: text.utf8.count))
    }

    /// An unfinished head is held to its limit and a margin for line ends and colons; the
    /// exact count is made when it is complete.
    @Test func anEndlessHeadIsCutOff() {
        let limits = ResponseHeadLimits(maxHeaderBytes: 100, maxHeaderCount: 1000)
        let endless = ok + String(repeating: "X-Endless: v\r\n", count: 1000)
        guard case .failed(_, let code) = decode(endless, limits: limits) else { Issue.record("held"); return }
        #expect(code == .headerTooLarge)
        guard case .failed(_, let split) = decode(endless, splits: Array(stride(from: 7, to: endless.utf8.count, by: 7)), limits: limits) else {
            Issue.record("held in pieces"); return
        }
        #expect(split == .headerTooLarge)
    }

    /// Names are tokens; one llhttp lets through in a response ("Bad Name", "X-A ") is
    /// refused wherever it is in the head.
    @Test func aNameThatIsNotATokenAnywhere() {
        for lines in ["Bad Name: v\r\n", "X-A : v\r\n", "X-OK: 1\r\nX\u{e9}: y\r\n", "X-OK: 1\r\nX-A : v\r\n more\r\n"] {
            expectEverySplit(ok + lines + "Content-Length: 0\r\n\r\n", .failed([], .invalidResponse))
        }
    }

    /// A CR must be followed by LF. Some llhttp builds take a CR and swallow the byte after
    /// it at the end of the status line, right after a colon, or in the blank line — and
    /// frame the body by a head other than the one a reader of its lines would see. Refused
    /// (RFC 9112 §2.2), wherever it is.
    @Test func aBareCRIsRefused() {
        for text in [
            "HTTP/1.1 200 OK\rXContent-Length: 2\r\n\r\nab",
            ok + "X:\r Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
            ok + "X:\r\tTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
            ok + "\r\r\nContent-Length: 0\r\nX: y\r\n\r\n",
            ok + "A: b\r\n\rXC: d\r\nContent-Length: 0\r\n\r\n",
            ok + "A: b\r\r\nContent-Length: 0\r\n\r\n",
        ] {
            let outcome = decode(text)
            guard case .failed(let events, let code) = outcome else { Issue.record("accepted: \(text.debugDescription) -> \(outcome)"); continue }
            #expect(events.isEmpty && code == .invalidResponse, "\(text.debugDescription)")
        }
    }
}
