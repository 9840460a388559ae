import HTTPTypes
import Testing
@_spi(Benchmarks) import SalvoTransport

/// Fields kept as bytes, and the response head built from them on first use.
@Suite struct FieldRecordsTests {
    /// Writes fields as a parser reports them: each name and value cut into `pieces` parts.
    func records(_ fields: [(String, String)], pieces: Int = 1) -> FieldRecords {
        var records = FieldRecords()
        func feed(_ text: String, _ append: (UnsafeRawBufferPointer) -> Void) {
            let bytes = Array(text.utf8)
            let size = max(1, (bytes.count + pieces - 1) / pieces)
            var start = 0
            while start < bytes.count {
                bytes[start..<min(bytes.count, start + size)].withUnsafeBytes(append)
                start += size
            }
        }
        for (name, value) in fields {
            feed(name) { records.appendNamePiece($0) }
            feed(value) { records.appendValuePiece($0) }
            records.closeField()
        }
        return records
    }

    @Test func piecesMakeTheSameFields() {
        let fields = [("Content-Type", "text/plain"), ("X-Empty", ""), ("Date", "Mon, 23 Nov 2026 00:19:43 GMT"),
                      ("set-cookie", "a=1"), ("Set-Cookie", "b=2")]
        let whole = self.records(fields)
        for pieces in [2, 3, 7] {
            let cut = self.records(fields, pieces: pieces)
            #expect(cut.bytes == whole.bytes, "\(pieces) pieces")
            #expect(cut.count == 5)
        }
        let built = whole.makeFields()
        #expect(built.map { "\($0.name.rawName): \($0.value)" } == fields.map { "\($0.0): \($0.1)" })
    }

    @Test func trailingWhitespaceIsNotPartOfTheValue() {
        let records = self.records([("X-A", "b \t "), ("X-B", " \t")])
        #expect(records.firstValue(for: HTTPField.Name("x-a")!) == "b")
        #expect(records.firstValue(for: HTTPField.Name("X-B")!) == "")
    }

    @Test func lookUpsIgnoreCase() {
        let records = self.records([("CONTENT-LENGTH", "13"), ("content-encoding", "gzip"), ("Content-Encoding", "br"),
                                    ("X-^", "caret")])
        #expect(records.firstValue(for: .contentLength) == "13")
        #expect(records.joinedValues(for: .contentEncoding) == "gzip, br")
        #expect(records.contains(.contentEncoding))
        #expect(!records.contains(.location))
        #expect(records.firstValue(for: .location) == nil)
        #expect(records.joinedValues(for: .location) == nil)
        // '^' and '~' differ by the bit that ASCII case folding sets: not the same name.
        #expect(records.firstValue(for: HTTPField.Name("x-~")!) == nil)
        #expect(records.firstValue(for: HTTPField.Name("x-^")!) == "caret")
    }

    @Test func bytesPastASCIIAreKeptAsSent() {
        var records = FieldRecords()
        Array("X-Latin".utf8).withUnsafeBytes { records.appendNamePiece($0) }
        [0x63, 0x61, 0x66, 0xE9].withUnsafeBytes { records.appendValuePiece($0) }  // "caf\xE9", Latin-1
        records.closeField()
        let field = records.makeFields().first
        #expect(field.map { Array($0.value.utf8) } != nil)
        #expect(field?.name.rawName == "X-Latin")
    }

    @Test func compactedKeepsTheFieldsInABufferOfTheirOwn() {
        var records = self.records([("A", "1"), ("B", "2")])
        records.reserveCapacity(4096)
        let kept = records.compacted()
        records.removeAll()
        #expect(records.isEmpty)
        #expect(kept.count == 2)
        #expect(kept.firstValue(for: HTTPField.Name("b")!) == "2")
        #expect(kept.bytes.capacity < 4096)
    }

    @Test func theHeadIsBuiltOnceAndCanBeReplaced() {
        let head = ParsedHead(status: .ok, fields: self.records([("Content-Type", "text/plain")]))
        var response = HTTPClientResponse(parsedHead: head, body: Array("hi".utf8))
        #expect(response.status == .ok)
        #expect(response.headerFields[.contentType] == "text/plain")
        #expect(response.head == head.response)
        response.head.headerFields[.contentType] = "application/json"
        #expect(response.headerFields[.contentType] == "application/json")
        // The parsed head is not changed by a copy that was.
        #expect(head.response.headerFields[.contentType] == "text/plain")
        response.head.status = .notFound
        #expect(response.status == .notFound)
    }
}
