import Foundation
@testable import Salvo
import Testing

/// Forms and query items made from values: the key mapping renames the properties of types
/// but not the keys of dictionaries (as the JSON body does), and an empty array is sent as
/// one empty field in the array style in use, so that "none" can be said.
@Suite struct FormKeysAndEmptyArrayTests {
    struct Profile: Encodable, Sendable {
        var displayName: String
        var extraFields: [String: String]
    }

    let profile = Profile(displayName: "Ada", extraFields: ["favouriteColour": "green", "shoeSize": "38"])

    func jsonObject(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test func theJSONBodyRenamesPropertiesButNotDictionaryKeys() throws {
        // The reference the forms follow: JSONEncoder's key strategy, as Coders.json sets it.
        let json = try self.jsonObject(try Coders.json(keys: .snakeCase).encodeJSON(self.profile))
        #expect(json["display_name"] as? String == "Ada")
        #expect(json["extra_fields"] as? [String: String] == ["favouriteColour": "green", "shoeSize": "38"])
    }

    @Test func formsRenamePropertiesButNotDictionaryKeys() throws {
        let form = Coders.json(keys: .snakeCase).formEncoder
        #expect(try form.fields(of: self.profile) == [
            QueryItem("display_name", "Ada"),
            QueryItem("extra_fields[favouriteColour]", "green"),
            QueryItem("extra_fields[shoeSize]", "38"),
        ])
        // A dictionary at the top: its keys as given.
        #expect(try form.encodeString(["userName": "ada", "accountType": "admin"]) == "accountType=admin&userName=ada")
        // A struct inside a dictionary is still renamed.
        struct Contact: Encodable { var phoneNumber: String }
        #expect(try form.fields(of: ["homeContact": Contact(phoneNumber: "1")]) == [QueryItem("homeContact[phone_number]", "1")])
        // Kebab case, dots nesting: the same rule.
        var kebab = URLFormEncoder(nestingStyle: .dots, keys: .kebabCase)
        kebab.arrayEncoding = .repeated
        #expect(try kebab.encodeString(self.profile) == "display-name=Ada&extra-fields.favouriteColour=green&extra-fields.shoeSize=38")
    }

    @Test func queryItemsFromValuesFollowTheSameRule() async throws {
        struct Filter: Encodable, Sendable { var sortOrder: String; var labels: [String: String] }
        let mock = MockTransport(always: .text("[]", contentType: "application/json"))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(coders: .json(keys: .snakeCase)))
        let query = try client.configuration.coders.formEncoder.fields(of: Filter(sortOrder: "desc", labels: ["teamName": "core"]))
        _ = try await client.value(Endpoint<[String]>.get("/issues", query: query))
        #expect(mock.requests.first?.target == "/issues?sort_order=desc&labels%5BteamName%5D=core")
    }

    struct Patch: Encodable, Sendable {
        var title: String?
        var tags: [String]?
    }

    @Test func anEmptyArrayIsSentInTheArrayStyle() throws {
        let clear = Patch(title: nil, tags: [])
        let styles: [(QueryItem.ArrayFormat, [QueryItem], String)] = [
            (.brackets, [QueryItem("tags[]", "")], "tags%5B%5D="),
            (.indexed, [QueryItem("tags[]", "")], "tags%5B%5D="),
            (.repeated, [QueryItem("tags", "")], "tags="),
            (.commaSeparated, [QueryItem("tags", "")], "tags="),
        ]
        for (style, fields, text) in styles {
            let form = URLFormEncoder(arrayEncoding: style)
            #expect(try form.fields(of: clear) == fields, "\(style)")
            #expect(try form.encodeString(clear) == text, "\(style)")
        }
        // Nil still sends nothing; a non-empty array is as before.
        #expect(try URLFormEncoder().encodeString(Patch(title: "t", tags: nil)) == "title=t")
        #expect(try URLFormEncoder().encodeString(Patch(title: nil, tags: ["a"])) == "tags%5B%5D=a")
        // Nested, and in a dictionary.
        struct Outer: Encodable { var inner: Patch }
        #expect(try URLFormEncoder().fields(of: Outer(inner: clear)) == [QueryItem("inner[tags][]", "")])
        #expect(try URLFormEncoder(arrayEncoding: .repeated).fields(of: ["ids": [Int]()]) == [QueryItem("ids", "")])
    }

    /// A PATCH that clears the tags, as a form body through a client.
    @Test func aPatchCanClearAList() async throws {
        let mock = MockTransport(always: .status(.noContent))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        _ = try await client.send(Endpoint<Empty>(method: .patch, path: "/posts/1", body: .form(Patch(title: nil, tags: []))))
        #expect(mock.requests.first?.text == "tags%5B%5D=")
        #expect(mock.requests.first?.headerFields[.contentType]?.hasPrefix("application/x-www-form-urlencoded") == true)
    }
}
