import Foundation
import HTTPTypes
import Salvo
import SalvoTestSupport
import Testing

/// The builder DSL (the SwiftyNetworking shape) makes the request it says, through a client
/// like any other request: the service's base URL, segments encoded one by one, header
/// components, query keys (arrays repeated, nil left out), nested JSON bodies with
/// variables, typed success and failure bodies, authorization on request.
@Suite struct RequestBuilderTests {
    struct ExampleService: Service {
        var baseURL: URL { URL(string: "http://service.test/v1")! }
    }

    struct X_Api_Key: HeaderComponent {
        let value: String
        var field: HTTPField { HTTPField(name: HTTPField.Name("X-Api-Key")!, value: self.value) }
    }

    struct Reply: Codable, Equatable { var foo: String; var bar: Int }
    struct Problem: Codable, Equatable { var status: Int; var message: String }

    @Test func aBuiltRequestGoesOutAsWritten() async throws {
        let mock = MockTransport()
        mock.on(.post, "/v1/foo/a%20b/buzz") { request in
            .init(headerFields: [.contentType: "application/json"], body: Array(#"{"foo":"x","bar":1}"#.utf8))
        }
        // The client's own base URL is another: the service's wins.
        let client = try Client(baseURL: "http://other.test", transport: mock)
        let bar = "a b"
        let flag = true
        let request = Post("foo", bar, "buzz", from: ExampleService())
            .headers {
                X_Api_Key(value: "sample_token")
                Authorization(.bearer(token: "t0k"))
                if flag { HeaderField("X-Flag", "on") }
            }
            .queryItems {
                Key("hello", value: "world")
                Key("ids", value: [1, 2])
                Key("none", value: Optional<String>.none)
            }
            .body {
                Key("object") {
                    Key("int", value: 42)
                    Key("double", value: 3.14)
                    Key("bool", value: flag)
                    Key("string", value: bar)
                    Key("array", value: ["foo", "bar", "buzz"])
                }
            }
            .responseBody(Reply.self)
            .responseError(Problem.self)
        let (value, error) = await client.outcome(request)
        #expect(error == nil)
        #expect(value == Reply(foo: "x", bar: 1))
        let sent = try #require(mock.requests.last)
        #expect(sent.head.authority == "service.test")
        #expect(sent.target == "/v1/foo/a%20b/buzz?hello=world&ids=1&ids=2")
        #expect(sent.headerFields[HTTPField.Name("X-Api-Key")!] == "sample_token")
        #expect(sent.headerFields[.authorization] == "Bearer t0k")
        #expect(sent.headerFields[HTTPField.Name("X-Flag")!] == "on")
        #expect(sent.text == #"{"object":{"int":42,"double":3.14,"bool":true,"string":"a b","array":["foo","bar","buzz"]}}"#)
    }

    @Test func aFailureBodyIsTypedAndABadHeaderNameFailsTheSend() async throws {
        let mock = MockTransport()
        mock.on(.get, "/v1/users/7", reply: .init(status: .notFound, body: Array(#"{"status":404,"message":"no"}"#.utf8)))
        let client = try Client(baseURL: "http://other.test", transport: mock)
        let request = Get("users", 7, from: ExampleService()).responseBody(Reply.self).responseError(Problem.self)
        let (value, error) = await client.outcome(request)
        #expect(value == nil)
        #expect(error?.failureBody(for: request) == Problem(status: 404, message: "no"))

        let bad = Get("users", from: ExampleService()).headers { HeaderField("Bad Name", "x") }
        let failure = await client.outcome(bad).1
        #expect(failure?.code == .invalidRequest)
        #expect(mock.requests.count == 1, "nothing sent for the bad one")
    }

    @Test func authorizeAsksTheOptInMiddleware() async throws {
        let mock = MockTransport()
        for path in ["/v1/open", "/v1/closed"] {
            mock.on(.get, path) { request in .init(body: Array((request.headerFields[.authorization] ?? "none").utf8)) }
        }
        let client = try Client(baseURL: "http://other.test", transport: mock, configuration: .init(middleware: [
            StaticAuthorization(.bearer("secret"), scope: .optIn),
        ]))
        #expect(try await client.send(Get("open", from: ExampleService())).text == "none")
        #expect(try await client.send(Get("closed", from: ExampleService()).authorize()).text == "Bearer secret")
    }

    /// Over the engine, against the local API server: what it received is what was built.
    @Test func aBuiltRequestOverTheEngine() async throws {
        struct LocalService: Service {
            let baseURL: URL
        }
        let server = try await SharedAPI.server.get()
        let service = LocalService(baseURL: URL(string: server.baseURL)!)
        let client = try Client(baseURL: "http://127.0.0.1:1", configuration: EngineEndToEndTests.snakeCase)   // its base URL is never used: the service's wins
        let name = "Ada Lovelace"
        let echo = try await client.value(
            Put("echo", from: service)
                .headers { X_Api_Key(value: "k") }
                .queryItems { Key("q", value: name) }
                .body { Key("user") { Key("name", value: name); Key("tags", value: ["x"]) } }
                .responseBody(Echo.self))
        #expect(echo.method == "PUT" && echo.path == "/echo")
        #expect(echo.query == "q=Ada%20Lovelace" || echo.query == "q=Ada+Lovelace")
        #expect(echo.header("x-api-key") == "k" && echo.header("content-type") == "application/json")
        #expect(echo.body == #"{"user":{"name":"Ada Lovelace","tags":["x"]}}"#)
    }
}
