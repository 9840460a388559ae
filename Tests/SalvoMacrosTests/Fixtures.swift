import Foundation
import SalvoMacros

// What the demo API's /echo answers: the request as the server saw it.
struct Echo: Decodable, Sendable {
    let method: String
    let path: String
    let query: String
    let headers: [[String]]
    let body: String

    func header(_ name: String) -> String? {
        self.headers.first { $0.first?.lowercased() == name.lowercased() }?.last
    }

    var json: [String: JSONValue] {
        (try? JSONDecoder().decode([String: JSONValue].self, from: Data(self.body.utf8))) ?? [:]
    }
}

struct Todo: Codable, Sendable, Equatable {
    var name: String
    var isDone: Bool
    var tags: [String]
}

struct User: Codable, Sendable, Equatable {
    let id: Int
    let name: String
}

struct Problem: Codable, Sendable, Equatable {
    let error: String
}

struct Index: Codable, Sendable, Equatable {
    let index: Int
}

enum Sort: String, Codable, Sendable {
    case newest, oldest
}

typealias ID = Path<Int>

/// The endpoints of the end-to-end tests, against the demo API's /echo and the rest.
@API
@Mock
@Headers(["X-Client-Version": "1.2.3"])
protocol Echoes {
    @GET("/echo/users/:username/repos/:id")
    func repository(username: Path<String>, id: Path<Int>) async throws -> Echo

    @GET("/echo/users/:username/repos/{id}")
    func inferred(username: String, id: Int, sort: Sort?, page: Int?) async throws -> Echo

    @GET("/echo/items/:id")
    func aliased(id: ID, qualified: Salvo.Query<String>) async throws -> Echo

    @GET("/echo/transactions?merchant=Apple")
    func staticQuery(limit: Int) async throws -> Echo

    @GET("/echo/posts/:postID?expand=1")
    func customKey(id postID: Int, filter: Query<[String]>) async throws -> Echo

    @Headers(["Cache-Control": "max-age=60"])
    @GET("/echo")
    func headers(customHeader: Header<String>, requestID: Header<String?>) async throws -> Echo

    @POST("/echo/todo")
    func create(todo: Body<Todo>) async throws -> Echo

    @PATCH("/echo/todo/:id")
    func fields(id: Int, name: String, isDone: Bool, tags: [String], note: String?) async throws -> Echo

    @URLForm
    @POST("/echo/form")
    func form(name: String, isDone: Bool, tags: [String]) async throws -> Echo

    @HTTP("/echo/cache/:key", method: "PURGE")
    func purge(key: String) async throws -> Echo

    @DELETE("/echo/logout")
    func logout(everywhere: Bool) async throws

    @Authorization(.basic(username: "ada", password: "P@ssw0rd"))
    @GET("/echo/basic")
    func basic() async throws -> Echo

    @Timeout(.seconds(5))
    @Tags("declared", "echo")
    @GET("/echo/tagged")
    func tagged() async throws -> Echo
}

/// Returns and failures of the demo API's real endpoints.
@API
@Mock
@KeyMapping(.snakeCase)
protocol Users {
    @GET("/users/:id")
    func user(id: Int) async throws -> User

    @ErrorBody(Problem.self)
    @GET("/users/:id")
    func checked(id: Int) async throws(ClientError) -> User

    @GET("/users/:id")
    func raw(id: Int) async throws -> RawResponse

    @GET("/users/:id")
    func both(id: Int) async throws -> (User, RawResponse)

    @GET("/users")
    func search(name: String?) async throws -> [User]

    @GET("/users/:id")
    func callback(id: Int, completion: @escaping @Sendable (Result<User, any Error>) -> Void)

    @GET("/status/:code")
    func status(code: Int, completion: @escaping @Sendable (Result<Void, ClientError>) -> Void)

    @JSONLines
    @GET("/jsonl")
    func lines(n: Int) async throws -> ResponseStream<Index>

    @GET("/sse")
    func events(n: Int) async throws -> ServerSentEvents

    @EventStream
    @GET("/sse?single=1")
    func ticks(n: Int) async throws -> ResponseStream<Index>
}

@API
@Multipart
public protocol Uploads {
    @POST("/multipart")
    func upload(file: Part, note: Part, count: Int) async throws -> JSONValue
}

/// Parameters named like the generated code's locals, backticked names and a public protocol
/// with typed throws: the generated code must still compile and send the right values.
@API
@Mock
public protocol Awkward {
    @POST("/echo/requests/:request")
    func send(request: Int, handler: String, client: String) async throws(ClientError) -> JSONValue

    @GET("/echo/keywords")
    func keywords(`default`: Int, `for` request2: String) async throws -> JSONValue
}
