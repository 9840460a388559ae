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

    /// A number read from the bytes: the first value only, digits only, within an Int.
    @Test func numbersAreReadWithoutAString() {
        let cases: [(String, Int?)] = [
            ("0", 0), ("1234", 1234), ("9223372036854775807", Int.max), ("9223372036854775808", nil),
            ("", nil), ("+5", nil), ("-5", nil), ("5 6", nil), ("0x10", nil), ("12a", nil),
        ]
        for (value, expected) in cases {
            #expect(self.records([("Content-Length", value)]).firstNumber(for: .contentLength) == expected, "\(value)")
            #expect(self.records([("Content-Length", value)]).firstNumber(ofTracked: .contentLength) == expected, "\(value)")
        }
        let two = self.records([("content-length", "7"), ("Content-Length", "9")], pieces: 2)
        #expect(two.firstNumber(for: .contentLength) == 7)
        #expect(two.firstNumber(ofTracked: .contentLength) == 7)
        #expect(self.records([("Content-Type", "7")]).firstNumber(for: .contentLength) == nil)
        #expect(self.records([("Content-Type", "7")]).firstNumber(ofTracked: .contentLength) == nil)
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

    @Test func bytesPastASCIIAreKeptAsSent() throws {
        var records = FieldRecords()
        Array("X-Latin".utf8).withUnsafeBytes { records.appendNamePiece($0) }
        ([0x63, 0x61, 0x66, 0xE9] as [UInt8]).withUnsafeBytes { records.appendValuePiece($0) }  // "caf\xE9", Latin-1
        records.closeField()
        let field = try #require(records.makeFields().first)
        #expect(field.name.rawName == "X-Latin")
        #expect(field.withUnsafeBytesOfValue { Array($0) } == [0x63, 0x61, 0x66, 0xE9])
        // A scan shows the value as the built field does.
        #expect(records.firstValue(for: field.name) == field.value)
    }

    @Test func trimmingSeesTheWholeValueHoweverItCame() {
        var records = FieldRecords()
        Array("X-A".utf8).withUnsafeBytes { records.appendNamePiece($0) }
        for piece in ["a ", "b", " \t", " "] { Array(piece.utf8).withUnsafeBytes { records.appendValuePiece($0) } }
        records.closeField()
        #expect(records.firstValue(for: HTTPField.Name("x-a")!) == "a b")
    }

    @Test func oddFieldsAndEmptyRecords() {
        var records = FieldRecords()
        #expect(records.isEmpty)
        #expect(records.firstValue(for: .contentType) == nil)
        #expect(records.joinedValues(for: .contentType) == nil)
        #expect(!records.contains(.contentType))
        #expect(records.makeFields().isEmpty)
        // A field closed with nothing written: an empty name, which is no token.
        let closed = records.closeField()
        #expect(!closed.isToken && closed.tracked.isEmpty)
        records.removeAll()
        records.append(name: "X-Empty", value: "")
        Array("Content-TYPE".utf8).withUnsafeBytes { records.appendNamePiece($0) }
        let untracked = records.closeField()
        #expect(untracked.isToken && untracked.tracked.isEmpty)
        #expect(records.count == 2)
        #expect(records.firstValue(for: HTTPField.Name("x-empty")!) == "")
        #expect(records.makeFields().map(\.value) == ["", ""])
    }

    /// Names short and long, in pieces, past the buffer's first size: the record reads back
    /// the same, and so does the field after it.
    @Test func shortAndLongFirstNamePieces() {
        for length in [1, 20, 63, 64, 65, 256, 1000, 5000] {
            var records = FieldRecords()
            let name = "X" + String(repeating: "n", count: length - 1)
            Array(name.utf8).withUnsafeBytes { records.appendNamePiece($0) }
            Array("-tail".utf8).withUnsafeBytes { records.appendNamePiece($0) }
            Array("value".utf8).withUnsafeBytes { records.appendValuePiece($0) }
            records.closeField()
            records.append(name: "Next", value: "2")
            #expect(records.makeFields().map { "\($0.name.rawName)=\($0.value)" } == ["\(name)-tail=value", "Next=2"], "\(length)")
            #expect(records.firstValue(for: HTTPField.Name("next")!) == "2")
        }
        // An empty first piece opens the field too; the name follows in the next.
        var records = FieldRecords()
        records.appendNamePiece(UnsafeRawBufferPointer(start: nil, count: 0))
        Array("X-Late".utf8).withUnsafeBytes { records.appendNamePiece($0) }
        Array("v".utf8).withUnsafeBytes { records.appendValuePiece($0) }
        #expect(records.closeField().isToken)
        #expect(records.makeFields().map { "\($0.name.rawName)=\($0.value)" } == ["X-Late=v"])
    }

    /// The tracked fields are known in any case, by their names alone (not a prefix, not a
    /// longer name), and asking for one that did not come answers nil without a scan.
    @Test func trackedFieldsAreKnownAsTheyClose() {
        let tracked: [(String, FieldRecords.Tracked, HTTPField.Name)] = [
            ("Content-Length", .contentLength, .contentLength), ("content-ENCODING", .contentEncoding, .contentEncoding),
            ("TRANSFER-encoding", .transferEncoding, .transferEncoding), ("Location", .location, .location),
            ("keep-alive", .keepAlive, HTTPField.Name("Keep-Alive")!), ("CONNECTION", .connection, .connection),
        ]
        for (name, field, fieldName) in tracked {
            var records = FieldRecords()
            records.append(name: "Server", value: "x")
            #expect(!records.contains(fieldName))
            Array(name.utf8).withUnsafeBytes { records.appendNamePiece($0) }
            Array("v".utf8).withUnsafeBytes { records.appendValuePiece($0) }
            #expect(records.closeField().tracked == field, "\(name)")
            #expect(records.tracked == field && records.firstValue(for: fieldName) == "v")
            #expect(records.firstValue(ofTracked: field) == "v", "\(name) by its tracked spelling")
            #expect(records.firstValue(ofTracked: [field, .connection == field ? .location : .connection]) == nil)
            #expect(records.compacted().tracked == field && records.compacted().joinedValues(for: fieldName) == "v")
            records.removeAll()
            #expect(records.tracked.isEmpty && records.firstValue(for: fieldName) == nil)
            #expect(records.firstValue(ofTracked: field) == nil)
        }
        // Longer, shorter, and the same length with one byte off (a length alone is not a name).
        for near in ["Content-Lengths", "Content-Lengt", "Location2", "X-Location", "Keep-Alive ", "Connection:",
                     "Content-Lengtx", "Locatiom", "Content-Encodinx", "Transfer-Encodinx", "Keep-Alivf", "Connectiom"] {
            var records = FieldRecords()
            Array(near.utf8).withUnsafeBytes { records.appendNamePiece($0) }
            #expect(records.closeField().tracked.isEmpty, "\(near)")
        }
        // A field that is not tracked is still found, by a scan.
        var records = FieldRecords()
        records.append(name: "Content-Type", value: "text/plain")
        records.append(name: "content-type", value: "charset=utf-8")
        #expect(records.tracked.isEmpty && records.joinedValues(for: .contentType) == "text/plain, charset=utf-8")
    }

    @Test func aHeadReadFromManyThreadsIsBuiltOnce() async {
        let head = ParsedHead(status: .ok, fields: self.records((0..<40).map { ("X-Field-\($0)", "value \($0)") }))
        let responses = await withTaskGroup(of: HTTPResponse.self) { group in
            for _ in 0..<16 { group.addTask { head.response } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.count == 16)
        #expect(responses.allSatisfy { $0 == responses[0] && $0.headerFields.count == 40 })
    }

    @Test func compactedKeepsTheFieldsInABufferOfTheirOwn() {
        var records = self.records([("A", "1"), ("B", "2")])
        records.reserveCapacity(4096)
        let kept = records.compacted()
        records.removeAll()
        #expect(records.isEmpty)
        #expect(kept.count == 2)
        #expect(kept.firstValue(for: HTTPField.Name("b")!) == "2")
        #expect(kept.capacity < 4096)
    }

    @Test func theHeadIsBuiltOnceAndCanBeReplaced() {
        let head = ParsedHead(status: .ok, fields: self.records([("Content-Type", "text/plain")]))
        var response = CollectedResponse(parsedHead: head, body: Array("hi".utf8), trailers: nil, version: .http1_1,
                                          metrics: TransportMetrics(), extras: ExchangeExtras())
        #expect(response.status == .ok)
        #expect(response.headerFields[.contentType] == "text/plain")
        #expect(response.head == head.response)
        response.head.headerFields[.contentType] = "application/json"
        #expect(response.headerFields[.contentType] == "application/json")
        // The parsed head is not changed by a copy that was.
        #expect(head.response.headerFields[.contentType] == "text/plain")
        response.head.status = .notFound
        #expect(response.status == .notFound)
        // Edited in place again and again, each change kept.
        for index in 0..<3 { response.head.headerFields[HTTPField.Name("X-\(index)")!] = "\(index)" }
        #expect(response.headerFields.count == 4)
    }
}
