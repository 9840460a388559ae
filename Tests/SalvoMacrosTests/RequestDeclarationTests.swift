import Foundation
import SalvoMacros
import SalvoTestSupport
import Testing

/// `@Request` structs (the SwiftyNetworking declaration form): stored properties are the
/// inputs, `body` builds the request, and the client sends the declaration as that request.
@Suite struct RequestDeclarationTests {
    struct Local: Service {
        let base: String
        var baseURL: URL { URL(string: self.base)! }
    }

    struct X_Api_Key: HeaderComponent {
        let value: String
        var field: HTTPField { HTTPField(name: HTTPField.Name("X-Api-Key")!, value: self.value) }
    }

    @Request
    struct EchoRequest {
        let service: Local
        let bar: String
        let count: Int

        var body: some Request {
            Post("echo", "foo", bar, "buzz", from: service)
                .headers {
                    X_Api_Key(value: "sample_token")
                }
                .queryItems {
                    Key("hello", value: "world")
                }
                .body {
                    Key("array") {
                        Key("int", value: count)
                        Key("double", value: 3.14)
                        Key("bool", value: true)
                        Key("string", value: "foo")
                        Key("array", value: ["foo", "bar", "buzz"])
                    }
                }
                .responseBody(Echo.self)
                .responseError(Problem.self)
        }
    }

    @Request
    struct MissingUser {
        let service: Local
        var body: some Request {
            Get("users", 99, from: service).responseBody(User.self).responseError(Problem.self)
        }
    }

    @Test func aDeclarationIsSentAsItsBody() async throws {
        let server = try await APIServer.start()
        let client = try Client(baseURL: "http://unused.test")
        let (echo, error) = await client.outcome(EchoRequest(service: Local(base: server.baseURL), bar: "a b", count: 42))
        #expect(error == nil)
        #expect(echo?.path == "/echo/foo/a%20b/buzz")
        #expect(echo?.query == "hello=world")
        #expect(echo?.header("X-Api-Key") == "sample_token")
        #expect(echo?.json["array"]?["int"] == 42)
        #expect(echo?.json["array"]?["array"] == ["foo", "bar", "buzz"])

        let missing = MissingUser(service: Local(base: server.baseURL))
        let (user, failure) = await client.outcome(missing)
        #expect(user == nil)
        #expect(failure?.failureBody(for: missing) == Problem(error: "no user 99"))
        await #expect(throws: ClientError.self) { try await client.value(missing) }
    }

    @Test func declarationsQueueToo() async throws {
        let server = try await APIServer.start()
        let client = try Client(baseURL: "http://unused.test")
        let local = Local(base: server.baseURL)
        let outcomes = await client.outcomes(of: Queue {
            EchoRequest(service: local, bar: "1", count: 1)
            MissingUser(service: local)
        })
        #expect(outcomes.count == 2)
        #expect(outcomes[0].value(as: Echo.self)?.path == "/echo/foo/1/buzz")
        #expect(outcomes[1].error?.status == .notFound)
    }
}
