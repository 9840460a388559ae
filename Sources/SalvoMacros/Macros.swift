@_exported import Salvo
import Foundation

// The attributes of the declarative API. `@API` and `@Mock` write code; the others only mark a
// protocol or a function for them to read, and expand to nothing.

/// Generates `<Name>API`, an implementation of the protocol over a Salvo `Client`, with the
/// protocol's access level.
///
/// ```swift
/// @API
/// @Authorization(.bearer("<token>"))
/// protocol Users {
///     @GET("/users/:name/todos")
///     func todos(name: String, done: Bool?) async throws -> [Todo]
///
///     @POST("/users")
///     func create(email: String, password: String) async throws -> User
/// }
///
/// let users: any Users = UsersAPI(client: try Client(baseURL: "https://api.example.com"))
/// let todos = try await users.todos(name: "ada", done: nil)
/// ```
@attached(peer, names: suffixed(API))
public macro API() = #externalMacro(module: "SalvoMacrosPlugin", type: "APIMacro")

/// Generates `<Name>Mock`, an implementation of the protocol whose endpoints answer with
/// closures you set per endpoint (`mock<Endpoint> { arguments in … }`), to check the arguments
/// and return what a test needs. Sendable; handlers may be set and called from any task.
///
/// ```swift
/// let users = UsersMock()
/// users.mockTodos { name, done in
///     #expect(name == "ada")
///     return [Todo(title: "write tests")]
/// }
/// ```
@attached(peer, names: suffixed(Mock))
public macro Mock() = #externalMacro(module: "SalvoMacrosPlugin", type: "MockMacro")

/// `GET path`. `:name` or `{name}` in the path is filled from the argument with that key; a
/// query in the path (`"/search?sort=new"`) is sent with the arguments' items after it.
@attached(peer) public macro GET(_ path: String) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")
/// `POST path` (see ``GET(_:)``).
@attached(peer) public macro POST(_ path: String) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")
/// `PUT path` (see ``GET(_:)``).
@attached(peer) public macro PUT(_ path: String) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")
/// `PATCH path` (see ``GET(_:)``).
@attached(peer) public macro PATCH(_ path: String) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")
/// `DELETE path` (see ``GET(_:)``).
@attached(peer) public macro DELETE(_ path: String) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")
/// `HEAD path` (see ``GET(_:)``).
@attached(peer) public macro HEAD(_ path: String) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")
/// `OPTIONS path` (see ``GET(_:)``).
@attached(peer) public macro OPTIONS(_ path: String) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")
/// `TRACE path` (see ``GET(_:)``).
@attached(peer) public macro TRACE(_ path: String) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")
/// `CONNECT path` (see ``GET(_:)``).
@attached(peer) public macro CONNECT(_ path: String) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")
/// Any method: `@HTTP("/cache/:key", method: "PURGE")`.
@attached(peer) public macro HTTP(_ path: String, method: String) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// Fixed header fields, on the protocol (every endpoint) or on one function (added to the
/// protocol's): `@Headers(["Cache-Control": "no-cache"])`.
@attached(peer) public macro Headers(_ fields: [String: String]) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// A fixed `Authorization` field: `@Authorization(.bearer("<token>"))`,
/// `@Authorization(.basic(username: "ada", password: "…"))`. For tokens that change, use the
/// client's `TokenAuthorization` middleware instead.
@attached(peer) public macro Authorization(_ credentials: Salvo.Authorization.Credentials) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// Bodies as JSON (the default), with your own encoder and decoder if given; the decoder also
/// reads responses: `@JSON(encoder: .iso8601, decoder: .iso8601)`.
@attached(peer) public macro JSON(encoder: JSONEncoder? = nil, decoder: JSONDecoder? = nil) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// Bodies as `application/x-www-form-urlencoded`, with your own form encoder if given.
@attached(peer) public macro URLForm(_ encoder: URLFormEncoder? = nil) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// Bodies as `multipart/form-data`: each body parameter is one part (a `Part`, or a value
/// sent as text or JSON). Files are streamed from disk.
@attached(peer) public macro Multipart() = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// How property and parameter names go on the wire, for query items, body fields, bodies and
/// decoded responses: `@KeyMapping(.snakeCase)`.
@attached(peer) public macro KeyMapping(_ mapping: Salvo.KeyMapping) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// A time limit for each call (when the call's options give none): `@Timeout(.seconds(5))`.
@attached(peer) public macro Timeout(_ duration: Duration) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// Tags in the request's metadata, for middleware to read: `@Tags("no-auth", "idempotent")`.
@attached(peer) public macro Tags(_ tags: String...) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// The type a refused response's body is decoded as: the thrown `ClientError` carries it
/// (`error.failureBody(as: Problem.self)`) with the raw bytes (`error.responseBody`).
@attached(peer) public macro ErrorBody<Failure: Decodable & Sendable>(_ type: Failure.Type) = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// A streamed endpoint's body is JSON Lines: one element per line.
@attached(peer) public macro JSONLines() = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// A streamed endpoint's body is Server-Sent Events: one element per event, decoded from its data.
@attached(peer) public macro EventStream() = #externalMacro(module: "SalvoMacrosPlugin", type: "MarkerMacro")

/// Makes a struct whose `body` builds a request a ``RequestDeclaration``: the client sends it
/// as the request its `body` returns.
///
/// ```swift
/// @Request
/// struct Profile {
///     let id: Int
///     var body: some Request {
///         Get("users", id, "profile", from: Backend())
///             .responseBody(User.self)
///     }
/// }
///
/// let (user, error) = await client.outcome(Profile(id: 7))
/// ```
@attached(extension, conformances: RequestDeclaration, names: arbitrary)
public macro Request() = #externalMacro(module: "SalvoMacrosPlugin", type: "RequestMacro")
