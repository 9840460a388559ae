import Foundation
import Observation
import Salvo
import Synchronization
import Testing

// The examples of docs/typed-layer.md, compiled and run against a mock: a newcomer's copy
// of them must build and behave as the guide says.

private struct DocUser: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

private struct DocNewUser: Codable, Sendable {
    var name: String
}

private struct DocProblem: Codable, Sendable, Equatable {
    var error: String
}

private struct DocLogin: Request {
    struct Credentials: Codable, Sendable { var username: String; var password: String }
    struct Token: Codable, Sendable { var token: String }
    struct DocProblem: Codable, Sendable { var error: String }

    typealias RequestBody = Credentials
    typealias SuccessResponseBody = Token
    typealias FailureResponseBody = DocProblem

    static var operationID: String { "login" }
    var method: HTTPRequest.Method { .post }
    var path: String { "/login" }
    var headerFields: HTTPFields { [:] }
    var queryItems: [QueryItem] { [] }
    var body: Credentials
}

private struct DocFormLogin: Request {
    typealias SuccessResponseBody = DocLogin.Token
    var method: HTTPRequest.Method { .post }
    var path: String { "/login" }
    var body: DocLogin.Credentials

    func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? {
        try .form(self.body, encoder: coders.formEncoder)
    }
}

private struct GetProfileRequest: Request {
    typealias RequestBody = Never?
    typealias SuccessResponseBody = DocUser
    typealias FailureResponseBody = DocProblem

    static var operationID: String { "getProfile" }
    var path: String { "/user/profile" }
    var method: HTTPRequest.Method { .get }
    var headerFields: HTTPFields { HTTPFields() }
    var queryItems: [QueryItem] { [] }
    var body: Never? { nil }
}

private enum DocAPI: String, EndpointPath {
    case login = "/login"
    case users = "/users"
}

extension Endpoint {
    fileprivate static func docUsers(named name: String? = nil) -> Endpoint<[DocUser]> {
        .get("/users", query: [QueryItem("name", name)])
    }
    fileprivate static func deleteDocUser(_ id: Int) -> Endpoint<Void> { .delete("/users/\(segment: id)") }
    fileprivate static var docMe: Endpoint<DocUser> { .get("/me") }
    fileprivate static func docProfile(_ id: Int) -> TypedEndpoint<DocUser, DocProblem> {
        Endpoint<DocUser>.get("/users/\(segment: id)").failing(as: DocProblem.self)
    }
}

private struct DocUserBody: Encodable, Sendable { var username: String; var password: String }
private struct DocUserResponse: Codable, Sendable { var token: String }
private enum MyAppEndpoint: String, EndpointPath { case login }

extension Endpoint {
    fileprivate static func login(_ body: DocUserBody) -> Endpoint<DocUserResponse> { .post(MyAppEndpoint.login, body: body) }
}

/// The guide's middleware section.
private struct Timing: Middleware {
    func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let start = ContinuousClock.now
        let response = try await next(request)
        print(request.operationName, response.status.code, ContinuousClock.now - start)
        return response
    }
}

private enum Audience: RequestMetadataKey { typealias Value = String }

/// The guide's middleware-shaped transport (Simplicity's section).
private struct Authorizing: Transport {
    let next: any Transport
    let token: @Sendable () async -> String
    func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(TransportError) -> TransportResponse {
        var request = request
        request.headerFields[.authorization] = "Bearer \(await self.token())"
        return try await self.next.send(request, body: body, options: options)
    }
}

@Suite struct DocExamplesTests {
    private func mocked() throws -> (Client, MockTransport) {
        let mock = MockTransport()
        mock.on(.get, "/v1/users/7", reply: try .json(DocUser(id: 7, name: "Ada")))
        mock.on(.get, "/v1/users", reply: try .json([DocUser(id: 7, name: "Ada")]))
        mock.on(.get, "/v1/me", reply: try .json(DocUser(id: 1, name: "Me")))
        mock.on(.post, "/v1/users") { request in try .json(DocUser(id: 9, name: try request.decode(DocNewUser.self).name), status: .created) }
        mock.on(.post, "/v1/login") { request in
            request.headerFields[.contentType] == "application/x-www-form-urlencoded"
                ? try .json(DocLogin.Token(token: "form")) : try .json(DocLogin.Token(token: "json"))
        }
        mock.on(.get, "/v1/user/profile", reply: try .json(DocProblem(error: "nope"), status: .forbidden))
        return (try Client(baseURL: "https://api.example.com/v1", transport: mock), mock)
    }

    @Test func aFirstClientAndTheThreeSpellings() async throws {
        let (client, mock) = try self.mocked()
        let user = try await client.value(Endpoint<DocUser>.get("/users/7"))
        #expect(user.name == "Ada")
        let token = try await client.value(DocLogin(body: .init(username: "ada", password: "…")))
        #expect(token.token == "json")
        #expect(try await client.value(DocFormLogin(body: .init(username: "ada", password: "x"))).token == "form")
        #expect(try await client.value(.docUsers(named: "ada")).count == 1)
        #expect(try await client.value(.docMe).name == "Me")
        mock.on(.delete, "/v1/users/7", reply: .status(.noContent))
        try await client.value(.deleteDocUser(7))
        #expect(try await client.value(.docProfile(7)).name == "Ada")
        #expect(try await client.value(Endpoint<[DocUser]>.get(DocAPI.users)).count == 1)
        let created = try await client.send(Endpoint<DocUser>.post("/users", body: DocNewUser(name: "Grace")))
        #expect(created.status == .created)
        let search = Endpoint<[DocUser]>(path: "/users", query: [QueryItem("q", "ada")], headers: [.accept: "application/json"])
        #expect(try await client.value(search).first?.id == 7)
        let post = Endpoint<DocUser>(method: .post, path: "/users", body: .json(DocNewUser(name: "Ada")))
        #expect(try await client.value(post).name == "Ada")
        let profile = try await client.send(GetProfileRequest())
        #expect(profile.error?.failureBody(as: DocProblem.self) == DocProblem(error: "nope"))
        #expect(mock.requests.contains { $0.target == "/v1/users?name=ada" })
        _ = Endpoint<Empty>(method: HTTPRequest.Method("PURGE")!, path: "/cache/users")
    }

    @Test func bodiesAndEncoders() throws {
        struct Search: Encodable {
            struct Page: Encodable { var size: Int; var after: String? }
            var query: String
            var tags: [String]
            var page: Page
        }
        let form = URLFormEncoder()
        #expect(try form.encodeString(Search(query: "swift http", tags: ["a", "b"], page: .init(size: 20, after: nil)))
            == "query=swift+http&tags%5B%5D=a&tags%5B%5D=b&page%5Bsize%5D=20")
        let items = [QueryItem("q", "a b&c"), QueryItem("page", nil), QueryItem("size", "20")]
        #expect(QueryItem.encode(items) == "q=a%20b%26c&size=20")
        #expect("/users/\(segment: "a/b c")/posts" == "/users/a%2Fb%20c/posts")
        _ = try HTTPBody.json(object: ["key": "value", "list": [1, 2]])
        _ = HTTPBody.binary([1, 2, 3], contentType: .png)
        _ = HTTPBody(data: Data("{}".utf8), contentType: .json)
        var encoder = try MultipartFormEncoder()
        let bytes = try encoder.encode(parts: [.text("Profile photo", name: "description"),
                                               .data([1, 2], name: "thumbnail", filename: "thumb.png", contentType: .png)])
        #expect(encoder.contentType.hasPrefix("multipart/form-data; boundary="))
        #expect(!bytes.isEmpty)
        let inline = EndpointBody.json(["array": ["int": 42, "double": 3.14, "bool": true, "string": "foo"]] as JSONValue)
        _ = Endpoint<Empty>(method: .post, path: "/x", body: inline)
        _ = ["name": "x", "isDone": false, "tags": ["a"]] as JSONValue
        _ = "Basic " + Data("u:p".utf8).base64EncodedString()
    }

    /// Bodies the client encodes follow its key mapping; the guide's form and multipart examples.
    @Test func bodiesFollowTheClientsCoders() async throws {
        struct Signup: Encodable, Sendable { var fullName: String; var newsletter: Bool }
        let mock = MockTransport(always: .status(.noContent))
        let client = try Client(baseURL: "https://api.example.com", transport: mock, coders: .json(keys: .snakeCase))
        let signup = Endpoint<Empty>(method: .post, path: "/signup", body: .form(Signup(fullName: "Ada", newsletter: true)))
        let upload = Endpoint<Empty>(method: .post, path: "/profile", body: .encoded { coders in
            try .multipart([.json(Signup(fullName: "Ada", newsletter: true), name: "profile", encoder: coders.encoder)])
        })
        _ = try await client.send(signup)
        _ = try await client.send(upload)
        #expect(mock.requests[0].text == "full_name=Ada&newsletter=true")
        #expect(mock.requests[0].headerFields[.contentType] == "application/x-www-form-urlencoded")
        #expect(mock.requests[1].text.contains(#""full_name":"Ada""#))
    }

    /// The guide's authorization snippets: a login captured from a typed reply, a refresh
    /// answered with an OAuth 2 token reply, and opt-in authorization.
    @Test func theAuthorizationSection() async throws {
        struct LoginReply: Codable, Sendable { var token: String; var refreshToken: String }
        let credentials = ["username": "ada", "password": "…"]
        let authMock = MockTransport()
        authMock.on(.post, "/oauth/refresh") { request in
            let body = try request.decode([String: String].self)
            return body["refresh_token"] == "r1"
                ? .text(#"{"access_token": "t2", "token_type": "Bearer", "expires_in": 3600, "scope": "read"}"#, contentType: "application/json")
                : .status(.badRequest)
        }
        let authClient = try Client(baseURL: "https://auth.example.com", transport: authMock)
        let mock = MockTransport()
        mock.on(.post, "/login", reply: try .json(LoginReply(token: "t1", refreshToken: "r1")))
        mock.fallback { request in request.headerFields[.authorization] == "Bearer t2" ? .text("ok") : .status(.unauthorized) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-doc-token-\(UInt32.random(in: 0 ... .max)).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }

        let auth = TokenAuthorization(store: FileTokenStore(path: path),
                                      capture: .decoding(LoginReply.self) { reply in
                                          AuthToken(accessToken: reply.token, refreshToken: reply.refreshToken, extra: ["user": "ada"])
                                      },
                                      refresh: { old in
            try await authClient.value(Endpoint<AuthToken>.post("/oauth/refresh", body: ["refresh_token": old?.refreshToken ?? ""]))
        })
        let client = try Client(baseURL: "https://api.example.com", transport: mock, configuration: .init(middleware: [RetryMiddleware(), auth]))
        _ = try await client.send(Endpoint<LoginReply>.post("/login", body: credentials).tagged(TokenAuthorization.login))

        #expect(try await client.value(Endpoint<String>.get("/data")) == "ok", "t1 refused, refreshed to t2")
        let token = try #require(try FileTokenStore(path: path).load())
        #expect(token.accessToken == "t2" && token.scope == "read" && token.expiresAt != nil)
        #expect(token.refreshToken == "r1", "a reply without a refresh token keeps the old one")
        #expect(token.extra == ["user": "ada"], "and the extra credentials")

        let optIn = TokenAuthorization(store: InMemoryTokenStore(AuthToken(accessToken: "t2")), scope: .optIn) { _ in AuthToken(accessToken: "t2") }
        let scoped = try Client(baseURL: "https://api.example.com", transport: mock, configuration: .init(middleware: [optIn]))
        #expect(try await scoped.value(Endpoint<String>.get("/me").authorized()) == "ok")
        #expect(try await scoped.send(Endpoint<String>.get("/news")).status == .unauthorized)
        #expect(mock.requests.last?.headerFields[.authorization] == nil)

        // SwiftyNetworking's section: opt in, an OAuth reply captured as it is.
        let swifty = TokenAuthorization(scope: .optIn, capture: .oauth2) { old in
            try await authClient.value(Endpoint<AuthToken>.post("/oauth/refresh", body: ["refresh_token": old?.refreshToken ?? ""]))
        }
        let swiftyClient = try Client(baseURL: "https://www.example.com", transport: authMock, configuration: .init(middleware: [swifty]))
        _ = try await swiftyClient.send(Endpoint<Empty>.post("/oauth/refresh", body: ["refresh_token": "r1"]).tagged(TokenAuthorization.login))
        #expect(swifty.currentToken()?.accessToken == "t2")
    }

    @Test func theMiddlewareSection() async throws {
        let token = "t0k"
        let mock = MockTransport(always: .status(.unauthorized))
        let client = try Client(baseURL: "https://api.example.com", transport: mock, configuration: .init(middleware: [
            RequestModifier { request in request.head.headerFields[.authorization] = "Bearer \(token)" },
            InterceptMiddleware { request, next in
                let response = try await next(request)
                if response.status == .unauthorized { print("token refused for", request.url) }
                return response
            },
            Timing(),
        ]))
        let report = Endpoint<Empty>.get("/reports").tagged("no-auth").with(Audience.self, "finance")
        #expect(try await client.send(report).status == .unauthorized)
        #expect(mock.requests.first?.headerFields[.authorization] == "Bearer t0k")
    }

    /// The Middleware section's "Reading and replacing bodies" example, as written there.
    struct AddClientVersion: Middleware {
        func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
            var request = request
            if request.body?.contentType == "application/json" {
                try await request.updateJSONBody { object in object["clientVersion"] = "2.1" }
            }
            return try await next(request)
        }
    }

    @Test func readingAndReplacingBodies() async throws {
        let mock = MockTransport(always: .status(.noContent))
        let client = try Client(baseURL: "https://api.example.com", transport: mock, configuration: .init(middleware: [AddClientVersion()]))
        let name = "x"
        _ = try await client.send(Endpoint<Empty>.post("/todos", body: ["name": name, "isDone": false] as JSONValue))
        #expect(mock.requests.first?.text == #"{"name":"x","isDone":false,"clientVersion":"2.1"}"#)
    }

    @Test func middlewareShapedTransportsAndRetries() async throws {
        let mock = MockTransport(always: try .json(DocUserResponse(token: "t")))
        mock.fail(.post, "/login", times: 1, with: TransportError(.connectionRefused))
        let session = try Client(baseURL: "https://api.example.com", transport: Authorizing(next: mock, token: { "secret" }))
        func loginRetrying(_ body: DocUserBody) async throws(ClientError) -> DocUserResponse {
            var attempt = 0
            while true {
                do {
                    return try await session.value(.login(body))
                } catch where error.code == .transportFailed && !error.mayHaveBeenProcessed && attempt < 2 {
                    attempt += 1
                }
            }
        }
        #expect(try await loginRetrying(DocUserBody(username: "u", password: "p")).token == "t")
        #expect(mock.requests.count == 2)
        #expect(mock.requests.allSatisfy { $0.headerFields[.authorization] == "Bearer secret" })
        let task = Task { try await session.value(.login(DocUserBody(username: "u", password: "p"))) }
        task.cancel()
        _ = await task.result
    }

    /// The retries section: an API that refuses a POST with 429 and Retry-After gets it again.
    @Test func retriesWhenTheServerAsks() async throws {
        let mock = MockTransport()
        let refused = Mutex(false)
        mock.fallback { _ in
            refused.withLock { done in
                defer { done = true }
                return done ? .text("placed") : MockTransport.Reply(status: .tooManyRequests, headerFields: [.retryAfter: "0"])
            }
        }
        let orders = try Client(baseURL: "https://shop.example.com", transport: mock, configuration: .init(middleware: [
            RetryMiddleware(RetryPolicy(maxAttempts: 4, retriesAnyMethodWhenAsked: true)),
        ]))
        #expect(try await orders.value(Endpoint<String>.post("/orders", body: ["item": "book"])) == "placed")
        #expect(mock.requests.map(\.method) == [.post, .post])
    }

    @Test func errorsAndResults() async throws {
        let (client, _) = try self.mocked()
        do {
            _ = try await client.value(GetProfileRequest())
            Issue.record("a 403 decoded")
        } catch {
            switch error.code {
            case .unacceptableStatus:
                #expect(error.status?.code == 403)
                #expect(error.failureBody(as: DocProblem.self)?.error == "nope")
            default:
                Issue.record("\(error)")
            }
        }
        let (value, error) = await client.outcome(Endpoint<DocUser>.get("/users/7"))
        #expect(value?.id == 7 && error == nil)
        let handle = client.value(Endpoint<DocUser>.get("/users/7")) { result in _ = result }
        handle.cancel()
    }

    @Test func ifYouUsedSimpleHTTPAndSwiftyNetworking() async throws {
        let mock = MockTransport(always: try .json(DocUserResponse(token: "t")))
        let session = try Client(baseURL: "https://github.com", transport: mock)
        #expect(try await session.value(.login(DocUserBody(username: "pjechris", password: "MyPassword"))).token == "t")
        for try await output in session.values(for: .login(DocUserBody(username: "pjechris", password: "MyPassword"))) {
            #expect(output.token == "t")
        }
        #expect(mock.requests.first?.path == "/login")

        struct ExampleResponseModel: Codable, Sendable { let foo: String; let bar: Int; let buzz: Bool }
        struct ExampleErrorModel: Codable, Sendable { let status: Int; let message: String }
        let failing = MockTransport(always: try .json(ExampleErrorModel(status: 400, message: "bad"), status: .badRequest))
        let client = try Client(baseURL: "https://www.example.com", transport: failing)
        let bar = "value"
        let request = Endpoint<ExampleResponseModel>(
            method: .get,
            path: "/foo/\(segment: bar)/buzz",
            query: [QueryItem("hello", "world")],
            headers: [HTTPField.Name("X-Api-Key")!: "sample_token"])
            .failing(as: ExampleErrorModel.self)
        let (result, error) = await client.outcome(request)
        #expect(result == nil)
        #expect(error?.failureBody(as: ExampleErrorModel.self)?.message == "bad")
        #expect(failing.requests.first?.target == "/foo/value/buzz?hello=world")
    }

    @Test func activityAndMocks() async throws {
        let activity = ClientActivity()
        let mock = MockTransport()
        mock.on(.get, "/slow", reply: MockTransport.Reply.text("late").delayed(by: .milliseconds(10)))
        mock.fail(.get, "/slow", times: 1, with: TransportError(.readTimeout))
        let client = try Client(baseURL: "https://api.example.test", transport: mock, configuration: .init(activity: activity))
        withObservationTracking {
            _ = activity.isBusy
        } onChange: {}
        _ = await client.outcome(Endpoint<String>.get("/slow"))
        #expect(try await client.value(Endpoint<String>.get("/slow")) == "late")
        #expect(activity.completedCount == 1 && activity.failedCount == 1)
    }
}
