import Foundation
@testable import Salvo
import Testing

/// A type mismatch says where, what was expected and what was found, with a short excerpt.
@Suite struct DecodingErrorDetailTests {
    struct Page: Decodable { var data: Items }
    struct Items: Decodable { var items: [Int] }

    func detail(_ json: String) -> String? {
        do {
            _ = try Coders.json.decodeJSON(Page.self, from: Array(json.utf8))
            return nil
        } catch {
            return error.detail
        }
    }

    @Test func aMismatchSaysWhatWasFound() {
        #expect(self.detail(#"{"data": {"items": "abc"}}"#) == #"Page: wrong type, expected Array<Int> at data.items, found a string "abc""#)
        #expect(self.detail(#"{"data": {"items": 12.5}}"#) == "Page: wrong type, expected Array<Int> at data.items, found a number 12.5")
        #expect(self.detail(#"{"data": {"items": true}}"#) == "Page: wrong type, expected Array<Int> at data.items, found a boolean true")
        #expect(self.detail(#"{"data": {"items": [1, "two"]}}"#) == #"Page: wrong type, expected Int at data.items[1], found a string "two""#)
        #expect(self.detail(#"{"data": [1, 2]}"#) == "Page: wrong type, expected Dictionary<String, Any> at data, found an array [1, 2]")
    }

    @Test func theExcerptIsShortAndOnOneLine() {
        let long = String(repeating: "x", count: 100)
        let detail = self.detail(#"{"data": {"items": "\#(long)"}}"#)
        #expect(detail == "Page: wrong type, expected Array<Int> at data.items, found a string \"\(String(repeating: "x", count: 40))…\"")
        let multiline = self.detail("{\"data\": {\"items\": {\"a\":\n1}}}")
        #expect(multiline == #"Page: wrong type, expected Array<Int> at data.items, found a dictionary {"a": 1}"#)
        let nested = self.detail(#"{"data": {"items": {"s": "}]", "l": [[{}]], "n": 1}}}"#)
        #expect(nested == #"Page: wrong type, expected Array<Int> at data.items, found a dictionary {"s": "}]", "l": [[{}]], "n": 1}"#)
        let big = self.detail(#"{"data": {"items": {"k": "\#(long)"}}}"#)
        #expect(big == #"Page: wrong type, expected Array<Int> at data.items, found a dictionary {"k": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…"#)
    }

    @Test func throughTheClientTheDetailIsTheSame() async throws {
        let mock = MockTransport(always: .text(#"{"data": {"items": "abc"}}"#, contentType: "application/json"))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        let error = await #expect(throws: ClientError.self) { try await client.value(Endpoint<Page>.get("/page")) }
        #expect(error?.code == .decodingFailed)
        #expect(error?.decodingProblem == .wrongType)
        #expect(error?.codingPath == "data.items")
        #expect(error?.detail?.hasSuffix(#"found a string "abc""#) == true)
    }
}
