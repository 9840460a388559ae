import Foundation
import Salvo
import SalvoTestSupport
import Testing

struct User: Codable, Sendable, Equatable {
    var id: Int
    var name: String
}

struct Problem: Codable, Sendable, Equatable {
    var error: String
}

struct Credentials: Codable, Sendable {
    var username: String
    var password: String
}

struct Token: Codable, Sendable, Equatable {
    var token: String
}

/// The protocol spelling: types for the body, the success and the failure.
struct Login: Request {
    typealias SuccessResponseBody = Token
    typealias FailureResponseBody = Problem
    static var operationID: String { "login" }
    var method: HTTPRequest.Method { .post }
    var path: String { "/login" }
    var body: Credentials
}

struct GetUser: Request {
    typealias SuccessResponseBody = User
    typealias FailureResponseBody = Problem
    var id: Int
    var path: String { "/users/\(segment: self.id)" }
    var headerFields: HTTPFields { [.accept: "application/json"] }
}

enum API: String, EndpointPath {
    case users = "/users"
    case login = "/login"
}

extension TypedEndpoint where Success == [User], Failure == Empty {
    static func users(named name: String? = nil) -> Self { .get("/users", query: [QueryItem("name", name)]) }
}

/// The three spellings of a request — a protocol conformance, a value from static builders,
/// a request model — against the mock transport, and how each part reaches the wire.
@Suite struct RequestStylesTests {
    func mockClient(_ configure: (MockTransport) throws -> Void) throws -> (Client, MockTransport) {
        let mock = MockTransport()
        try configure(mock)
        return (try Client(baseURL: "https://api.example.test/v1", transport: mock), mock)
    }

    @Test func protocolStyle() async throws {
        let (client, mock) = try self.mockClient { mock in
            mock.on(.post, "/v1/login") { request in
                let credentials = try request.decode(Credentials.self)
                return credentials.password == "secret"
                    ? try .json(Token(token: "t-\(credentials.username)"))
                    : try .json(Problem(error: "bad credentials"), status: .unauthorized)
            }
        }
        let response = try await client.send(Login(body: Credentials(username: "ada", password: "secret")))
        #expect(response.status.kind == .successful)
        #expect(try response.decodeSuccessBody() == Token(token: "t-ada"))
        #expect(Login.operationID == "login")
        let recorded = try #require(mock.requests.first)
        #expect(recorded.method == .post)
        #expect(recorded.headerFields[.contentType] == "application/json")

        #expect(response.error == nil)
        let refused = try await client.send(Login(body: Credentials(username: "ada", password: "no")))
        #expect(refused.status == .unauthorized)
        #expect(refused.error?.failureBody(as: Problem.self) == Problem(error: "bad credentials"))
        #expect(try refused.decodeFailureBody() == Problem(error: "bad credentials"))
        do {
            _ = try await client.value(Login(body: Credentials(username: "ada", password: "no")))
            Issue.record("a 401 decoded as a success")
        } catch {
            #expect(error.code == .unacceptableStatus)
            #expect(error.status == .unauthorized)
            #expect(error.failureBody(as: Problem.self) == Problem(error: "bad credentials"))
            #expect(String(decoding: error.responseBody ?? [], as: UTF8.self).contains("bad credentials"))
        }
    }

    @Test func valueStyleAndRequestModels() async throws {
        let users = [User(id: 1, name: "Ada"), User(id: 2, name: "Alan")]
        let (client, mock) = try self.mockClient { mock in
            mock.on(.get, "/v1/users", reply: try .json(users))
            mock.on(.get, "/v1/users/a%2Fb", reply: try .json(users[0]))
            mock.on(.post, "/v1/users") { request in try .json(try request.decode(User.self), status: .created) }
        }
        #expect(try await client.value(Endpoint<[User]>.get("/users")) == users)
        #expect(try await client.value(.users(named: "ad")) == users)
        #expect(try await client.value(Endpoint<[User]>.get(API.users)) == users)
        #expect(try await client.value(Endpoint<User>.get("/users/\(segment: "a/b")")).name == "Ada")
        let created = try await client.value(Endpoint<User>.post("/users", body: User(id: 9, name: "Grace")))
        #expect(created == User(id: 9, name: "Grace"))
        // A request model: GET by default, everything named.
        let model = Endpoint<[User]>(path: "users", query: [QueryItem("page", "2")], headers: [.accept: "application/json"])
        #expect(try await client.value(model) == users)
        // Re-typed: the same request decoded another way.
        let raw = try await client.value(Endpoint<[User]>.get("/users").decoding(String.self))
        #expect(raw.contains("Alan"))
        let targets = mock.requests.map(\.target)
        #expect(targets.contains("/v1/users?name=ad"))
        #expect(targets.contains("/v1/users?page=2"))
        #expect(mock.requests.first { $0.target == "/v1/users?page=2" }?.headerFields[.accept] == "application/json")
    }

    @Test func queryItemsAreEncodedInOrder() {
        let items = [QueryItem("q", "a b&c=d"), QueryItem("empty", ""), QueryItem("skipped", nil), QueryItem("plus", "1+1"),
                     QueryItem("é", "ü/?")] + QueryItem.array("tag", ["x", "y"], format: .brackets)
        #expect(QueryItem.encode(items) == "q=a%20b%26c%3Dd&empty=&plus=1%2B1&%C3%A9=%C3%BC/?&tag%5B%5D=x&tag%5B%5D=y")
        #expect(QueryItem.encode(QueryItem.array("id", ["1", "2"], format: .commaSeparated)) == "id=1,2")
        #expect(QueryItem.encode(QueryItem.array("id", ["1", "2"])) == "id=1&id=2")
        #expect(QueryItem.encode(QueryItem.array("id", ["1", "2"], format: .indexed)) == "id%5B0%5D=1&id%5B1%5D=2")
        #expect("/files/\(segment: "a b/c?d#e")" == "/files/a%20b%2Fc%3Fd%23e")
    }

    /// Other libraries' spellings of two customization points: a request that makes its own
    /// body bytes (`encodeBody() -> Data?`) and `[URLQueryItem]` for the query.
    @Test func ownBodyBytesAndFoundationQueryItems() async throws {
        struct SignIn: Request {
            typealias SuccessResponseBody = Token
            var method: HTTPRequest.Method { .post }
            var path: String { "/signin" }
            var headerFields: HTTPFields { [.contentType: "application/x-www-form-urlencoded"] }
            var queryItems: [URLQueryItem] { [URLQueryItem(name: "v", value: "2")] }
            func encodeBody() throws -> Data? { Data("user=ada&pass=s%26cret".utf8) }
        }
        struct Broken: Request {
            var path: String { "/signin" }
            var body: Credentials { Credentials(username: "a", password: "b") }
            func encodeBody() throws -> Data? { throw CocoaError(.coderInvalidValue) }
        }
        let (client, mock) = try self.mockClient { mock in
            mock.on(.post, "/v1/signin") { request in
                #expect(request.headerFields[.contentType] == "application/x-www-form-urlencoded")
                return String(decoding: request.body, as: UTF8.self) == "user=ada&pass=s%26cret"
                    ? try .json(Token(token: "t")) : .status(.unauthorized)
            }
        }
        #expect(try await client.value(SignIn()) == Token(token: "t"))
        #expect(mock.requests.first?.target == "/v1/signin?v=2")
        let (_, error) = await client.outcome(Broken())
        #expect(error?.code == .encodingFailed)
    }

    @Test func baseURLs() throws {
        let base = try BaseURL("HTTPS://api.example.test:8443/v1/")
        #expect(base.scheme == "https")
        #expect(base.authority == "api.example.test:8443")
        #expect(base.path == "/v1")
        for bad in ["api.example.test", "ftp://x/", "http://", "http://h:99999/", "http://u@h/", "http://h/?q=1", "http://h h/"] {
            #expect(throws: ClientError.self, "\(bad)") { try BaseURL(bad) }
        }
        do {
            _ = try Client(baseURL: "not a url")
        } catch {
            #expect(error.code == .invalidBaseURL)
            #expect(error.description.contains("not a url"))
        }
    }

    /// Client-wide headers and query items, per-call options, and the ways to get a result.
    @Test func clientDefaultsAndResultForms() async throws {
        let mock = MockTransport()
        mock.on(.get, "/users/1", reply: try .json(User(id: 1, name: "Ada")))
        mock.on(.get, "/users/9", reply: try .json(Problem(error: "no user 9"), status: .notFound))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(
            headerFields: [.userAgent: "tests", .accept: "*/*"], queryItems: [QueryItem("client_id", "c1")]))
        let (user, response) = try await client.valueAndResponse(GetUser(id: 1))
        #expect(user.name == "Ada")
        #expect(response.status == .ok)
        #expect(mock.requests[0].target == "/users/1?client_id=c1")
        #expect(mock.requests[0].headerFields[.userAgent] == "tests")
        #expect(mock.requests[0].headerFields[.accept] == "application/json", "the request's own header wins")

        let (missing, error) = await client.outcome(GetUser(id: 9))
        #expect(missing == nil)
        #expect(error?.failureBody(as: Problem.self)?.error == "no user 9")

        let viaHandler = await withCheckedContinuation { continuation in
            client.value(GetUser(id: 1)) { continuation.resume(returning: $0) }
        }
        #expect(try viaHandler.get().id == 1)
        let pairViaHandler = await withCheckedContinuation { continuation in
            client.valueAndResponse(GetUser(id: 1)) { continuation.resume(returning: $0) }
        }
        #expect(try pairViaHandler.get().response.status == .ok)
        let failedViaHandler = await withCheckedContinuation { continuation in
            client.send(GetUser(id: 9)) { continuation.resume(returning: $0) }
        }
        #expect(try failedViaHandler.get().status == .notFound, "send hands over any status")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-handler-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let saved = await withCheckedContinuation { continuation in
            client.download(GetUser(id: 1), to: directory.appendingPathComponent("user.json").path) { continuation.resume(returning: $0) }
        }
        #expect(try saved.get().size > 0)
        // Any status goes through a call whose validators accept it.
        let lenient = try await client.value(GetUser(id: 9).mapFailure(), options: .init(validators: []))
        #expect(lenient.error == "no user 9")
    }

    @Test func decodingErrorsSayWhere() async throws {
        let mock = MockTransport()
        mock.on(.get, "/users/1", reply: .text(#"{"id": "one", "name": "Ada"}"#, contentType: "application/json"))
        mock.on(.get, "/users/2", reply: .text(#"{"id": 2}"#, contentType: "application/json"))
        mock.on(.get, "/users", reply: .text(#"[{"id": 1, "name": "Ada"}, {"id": 2, "name": null}]"#))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        for (path, where_, what) in [("/users/1", "id", "wrong type"), ("/users/2", "name", "missing value")] {
            do {
                _ = try await client.value(Endpoint<User>.get(path))
                Issue.record("decoded \(path)")
            } catch {
                #expect(error.code == .decodingFailed)
                #expect(error.codingPath == where_)
                #expect(error.detail?.contains(what) == true, "\(error)")
                #expect(error.status == .ok, "the response is kept")
            }
        }
        do {
            _ = try await client.value(Endpoint<[User]>.get("/users"))
        } catch {
            #expect(error.codingPath == "[1].name")
        }
    }

    @Test func mockTransportRepliesAndRecords() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-mock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("GET/users"), withIntermediateDirectories: true)
        try #"{"id": 1, "name": "From a file"}"#.write(to: root.appendingPathComponent("GET/users/1.json"), atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: root) }
        let tree = try Client(baseURL: "http://api.test", transport: MockTransport(directory: root.path))
        #expect(try await tree.value(Endpoint<User>.get("/users/1")).name == "From a file")
        do {
            _ = try await tree.value(Endpoint<User>.get("/users/2"))
        } catch {
            #expect(error.transportError?.detail?.contains("GET/users/2.json") == true, "\(error)")
        }

        let mock = MockTransport()
        mock.on(.get, "/slow", reply: MockTransport.Reply.text("late").delayed(by: .milliseconds(50)))
        mock.on(.get, "/flaky", reply: .text("fine"))
        mock.fail(.get, "/flaky", times: 2, with: TransportError(.connectionRefused))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        #expect(try await client.value(Endpoint<String>.get("/slow")) == "late")
        for _ in 0..<2 {
            let (_, error) = await client.outcome(Endpoint<String>.get("/flaky"))
            #expect(error?.transportError?.code == .connectionRefused)
        }
        #expect(try await client.value(Endpoint<String>.get("/flaky")) == "fine")
        // Injected failures sit apart from the rules: a rule for any method keeps answering after them.
        mock.on(nil, "/any", reply: .text("own"))
        mock.fail(.get, "/any", times: 1, with: TransportError(.connectionRefused))
        #expect(await client.outcome(Endpoint<String>.get("/any")).error?.transportError?.code == .connectionRefused)
        #expect(try await client.value(Endpoint<String>.get("/any")) == "own")
        do {
            _ = try await client.value(Endpoint<String>.get("/nowhere?x=1"))
        } catch {
            #expect(error.transportError?.detail?.contains("GET /nowhere?x=1") == true, "\(error)")
        }
        #expect(mock.requests.count == 7)
    }
}

extension GetUser {
    /// The same request with its failure body as its success body (for a lenient call).
    func mapFailure() -> Endpoint<Problem> { Endpoint<Problem>.get(self.path) }
}
