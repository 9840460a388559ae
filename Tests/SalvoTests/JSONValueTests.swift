import Foundation
@testable import Salvo
import Testing

/// `JSONValue` literals built from variables, and objects that keep their members' order
/// from the literal, through inserts, decoding and writing.
@Suite struct JSONValueTests {
    @Test func literalsTakeVariablesOfEveryKind() {
        let name = "Ada", age = 36, height = 1.65, admin = true
        let tags = ["ops", "compilers"]
        let nickname: String? = nil
        let manager: String? = "Grace"
        let address: JSONValue = ["city": "London"]
        let body: JSONValue = ["name": name, "age": age, "height": height, "admin": admin, "tags": tags,
                               "nickname": nickname, "manager": manager, "address": address, "note": nil,
                               "scores": [age, 40], "nested": ["who": name, "level": 2]]
        #expect(body["name"] == .string("Ada"))
        #expect(body["age"] == .number(36))
        #expect(body["height"] == .number(1.65))
        #expect(body["admin"] == .bool(true))
        #expect(body["tags"] == .array([.string("ops"), .string("compilers")]))
        #expect(body["nickname"] == .null)
        #expect(body["manager"] == .string("Grace"))
        #expect(body["address"]?["city"] == .string("London"))
        #expect(body["note"] == .null)
        #expect(body["scores"] == [36, 40])
        #expect(body["nested"] == ["level": 2, "who": "Ada"])
        let list: JSONValue = [name, age, nil, ["k": admin]]
        #expect(list == .array([.string("Ada"), .number(36), .null, .object(["k": .bool(true)])]))
    }

    @Test func encodingTheSameObjectGivesTheSameBytesInInsertionOrder() throws {
        let zebra = "z", count = 3
        var object: JSONValue = ["zebra": zebra, "apple": 1, "mango": ["kiwi": count, "fig": "f"] as JSONValue, "banana": nil]
        object["cherry"] = true
        object["apple"] = 2   // replaced in place
        let expected = #"{"zebra":"z","apple":2,"mango":{"kiwi":3,"fig":"f"},"banana":null,"cherry":true}"#
        let coders = Coders.json
        for _ in 0..<20 {
            #expect(String(decoding: try coders.encodeJSON(object), as: UTF8.self) == expected)
        }
        object["zebra"] = nil
        #expect(String(decoding: try coders.encodeJSON(object), as: UTF8.self).hasPrefix(#"{"apple":2,"#))
    }

    @Test func aNestedDictionaryLiteralIsWrittenSortedByKey() throws {
        let city = "Paris"
        let body: JSONValue = ["b": 1, "a": ["zip": "75001", "city": city]]
        #expect(String(decoding: try Coders.json.encodeJSON(body), as: UTF8.self) == #"{"b":1,"a":{"city":"Paris","zip":"75001"}}"#)
    }

    @Test func decodingKeepsTheDocumentOrderAndEncodingWritesItBack() throws {
        let document = #"{"z":1,"a":{"y":[1,2.5,"s\"\/\n"],"b":null},"m":true,"k":-7}"#
        let value = try Coders.json.decodeJSON(JSONValue.self, from: Array(document.utf8))
        #expect(value.objectValue.map { Array($0.keys) } == ["z", "a", "m", "k"])
        #expect(String(decoding: try Coders.json.encodeJSON(value), as: UTF8.self) == document)
    }

    @Test func objectsAreEqualWhateverTheirOrder() {
        let one: JSONValue = ["a": 1, "b": 2]
        let other: JSONValue = ["b": 2, "a": 1]
        #expect(one == other)
        #expect(one.hashValue == other.hashValue)
        #expect(Set([one, other]).count == 1)
        #expect(one != ["a": 1, "b": 3])
        #expect(one != ["a": 1])
    }

    @Test func settingMembers() {
        var value: JSONValue = nil
        value["first"] = "x"
        #expect(value == ["first": "x"])
        value["first"] = nil
        #expect(value == [:])
        var text: JSONValue = "plain"
        text["member"] = 1
        #expect(text == "plain")
    }

    @Test func theEncodersFormattingIsHonoured() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let value: JSONValue = ["b": ["/", 1] as JSONValue, "a": [:] as JSONValue]
        #expect(String(decoding: try Coders(encoder: encoder).encodeJSON(value), as: UTF8.self) ==
                "{\n  \"a\" : {},\n  \"b\" : [\n    \"/\",\n    1\n  ]\n}")
        let nan: JSONValue = ["x": Double.nan]
        let error = #expect(throws: ClientError.self) { try Coders.json.encodeJSON(nan) }
        #expect(error?.code == .encodingFailed)
        #expect(error?.codingPath == "x")
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        encoder.outputFormatting = []
        #expect(String(decoding: try Coders(encoder: encoder).encodeJSON(nan), as: UTF8.self) == #"{"x":"nan"}"#)
    }

    @Test func aBodyGoesOutInOrderThroughAnEndpoint() async throws {
        let mock = MockTransport(always: .status(.ok))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        let name = "Ada"
        _ = try await client.send(Endpoint<Empty>.post("/users", body: ["name": name, "id": 7, "active": true] as JSONValue))
        #expect(mock.requests.first?.text == #"{"name":"Ada","id":7,"active":true}"#)
    }

    /// An object from a dictionary variable: its keys in order, so its bytes are stable.
    @Test func anObjectFromADictionary() throws {
        let members: [String: JSONValue] = ["zeta": 1, "alpha": "a", "mid": nil]
        let object = JSONValue(members)
        #expect(String(decoding: try Coders.json.encodeJSON(object), as: UTF8.self) == #"{"alpha":"a","mid":null,"zeta":1}"#)
        #expect(object["alpha"] == "a")
    }
}
