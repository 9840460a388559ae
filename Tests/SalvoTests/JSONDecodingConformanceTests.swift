import Foundation
@testable import Salvo
import SalvoTransport
import Synchronization
import Testing

/// Salvo's JSON decoder against Foundation's `JSONDecoder`, side by side: the same values for
/// valid documents, failures for invalid ones, the same kind of error at the same coding path.
@Suite struct JSONDecodingConformanceTests {
    enum Outcome<T: Equatable>: Equatable {
        case value(T)
        case failure(kind: String, path: String)
    }

    static func kind(_ error: any Error) -> (String, String) {
        switch error {
        case DecodingError.keyNotFound(let key, let context): ("keyNotFound", ClientError.dotted(context.codingPath + [key]))
        case DecodingError.valueNotFound(_, let context): ("valueNotFound", ClientError.dotted(context.codingPath))
        case DecodingError.typeMismatch(_, let context): ("typeMismatch", ClientError.dotted(context.codingPath))
        case DecodingError.dataCorrupted(let context): ("dataCorrupted", ClientError.dotted(context.codingPath))
        default: ("other", "\(error)")
        }
    }

    func salvo<T: Decodable & Equatable>(_ type: T.Type, _ json: String, _ configure: (JSONDecoder) -> Void = { _ in }) -> Outcome<T> {
        let decoder = JSONDecoder()
        configure(decoder)
        do {
            let options = try #require(TapeDecoder.Options(decoder, keyMapping: nil))
            let tape = try Array(json.utf8).withUnsafeBytes { try JSONTape($0) }
            return .value(try TapeDecoder(tape: tape, options: options).decodeHere(T.self))
        } catch {
            let (kind, path) = Self.kind(error)
            return .failure(kind: kind, path: path)
        }
    }

    func foundation<T: Decodable & Equatable>(_ type: T.Type, _ json: String, _ configure: (JSONDecoder) -> Void = { _ in }) -> Outcome<T> {
        let decoder = JSONDecoder()
        configure(decoder)
        do {
            return .value(try decoder.decode(T.self, from: Data(json.utf8)))
        } catch {
            let (kind, path) = Self.kind(error)
            return .failure(kind: kind, path: path)
        }
    }

    func same<T: Decodable & Equatable>(_ type: T.Type, _ json: String, sourceLocation: SourceLocation = #_sourceLocation,
                                        _ configure: (JSONDecoder) -> Void = { _ in }) {
        let ours = self.salvo(T.self, json, configure)
        let theirs = self.foundation(T.self, json, configure)
        #expect(ours == theirs, "\(json)", sourceLocation: sourceLocation)
    }

    struct Everything: Codable, Equatable {
        var bool: Bool
        var int: Int
        var int8: Int8
        var uint16: UInt16
        var int64: Int64
        var uint64: UInt64
        var double: Double
        var float: Float
        var string: String
        var optional: String?
        var missing: Int?
        var nested: [String: [Int]]
        var list: [Double?]
        var kind: Kind
        enum Kind: String, Codable { case a, b }
    }

    @Test func valuesOfEveryKind() {
        let document = """
        {"bool": true, "int": -42, "int8": 127, "uint16": 65535, "int64": -9223372036854775808, "uint64": 18446744073709551615,
         "double": 3.141592653589793, "float": 0.1, "string": "héllo \\"there\\" \\u00e9\\ud83d\\ude00\\n\\t\\/",
         "optional": null, "nested": {"b": [1, 2], "a": []}, "list": [1, null, -2.5e-3, 1E10], "kind": "b"}
        """
        self.same(Everything.self, document)
        guard case .value(let value) = self.salvo(Everything.self, document) else {
            Issue.record("did not decode")
            return
        }
        #expect(value.string == "héllo \"there\" é😀\n\t/")
        #expect(value.uint64 == .max && value.int64 == .min)
    }

    @Test func untypedDocuments() {
        for json in ["null", "true", "0", "-0", "[]", "{}", "\"\"", "[[], {}, [null]]", "{\"a\": {\"b\": {\"c\": [1, \"x\", false]}}}",
                     " \n\t[1 , 2 ]\r\n", "{\"dup\": 1, \"dup\": 2}", "123456789012345678901234567890",
                     "0.1", "2.2250738585072014e-308", "9007199254740993", "[1.7976931348623157e308]"] {
            self.same(JSONValue.self, json)
        }
        // A number out of range is reported as such (JSONDecoder, trying each kind in turn,
        // reports the last try: "expected a dictionary").
        #expect(self.salvo(JSONValue.self, "1e400") == .failure(kind: "dataCorrupted", path: ""))
        #expect(self.salvo(JSONValue.self, "-1e-400") == .failure(kind: "dataCorrupted", path: ""))
        // The value that fails is named, not the array around it.
        guard case .failure(let kind, let path) = self.salvo(JSONValue.self, #"{"list": [1, 1e400]}"#) else {
            Issue.record("1e400 decoded")
            return
        }
        #expect(kind == "dataCorrupted" && path == "list[1]")
    }

    @Test func numbersAtTheEdges() {
        for json in ["127", "128", "-128", "-129", "1.0", "1.5", "1e2", "-0", "0.0", "1e-2", "255.000"] {
            self.same(Int8.self, json)
        }
        for json in ["-1", "-0", "0", "18446744073709551615", "18446744073709551616", "1.8446744073709552e19"] {
            self.same(UInt64.self, json)
        }
        for json in ["3.4028234663852886e38", "3.5e38", "1e-50", "-0.0"] {
            self.same(Float.self, json)
        }
        for json in ["0.1", "0.30000000000000004", "123456.789e-3", "1e308", "1e309", "4.9e-324", "5e-325",
                     "1.00000000000000011102230246251565404236316680908203125", "89255.0e-22", "-2.5e-3", "1E+2"] {
            self.same(Double.self, json)
        }
        self.same(Decimal.self, "1234567890.0987654321")
        // Whole numbers written with a fraction or an exponent, past where a Double is exact.
        for json in ["9007199254740993.0", "1.2345678901234567e18", "9.223372036854775808e18", "12.30e1", "0.05e2",
                     "1.23e1", "0e400", "-0.0e5"] {
            self.same(Int64.self, json)
        }
        // Exact where JSONDecoder goes through a Double and rounds: the edges of Int64 are
        // whole numbers, 1e-400 is not.
        #expect(self.salvo(Int64.self, "-9223372036854775808.0") == .value(.min))
        #expect(self.salvo(Int64.self, "9223372036854775807e0") == .value(.max))
        #expect(self.salvo(Int64.self, "1e-400") == .failure(kind: "dataCorrupted", path: ""))
        for json in ["1.000000178813934326171874999", "16777217.0", "1.17549435e-38", "1e-46", "null", "\"x\""] {
            self.same(Float.self, json)
        }
        self.same(Int64.self, "100000000000000000000e-2")
        for json in ["-0.0", "-0e5", "-0.5", "-1.0"] {
            self.same(UInt32.self, json)
        }
    }

    /// A class whose parent decodes from the `"super"` member, as Codable's inheritance does.
    class Base: Decodable, Equatable {
        var id: Int
        static func == (a: Base, b: Base) -> Bool { a.id == b.id && type(of: a) == type(of: b) }
    }

    final class Derived: Base {
        var name = ""
        enum Keys: String, CodingKey { case name }
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            self.name = try container.decode(String.self, forKey: .name)
            try super.init(from: container.superDecoder())
        }
        static func == (a: Derived, b: Derived) -> Bool { a.id == b.id && a.name == b.name }
    }

    @Test func documentsJSONDecoderAlsoTakes() {
        self.same(Derived.self, #"{"name": "a", "super": {"id": 1}}"#)
        self.same(Derived.self, #"{"name": "a"}"#)
        // Large objects (looked up through a table), first of repeated keys, Int-keyed dictionaries.
        let members = (0..<40).map { "\"k\($0)\": \($0)" }.joined(separator: ", ")
        self.same([String: Int].self, "{\(members), \"k3\": 99}")
        self.same([Int: Int].self, "{\(members.replacingOccurrences(of: "k", with: ""))}")
        struct Wide: Decodable, Equatable { var k0: Int; var k39: Int; var k17: Int; var missing: Int? }
        self.same(Wide.self, "{\(members), \"k17\": 1000}")
        self.same(Wide.self, "{\(members.replacingOccurrences(of: "\"k39\": 39", with: "\"k39\": \"x\""))}")
    }

    @Test func keysInAnotherNormalization() {
        struct Accented: Decodable, Equatable {
            var café: Int
            enum CodingKeys: String, CodingKey { case café = "caf\u{E9}" }
        }
        self.same(Accented.self, "{\"cafe\u{301}\": 1}")
        self.same(Accented.self, "{\"caf\u{E9}\": 2}")
        let wide = (0..<40).map { "\"k\($0)\": \($0)" }.joined(separator: ", ")
        self.same(Accented.self, "{\(wide), \"cafe\u{301}\": 3}")
    }

    @Test func theClientsCodersTakeWhatJSONDecoderTakes() throws {
        struct Pair: Decodable, Equatable { var a: Int; var b: String }
        let coders = Coders()
        let plain = Array(#"{"a": 1, "b": "é"}"#.utf8)
        #expect(try coders.decodeJSON(Pair.self, from: [0xEF, 0xBB, 0xBF] + plain) == Pair(a: 1, b: "é"))
        let utf16 = Array(#"{"a": 1, "b": "é"}"#.data(using: .utf16BigEndian)!)
        #expect(try coders.decodeJSON(Pair.self, from: utf16) == Pair(a: 1, b: "é"))
        // A large object, decoded key by key through allKeys (an Int-keyed dictionary): linear.
        let big = "{" + (0..<50_000).map { "\"\($0)\": \($0)" }.joined(separator: ",") + "}"
        let table = try coders.decodeJSON([Int: Int].self, from: Array(big.utf8))
        #expect(table.count == 50_000 && table[49_999] == 49_999)
        // A decoder put in place of the one made for a key mapping drops the mapping.
        struct Snaked: Decodable, Equatable { var userName: String? }
        var mapped = Coders.json(keys: .snakeCase)
        #expect(try mapped.decodeJSON(Snaked.self, from: Array(#"{"user_name": "a"}"#.utf8)) == Snaked(userName: "a"))
        mapped.decoder = JSONDecoder()
        #expect(try mapped.decodeJSON(Snaked.self, from: Array(#"{"user_name": "a"}"#.utf8)) == Snaked(userName: nil))
        // A strategy replaced on the same decoder object wins over the mapping made for the old one.
        let inPlace = Coders.json(keys: .snakeCase)
        inPlace.decoder.keyDecodingStrategy = .custom { path in AnyCodingKey(path.last!.stringValue == "NAME" ? "userName" : "other") }
        #expect(try inPlace.decodeJSON(Snaked.self, from: Array(#"{"NAME": "b", "user_name": "a"}"#.utf8)) == Snaked(userName: "b"))
    }

    @Test func invalidDocumentsFailBoth() {
        // Like JSONDecoder, Salvo takes a comma before a closing bracket.
        self.same(JSONValue.self, "{\"a\":1,}")
        self.same(JSONValue.self, "[1, 2 , ]")
        let invalid = ["", " ", "[", "]", "{", "{\"a\"}", "{\"a\":}", "[,]", "{,}", "[1,,]", "[1 2]", "01", "-", "1.", ".5", "1e", "+1",
                       "tru", "nul", "True", "\"abc", "\"\\x\"", "\"\\u12\"", "\"a\u{01}b\"", "{a:1}", "[1]x", "{\"a\":1}}", "NaN",
                       "Infinity", "'a'", "[\"\\ud800\"]", "\"\\udc00\""]
        for json in invalid {
            let ours = self.salvo(JSONValue.self, json)
            let theirs = self.foundation(JSONValue.self, json)
            guard case .failure(let kind, _) = ours else {
                Issue.record("accepted \(json.debugDescription): \(ours)")
                continue
            }
            #expect(kind == "dataCorrupted", "\(json.debugDescription)")
            if case .value = theirs { Issue.record("Foundation accepts \(json.debugDescription), Salvo refuses") }
        }
        // Bytes that are not UTF-8 inside a string.
        var bytes = Array("[\"ab\"]".utf8)
        bytes[3] = 0xFF
        #expect(throws: DecodingError.self) {
            let tape = try bytes.withUnsafeBytes { try JSONTape($0) }
            _ = try TapeDecoder(tape: tape, options: TapeDecoder.Options(JSONDecoder(), keyMapping: nil)!).decodeHere([String].self)
        }
    }

    /// Every special character at every offset of strings of every length up to 40: the scan
    /// looks at eight bytes at a time, so each position of the word must be right.
    @Test func specialCharactersAtEveryOffset() {
        let specials = ["\\\"", "\\\\", "\\n", "\\u00e9", "é", "😀", "\u{7F}", "\u{01}", "\t", "\""]
        for length in 0..<40 {
            for position in 0...length {
                for special in specials {
                    var text = String(repeating: "a", count: length)
                    text.insert(contentsOf: special, at: text.index(text.startIndex, offsetBy: position))
                    self.same(String.self, "\"" + text + "\"")
                }
            }
        }
    }

    @Test func deepNestingIsRefusedNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        guard case .failure(let kind, _) = self.salvo(JSONValue.self, deep) else {
            Issue.record("a document nested 100000 deep decoded")
            return
        }
        #expect(kind == "dataCorrupted")
        let fine = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        self.same(JSONValue.self, fine)
    }

    /// A `JSONValue` is built with a stack of its own: a document as deep as the decoder takes
    /// (512 levels, arrays and objects in turn) decodes on a thread with a 128 KiB stack, where
    /// decoding it by recursion overflowed (seen under AddressSanitizer, at 500 levels, on a
    /// test thread's stack). The same document, values and all, as Foundation's; a failure
    /// deep inside is reported at its whole path.
    @Test func deepDocumentsDecodeWithoutTheThreadsStack() throws {
        func document(depth: Int, leaf: String) -> String {
            var text = ""
            for level in 0..<depth { text += level % 2 == 0 ? "[1, " : #"{"a": 1, "k": "# }
            text += leaf
            for level in (0..<depth).reversed() { text += level % 2 == 0 ? "]" : "}" }
            return text
        }
        let deep = document(depth: 511, leaf: #""end""#)
        self.same(JSONValue.self, deep)
        // A number out of range, deep inside: reported where it is (Foundation, decoding a
        // JSONValue by trial, reports only that no type fits the top).
        #expect(self.salvo(JSONValue.self, document(depth: 5, leaf: "1e400")) == .failure(kind: "dataCorrupted", path: "[1].k[1].k[1]"))
        self.same(JSONValue.self, #"{"a": 1, "a": {"b": [true, null]}, "c": [[], {}]}"#)   // the first "a" stands
        let decoded = Mutex<Outcome<JSONValue>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            decoded.withLock { $0 = self.salvo(JSONValue.self, deep) }
            done.signal()
        }
        thread.stackSize = 128 * 1024
        thread.start()
        done.wait()
        guard case .value(var value) = try #require(decoded.withLock { $0 }) else {
            Issue.record("a 511-deep document did not decode")
            return
        }
        var levels = 0
        while true {
            switch value {
            case .array(let elements): value = elements[1]
            case .object(let members): value = members["k"]!
            default:
                #expect(levels == 511 && value == .string("end"))
                return
            }
            levels += 1
        }
    }

    struct Outer: Codable, Equatable {
        struct Inner: Codable, Equatable { var value: Int; var label: String }
        var items: [Inner]
        var count: Int
    }

    @Test func errorsAtTheSamePath() {
        self.same(Outer.self, #"{"items": [{"value": 1, "label": "a"}, {"value": "2", "label": "b"}], "count": 2}"#)
        self.same(Outer.self, #"{"items": [{"value": 1}], "count": 2}"#)
        self.same(Outer.self, #"{"items": [{"value": null, "label": "a"}], "count": 2}"#)
        self.same(Outer.self, #"{"items": {}, "count": 2}"#)
        self.same(Outer.self, #"{"items": []}"#)
        self.same(Outer.self, #"[1, 2]"#)
        self.same([Int].self, #"[1, 2, "three"]"#)
        self.same([String: Int].self, #"{"a": 1, "b": true}"#)
        self.same(Outer.Inner.self, #"{"value": 1, "label": "a", "value": 2}"#)
        self.same([String: Int].self, #"{"a": 1, "a": 2}"#)
    }

    /// Reads through nested containers taken before use, and records the coding path each
    /// nested decoder reports, so a wrong path shows as a different value, not only in errors.
    struct Handmade: Decodable, Equatable {
        var first: Outer.Inner
        var second: [Outer.Inner]
        var wrapped: Wrapped
        var paths: [String]

        struct Wrapped: Decodable, Equatable {
            var value: Int
            var path: String
            init(from decoder: any Decoder) throws {
                self.path = ClientError.dotted(decoder.codingPath)
                self.value = try decoder.singleValueContainer().decode(Int.self)
            }
        }

        enum Keys: String, CodingKey { case outer, list, wrapped }
        enum InnerKeys: String, CodingKey { case first, second }

        init(from decoder: any Decoder) throws {
            let top = try decoder.container(keyedBy: Keys.self)
            let outer = try top.nestedContainer(keyedBy: InnerKeys.self, forKey: .outer)
            var list = try top.nestedUnkeyedContainer(forKey: .list)
            self.wrapped = try top.decode(Wrapped.self, forKey: .wrapped)
            // Taken first, used after another container has moved the decoder elsewhere.
            self.first = try outer.decode(Outer.Inner.self, forKey: .first)
            var second: [Outer.Inner] = []
            while !list.isAtEnd { second.append(try list.decode(Outer.Inner.self)) }
            self.second = second
            self.paths = [ClientError.dotted(outer.codingPath), ClientError.dotted(list.codingPath),
                          ClientError.dotted(try outer.superDecoder(forKey: .second).codingPath)]
        }
    }

    @Test func nestedContainersKeepTheirPaths() {
        let good = #"{"outer": {"first": {"value": 1, "label": "a"}, "second": 2}, "list": [{"value": 2, "label": "b"}], "wrapped": 7}"#
        self.same(Handmade.self, good)
        self.same(Handmade.self, #"{"outer": {"first": {"value": "x", "label": "a"}}, "list": [], "wrapped": 7}"#)
        self.same(Handmade.self, #"{"outer": {"first": {"value": 1, "label": "a"}}, "list": [{"value": 1}], "wrapped": 7}"#)
        self.same(Handmade.self, #"{"outer": {"first": {"value": 1, "label": "a"}}, "list": [], "wrapped": "7"}"#)
        self.same([[Outer.Inner]].self, #"[[{"value": 1, "label": "a"}], [{"value": 1, "label": 2}]]"#)
        self.same([String: [Outer.Inner]].self, #"{"k": [{"value": 1, "label": "a"}, {"value": true, "label": "b"}]}"#)
    }

    struct Snake: Codable, Equatable {
        var userID: Int
        var emailAddress: String
        var _private_thing: Bool?
        var counts: [String: Int]
    }

    struct Dated: Codable, Equatable {
        var at: Date
        var blob: Data
        var link: URL
        var ratio: Double
    }

    @Test func strategies() {
        let snake = #"{"user_id": 1, "email_address": "a@b", "_private_thing": true, "counts": {"some_key": 1}}"#
        self.same(Snake.self, snake) { $0.keyDecodingStrategy = .convertFromSnakeCase }
        self.same(Snake.self, #"{"userID": 1, "emailAddress": "a@b", "counts": {}}"#) { $0.keyDecodingStrategy = .convertFromSnakeCase }
        self.same(Snake.self, #"{"USERID": 1, "EMAILADDRESS": "x", "COUNTS": {"k": 2}}"#) {
            $0.keyDecodingStrategy = .custom { path in
                let last = path.last!.stringValue
                return AnyKey(stringValue: ["USERID": "userID", "EMAILADDRESS": "emailAddress", "COUNTS": "counts"][last] ?? last)
            }
        }
        let dated = #"{"at": 1700000000.5, "blob": "AAEC/w==", "link": "https://example.com/a?b=c", "ratio": "+inf"}"#
        self.same(Dated.self, dated) {
            $0.dateDecodingStrategy = .secondsSince1970
            $0.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        }
        self.same(Dated.self, dated)   // "+inf" without the strategy: an error in both
        self.same(Dated.self, #"{"at": "2026-11-22T10:00:00Z", "blob": [1, 2], "link": "x", "ratio": 1}"#) {
            $0.dateDecodingStrategy = .iso8601
            $0.dataDecodingStrategy = .deferredToData
        }
        self.same(Dated.self, #"{"at": 1700000000123, "blob": "@@@", "link": "x", "ratio": 1}"#) {
            $0.dateDecodingStrategy = .millisecondsSince1970
        }
        self.same(Dated.self, #"{"at": "yesterday", "blob": "", "link": "x", "ratio": 1}"#) {
            $0.dateDecodingStrategy = .custom { decoder in
                let text = try decoder.singleValueContainer().decode(String.self)
                guard text == "yesterday" else { throw DecodingError.dataCorruptedError(in: try decoder.singleValueContainer(), debugDescription: "no") }
                return Date(timeIntervalSince1970: 0)
            }
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Random documents, encoded by Foundation, decoded by both; then each byte flipped.
    @Test func randomDocuments() throws {
        var generator = SeededGenerator(seed: 0x5A17_0)
        let encoder = JSONEncoder()
        for round in 0..<300 {
            let value = Self.randomValue(depth: 0, using: &generator)
            let json = String(decoding: try encoder.encode(value), as: UTF8.self)
            self.same(JSONValue.self, json)
            guard round % 10 == 0, !json.isEmpty else { continue }
            var bytes = Array(json.utf8)
            let position = Int(generator.next() % UInt64(bytes.count))
            bytes[position] = [UInt8(ascii: "{"), UInt8(ascii: "\""), UInt8(ascii: ","), UInt8(ascii: "1"), 0x00, 0xC3][Int(generator.next() % 6)]
            let mutated = String(decoding: bytes, as: UTF8.self)
            let ours = self.salvo(JSONValue.self, mutated)
            let theirs = self.foundation(JSONValue.self, mutated)
            switch (ours, theirs) {
            case (.value(let a), .value(let b)): #expect(a == b, "\(mutated)")
            case (.failure, .failure): break
            default: Issue.record("disagree on \(mutated.debugDescription): \(ours) vs \(theirs)")
            }
        }
    }

    static func randomValue(depth: Int, using generator: inout SeededGenerator) -> JSONValue {
        let choice = generator.next() % (depth > 4 ? 5 : 7)
        switch choice {
        case 0: return .null
        case 1: return .bool(generator.next() % 2 == 0)
        case 2: return .number(Double(Int64(bitPattern: generator.next()) % 1_000_000) / Double(1 + generator.next() % 1000))
        case 3: return .number(Double(Int32(truncatingIfNeeded: generator.next())))
        case 4:
            let alphabet = Array("abc xyz\"\\/\n\t\u{00e9}\u{1F600}\u{0001}{}[],:")
            return .string(String((0..<Int(generator.next() % 12)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }))
        case 5: return .array((0..<Int(generator.next() % 5)).map { _ in Self.randomValue(depth: depth + 1, using: &generator) })
        default:
            var object: JSONValue = [:]
            for index in 0..<Int(generator.next() % 5) { object["k\(index)_\(generator.next() % 7)"] = Self.randomValue(depth: depth + 1, using: &generator) }
            return object
        }
    }
}

/// A small deterministic generator, so a failure can be replayed.
typealias SeededGenerator = SplitMix64
