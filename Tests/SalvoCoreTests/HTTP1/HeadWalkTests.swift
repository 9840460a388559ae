import Testing
@testable import SalvoCore
import SalvoTransport

/// The one-pass reader of accepted heads, step by step, without sockets.
@Suite struct HeadWalkTests {
    /// The steps of walking `text`, as readable strings, and the line each came from.
    func steps(_ text: String) -> [(String, Int)] {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { raw in
            var walk = HeadWalk(raw)
            var steps: [(String, Int)] = []
            func string(_ bytes: UnsafeRawBufferPointer) -> String { String(decoding: bytes, as: UTF8.self) }
            for _ in 0..<64 {
                switch walk.next() {
                case .field(let name, let value): steps.append(("\(string(name))=\(string(value))", walk.line))
                case .fieldName(let name): steps.append(("name \(string(name))", walk.line))
                case .fieldValue(let piece): steps.append(("value \(string(piece))", walk.line))
                case .fieldComplete: steps.append(("complete", walk.line))
                case .end:
                    steps.append(("end", walk.line))
                    return steps
                case .malformed(let reason):
                    steps.append(("malformed: \(reason)", walk.line))
                    return steps
                }
            }
            return steps + [("did not end", walk.line)]
        }
    }

    @Test func fieldsOnOneLineComeWhole() {
        let steps = self.steps("\r\nHTTP/1.1 200 OK\r\nContent-Type:  text/plain \r\nX-Empty:\r\nContent-Length: 2\r\n\r\nok")
        #expect(steps.map(\.0) == ["Content-Type=text/plain ", "X-Empty=", "Content-Length=2", "end"])
        #expect(steps.map(\.1) == [19, 47, 57, 76])
    }

    @Test func continuationLinesGoOnTheValueBeforeThem() {
        let steps = self.steps("HTTP/1.1 200 OK\r\nX-Folded: one\r\n two\r\n\t\r\nX-Late:\r\n  late\r\nNext: n\r\n\r\n")
        #expect(steps.map(\.0) == [
            // A continuation is taken whole, whitespace and all (a tab-only line too).
            "name X-Folded", "value one", "value  two", "value \t", "complete",
            // A value still empty takes no whitespace from its continuation.
            "name X-Late", "value late", "complete",
            "Next=n", "end",
        ])
    }

    @Test func aFoldedLastFieldEndsAtTheBlankLine() {
        let steps = self.steps("HTTP/1.1 200 OK\nA: 1\n 2\n\n")
        #expect(steps.map(\.0) == ["name A", "value 1", "value  2", "complete", "end"])
        #expect(steps.last?.1 == 24)
    }

    @Test(arguments: [
        ("HTTP/1.1 200 OK", "no end to the status line", 0),
        ("HTTP/1.1 200 OK\r\nA: 1\r\n", "no end to the head", 23),
        ("HTTP/1.1 200 OK\r\n continued\r\n\r\n", "a continuation line with no field before it", 17),
        ("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "a field line without a colon", 17),
        ("HTTP/1.1 200\rX OK\r\n\r\n", "a CR not followed by LF", 0),
        ("HTTP/1.1 200 OK\r\nA: 1\rB\r\n\r\n", "a CR not followed by LF", 17),
    ])
    func malformedHeadsSayWhereAndWhy(_ text: String, _ reason: String, _ line: Int) {
        let last = self.steps(text).last
        #expect(last?.0 == "malformed: \(reason)" && last?.1 == line)
    }
}
