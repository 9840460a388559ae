import Foundation
@testable import Salvo
import Testing

/// Objects that repeat a key — or whose keys the key strategy maps to one name — decoded by
/// Salvo's JSON decoder and by Foundation's `JSONDecoder` side by side: the same keys, each
/// listed once, and the same value for each.
@Suite struct RepeatedKeyDecodingTests {
    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// What a keyed container shows of an object: its keys (sorted: JSONDecoder's come in no
    /// particular order) and their values, gathered as code commonly does it.
    struct Listing: Decodable, Equatable {
        var keys: [String]
        var values: [String: Int]

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: AnyKey.self)
            let keys = container.allKeys
            self.keys = keys.map(\.stringValue).sorted()
            // Traps on a key listed twice; checked first so that a failure is reported, not a crash.
            guard Set(self.keys).count == self.keys.count else {
                self.values = [:]
                return
            }
            self.values = Dictionary(uniqueKeysWithValues: try keys.map { ($0.stringValue, try container.decode(Int.self, forKey: $0)) })
        }
    }

    struct Pair: Decodable, Equatable {
        var aB: Int
        var present: Int?
        var found: Bool
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: AnyKey.self)
            self.aB = try container.decode(Int.self, forKey: AnyKey(stringValue: "aB"))
            self.present = try container.decodeIfPresent(Int.self, forKey: AnyKey(stringValue: "aB"))
            self.found = container.contains(AnyKey(stringValue: "aB"))
        }
    }

    struct Outer: Decodable, Equatable {
        struct Inner: Decodable, Equatable { var x: Int }
        var inner: Inner
    }

    typealias Outcome = JSONDecodingConformanceTests.Outcome

    func salvo<T: Decodable & Equatable>(_ type: T.Type, _ json: String, _ decoder: JSONDecoder) -> Outcome<T> {
        do {
            let options = try #require(TapeDecoder.Options(decoder, keyMapping: nil))
            let tape = try Array(json.utf8).withUnsafeBytes { try JSONTape($0) }
            return .value(try TapeDecoder(tape: tape, options: options).decodeHere(T.self))
        } catch {
            let (kind, path) = JSONDecodingConformanceTests.kind(error)
            return .failure(kind: kind, path: path)
        }
    }

    func foundation<T: Decodable & Equatable>(_ type: T.Type, _ json: String, _ decoder: JSONDecoder) -> Outcome<T> {
        do {
            return .value(try decoder.decode(T.self, from: Data(json.utf8)))
        } catch {
            let (kind, path) = JSONDecodingConformanceTests.kind(error)
            return .failure(kind: kind, path: path)
        }
    }

    func same<T: Decodable & Equatable>(_ type: T.Type, _ json: String, keys: JSONDecoder.KeyDecodingStrategy = .useDefaultKeys,
                                        sourceLocation: SourceLocation = #_sourceLocation) {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = keys
        let ours = self.salvo(T.self, json, decoder)
        #expect(ours == self.foundation(T.self, json, decoder), "\(json)", sourceLocation: sourceLocation)
        if case .failure = ours { Issue.record("\(json) did not decode: \(ours)", sourceLocation: sourceLocation) }
    }

    @Test func aRepeatedKeyIsListedOnceWithTheValueJSONDecoderGives() {
        let wide = (0..<40).map { "\"k\($0)\": \($0)" }.joined(separator: ", ")   // past the member table threshold
        for json in [#"{"aB": 1, "aB": 2}"#, #"{"aB": 1, "x": 5, "aB": 2, "aB": 3}"#, "{\(wide), \"k7\": 700, \"aB\": 1}"] {
            self.same(Listing.self, json)
            self.same(Pair.self, json)
            self.same([String: Int].self, json)
        }
        self.same(Outer.self, #"{"inner": {"x": 1}, "inner": {"x": 2}}"#)
        self.same(Outer.self, #"{"inner": {"x": 1, "x": 2}}"#)
    }

    /// Two wire keys that the key strategy turns into one name count as a repeated key.
    @Test func keysMappedToOneNameAreListedOnce() {
        for json in [#"{"a_b": 1, "aB": 2}"#, #"{"aB": 1, "a_b": 2}"#, #"{"a_b": 1, "a_b": 2}"#] {
            self.same(Listing.self, json, keys: .convertFromSnakeCase)
            self.same(Pair.self, json, keys: .convertFromSnakeCase)
        }
        let upper = JSONDecoder.KeyDecodingStrategy.custom { path in AnyKey(stringValue: path.last!.stringValue.lowercased()) }
        self.same(Listing.self, #"{"A": 1, "a": 2, "B": 3}"#, keys: upper)
    }

    /// Through a client's coders (a key mapping applied directly): one key, no trap.
    @Test func throughTheClientsCoders() throws {
        let listing = try Coders.json(keys: .snakeCase).decodeJSON(Listing.self, from: Array(#"{"a_b": 1, "aB": 2, "c": 3}"#.utf8))
        #expect(listing.keys == ["aB", "c"])
        #expect(listing.values == ["aB": 1, "c": 3])
    }
}
