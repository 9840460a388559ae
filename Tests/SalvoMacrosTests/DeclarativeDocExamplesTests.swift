import Foundation
import SalvoMacros
import SalvoTestSupport
import Testing

// The examples of docs/declarative.md as a newcomer would copy them: they must compile, and
// the ones that talk to a server behave as the guide says against the demo API.

private extension JSONEncoder {
    static var iso8601: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}

private struct DocTodo: Codable, Sendable { var name: String; var isDone: Bool; var tags: [String] }
private struct DocAccount: Codable, Sendable { var id: Int }
private struct DocRepository: Codable, Sendable { var name: String }
private struct DocEvent: Codable, Sendable { var index: Int }
private struct DocUser: Codable, Sendable, Equatable { var id: Int; var name: String }

@API
@KeyMapping(.snakeCase)
@JSON(encoder: .iso8601)
private protocol DocTodos {
    @POST("/echo/todos")
    func create(todo: Body<DocTodo>) async throws -> JSONValue

    @PATCH("/echo/todos/:id")
    func update(id: Int, name: String, isDone: Bool) async throws

    @URLForm
    @POST("/echo/todos/import")
    func importTodo(name: String, tags: [String]) async throws -> JSONValue

    @Multipart
    @POST("/multipart")
    func attach(file: Part, note: Part) async throws -> JSONValue
}

@API
@Headers(["X-Client-Version": "1.2.3"])
@Authorization(.basic(username: "ada", password: "…"))
private protocol DocAccounts {
    @Headers(["Cache-Control": "max-age=86400"])
    @GET("/echo/accounts")
    func accounts(requestID: Header<String>) async throws -> JSONValue
}

@API
@Mock
private protocol DocGitHub {
    @GET("/users/:username/repos")
    func repositories(username: String) async throws -> [DocRepository]

    @JSONLines
    @GET("/jsonl")
    func events(n: Int) async throws -> ResponseStream<DocEvent>

    @GET("/users/:id")
    func user(id: Int, completion: @escaping @Sendable (Result<DocUser, any Error>) -> Void)
}

private struct DocCounter {
    let github: any DocGitHub
    func count(of username: String) async throws -> Int { try await self.github.repositories(username: username).count }
}

@Suite struct DeclarativeDocExamplesTests {
    @Test func bodiesAndEncodings() async throws {
        let server = try await APIServer.start()
        let todos = DocTodosAPI(client: try Client(baseURL: BaseURL(server.baseURL)))
        let created = try await todos.create(todo: Body(DocTodo(name: "a", isDone: false, tags: [])))
        #expect(created["body"]?.stringValue?.contains("\"is_done\":false") == true)
        try await todos.update(id: 3, name: "b", isDone: true)
        let imported = try await todos.importTodo(name: "c", tags: ["x"])
        #expect(imported["body"] == "name=c&tags%5B%5D=x")
        let attached = try await todos.attach(file: Part(data: Data("pdf".utf8), fileName: "plan.pdf", mimeType: "application/pdf"),
                                              note: Part(text: "v2"))
        #expect(attached["parts"]?[0]?["filename"] == "plan.pdf")
    }

    @Test func headersAndCredentials() async throws {
        let server = try await APIServer.start()
        let accounts = DocAccountsAPI(client: try Client(baseURL: BaseURL(server.baseURL)))
        let echo = try await accounts.accounts(requestID: "r-7")
        let headers = echo["headers"]?.arrayValue?.compactMap { $0.arrayValue?.compactMap(\.stringValue) } ?? []
        #expect(headers.contains(["Request-Id", "r-7"]))
        #expect(headers.contains(["Cache-Control", "max-age=86400"]))
        #expect(headers.contains(["X-Client-Version", "1.2.3"]))
        #expect(headers.contains { $0.first == "Authorization" && $0.last?.hasPrefix("Basic ") == true })
    }

    @Test func mocksAndStreams() async throws {
        let mock = DocGitHubMock()
        mock.mockRepositories { username in
            #expect(username == "ada")
            return [DocRepository(name: "engine"), DocRepository(name: "typed-layer")]
        }
        #expect(try await DocCounter(github: mock).count(of: "ada") == 2)

        let server = try await APIServer.start()
        let github = DocGitHubAPI(client: try Client(baseURL: BaseURL(server.baseURL)))
        var seen = 0
        for try await event in try await github.events(n: 3) { seen = event.index + 1 }
        #expect(seen == 3)
        let user: DocUser = try await withCheckedThrowingContinuation { continuation in
            github.user(id: 1) { continuation.resume(with: $0) }
        }
        #expect(user.id == 1)
    }
}
