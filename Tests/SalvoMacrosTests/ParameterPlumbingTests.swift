import Foundation
import HTTPTypes
@testable import SalvoMacros
import Testing

/// The pieces under the generated code, without sockets: path templates, header names, text
/// of arguments, the request a call makes.
@Suite struct ParameterPlumbingTests {
    @Test func pathTemplatesSplitAtPlaceholdersBeforeTheQuery() {
        #expect(PathTemplate.split("/users/:name/repos/{id}?sort=:x") .placeholders == ["name", "id"])
        #expect(PathTemplate.split("/users/:name/repos/{id}?sort=:x").literals == ["/users/", "/repos/", "?sort=:x"])
        #expect(PathTemplate.split("/posts/:postID?expand=1").literals == ["/posts/", "?expand=1"])
        #expect(PathTemplate.split("/plain").placeholders.isEmpty)
        // A lone colon or an unclosed brace is text.
        #expect(PathTemplate.split("/a:/b{c").placeholders.isEmpty)
        // A colon starts a placeholder only at the start of a segment.
        #expect(PathTemplate.split("/:a:b").placeholders == ["a"])
        #expect(PathTemplate.split("/v1/{name}:publish").placeholders == ["name"])
        #expect(PathTemplate.split("/v1/{name}:publish").literals == ["/v1/", ":publish"])
        #expect(PathTemplate.split("/at/10:30").placeholders.isEmpty)
        #expect(PathTemplate.split("/a/:id/b/:id").placeholders == ["id", "id"])
    }

    @Test func headerNamesAreCapitalKebabCase() {
        #expect(HeaderName.capitalKebab("customHeader") == "Custom-Header")
        #expect(HeaderName.capitalKebab("requestID") == "Request-Id")
        #expect(HeaderName.capitalKebab("xAPIKey") == "X-Api-Key")
        #expect(HeaderName.capitalKebab("x_trace_id") == "X-Trace-Id")
        #expect(HeaderName.capitalKebab("etag") == "Etag")
        #expect(HeaderName.capitalKebab("v2Token") == "V2-Token")
    }

    @Test func argumentsBecomeText() {
        enum Color: String { case deepRed = "deep-red" }
        #expect(ParameterText.text(of: "a b") == "a b")
        #expect(ParameterText.text(of: 42) == "42")
        #expect(ParameterText.text(of: true) == "true")
        #expect(ParameterText.text(of: Color.deepRed) == "deep-red")
        #expect(ParameterText.text(of: Optional<Int>.none) == nil)
        #expect(ParameterText.text(of: Optional(Optional(3))) == "3")
        #expect(ParameterText.isNil(Optional<String>.none))
        #expect(!ParameterText.isNil("x"))
    }

    @Test func aCallMakesTheRequestItsArgumentsSay() throws {
        let endpoint = APIEndpoint(method: .get, path: "/users/:name/todos?all=1", keys: ["name", "page", "traceID"],
                                   scope: APIScope(headers: ["Accept": "application/json"]))
        var request = APIRequest(endpoint)
        request.add("a/b", key: "name")
        request.add(2, key: "page")
        request.add(Optional<String>.none, key: "sort")
        request.add(Header("t-1"), key: "traceID")
        let head = try APICall<Empty, Empty>(request).makeHTTPRequest(baseURL: try BaseURL("http://api.test/v1"), coders: .json)
        #expect(head.path == "/v1/users/a%2Fb/todos?all=1&page=2")
        #expect(head.headerFields[.accept] == "application/json")
        #expect(head.headerFields[HTTPField.Name("Trace-Id")!] == "t-1")
    }

    @Test func aRepeatedPlaceholderIsFilledEverywhereAndArgumentsReplaceFixedHeaders() throws {
        let endpoint = APIEndpoint(method: .get, path: "/a/:id/b/:id", keys: ["id", "accept"],
                                   scope: APIScope(headers: ["Accept": "application/json"], authorization: .bearer("app")))
        var request = APIRequest(endpoint)
        request.add(7, key: "id")
        request.add(Header("text/plain"), key: "accept")
        request.add(Header("Bearer user"), key: "authorization")
        let head = try APICall<Empty, Empty>(request).makeHTTPRequest(baseURL: try BaseURL("http://api.test"), coders: .json)
        #expect(head.path == "/a/7/b/7")
        #expect(head.headerFields[values: .accept] == ["text/plain"])
        #expect(head.headerFields[values: .authorization] == ["Bearer user"])
    }

    @Test func dotSegmentsAndEmptyValuesAreRefused() {
        for bad in ["", ".", ".."] {
            var request = APIRequest(APIEndpoint(method: .get, path: "/users/:id", scope: APIScope()))
            request.add(bad, key: "id")
            #expect(throws: ClientError.self) {
                try APICall<Empty, Empty>(request).makeHTTPRequest(baseURL: try BaseURL("http://api.test"), coders: .json)
            }
        }
    }

    @Test func aKeyMappingLeavesTheSharedEncoderAlone() {
        let shared = JSONEncoder()
        let protocolScope = APIScope(jsonEncoder: shared)
        _ = protocolScope.merging(APIScope(keys: .snakeCase))
        if case .useDefaultKeys = shared.keyEncodingStrategy {} else { Issue.record("the shared encoder's key strategy changed") }
    }

    @Test func misuseFailsWhenTheRequestIsMade() throws {
        let endpoint = APIEndpoint(method: .post, path: "/todos/:id", scope: APIScope())
        var twoBodies = APIRequest(endpoint)
        twoBodies.add(Path(1), key: "id")
        twoBodies.add(Body("a"), key: "one")
        twoBodies.add(Body("b"), key: "two")
        #expect(throws: ClientError.self) {
            try APICall<Empty, Empty>(twoBodies).makeHTTPRequest(baseURL: try BaseURL("http://api.test"), coders: .json)
        }
        var unfilled = APIRequest(endpoint)
        unfilled.add(Field("x"), key: "name")
        do {
            _ = try APICall<Empty, Empty>(unfilled).makeHTTPRequest(baseURL: try BaseURL("http://api.test"), coders: .json)
            Issue.record("an unfilled placeholder was sent")
        } catch {
            #expect(error.detail?.contains("id") == true)
        }
        var badHeader = APIRequest(APIEndpoint(method: .get, path: "/", scope: APIScope(headers: ["Bad Name": "x"])))
        badHeader.add(1, key: "page")
        #expect(throws: ClientError.self) {
            try APICall<Empty, Empty>(badHeader).makeHTTPRequest(baseURL: try BaseURL("http://api.test"), coders: .json)
        }
    }
}
