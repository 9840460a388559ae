import SalvoMacrosPlugin
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

/// What the macros write, character for character: the code a careful person would write by
/// hand, with the protocol's access level.
final class ExpansionTests: XCTestCase {
    let macros: [String: any Macro.Type] = [
        "API": APIMacro.self, "Mock": MockMacro.self, "Request": RequestMacro.self,
        "GET": MarkerMacro.self, "POST": MarkerMacro.self, "DELETE": MarkerMacro.self, "HTTP": MarkerMacro.self,
        "Headers": MarkerMacro.self, "Authorization": MarkerMacro.self, "KeyMapping": MarkerMacro.self,
        "URLForm": MarkerMacro.self, "ErrorBody": MarkerMacro.self, "Timeout": MarkerMacro.self,
    ]

    func testAPI() {
        assertMacroExpansion(
            """
            @API
            @Authorization(.bearer("t0k"))
            public protocol Users {
                @GET("/users/:name/todos")
                func todos(name: String, done: Bool?) async throws -> [Todo]

                @URLForm
                @POST("/users")
                func create(email: String, password: String) async throws

                @ErrorBody(Problem.self)
                @DELETE("/users/:id")
                func remove(id: Path<Int>, completion: @escaping @Sendable (Result<Void, ClientError>) -> Void)
            }
            """,
            expandedSource: """
            public protocol Users {
                func todos(name: String, done: Bool?) async throws -> [Todo]
                func create(email: String, password: String) async throws
                func remove(id: Path<Int>, completion: @escaping @Sendable (Result<Void, ClientError>) -> Void)
            }

            /// The `Users` endpoints over a Salvo client.
            public struct UsersAPI: Users, Sendable {
                public let client: Salvo.Client

                private static let scope = SalvoMacros.APIScope(authorization: .bearer("t0k"))

                private static let todosEndpoint = SalvoMacros.APIEndpoint(method: .get, path: "/users/:name/todos", keys: ["name", "done"], scope: Self.scope, operationName: "Users.todos(name:done:)")

                private static let createEndpoint = SalvoMacros.APIEndpoint(method: .post, path: "/users", keys: ["email", "password"], scope: Self.scope.merging(SalvoMacros.APIScope(encoding: .urlForm)), operationName: "Users.create(email:password:)")

                private static let removeEndpoint = SalvoMacros.APIEndpoint(method: .delete, path: "/users/:id", keys: ["id"], scope: Self.scope, operationName: "Users.remove(id:completion:)")

                /// Sends the endpoints' requests with `client`: its base URL, middleware and policies.
                public init(client: Salvo.Client) {
                    self.client = client
                }

                public func todos(name: String, done: Bool?) async throws -> [Todo] {
                    var request = SalvoMacros.APIRequest(Self.todosEndpoint)
                    request.add(name, key: "name")
                    request.add(done, key: "done")
                    return try await request.send(with: self.client)
                }

                public func create(email: String, password: String) async throws {
                    var request = SalvoMacros.APIRequest(Self.createEndpoint)
                    request.add(email, key: "email")
                    request.add(password, key: "password")
                    return try await request.send(with: self.client)
                }

                public func remove(id: Path<Int>, completion: @escaping @Sendable (Result<Void, ClientError>) -> Void) {
                    var request = SalvoMacros.APIRequest(Self.removeEndpoint, failure: Problem.self)
                    request.add(id, key: "id")
                    request.send(with: self.client, completion: completion)
                }
            }
            """,
            macros: self.macros)
    }

    func testMock() {
        assertMacroExpansion(
            """
            @Mock
            protocol Users {
                @GET("/users/:id")
                func user(id: Int) async throws -> User

                @HTTP("/cache/:key", method: "PURGE")
                func purge(key: String, completion: @escaping @Sendable (Result<Void, any Error>) -> Void)
            }
            """,
            expandedSource: """
            protocol Users {
                func user(id: Int) async throws -> User
                func purge(key: String, completion: @escaping @Sendable (Result<Void, any Error>) -> Void)
            }

            /// The `Users` endpoints answered by closures: `mock…` sets one per endpoint.
            final class UsersMock: Users, Sendable {
                private let endpoints = SalvoMacros.MockEndpoints()

                init() {
                }

                /// Answers `user` with `handler` from now on.
                func mockUser(_ handler: @escaping @Sendable (Int) async throws -> User) {
                    self.endpoints.set("user(id: Int)", handler)
                }

                func user(id: Int) async throws -> User {
                    guard let handler = self.endpoints.handler("user(id: Int)", as: (@Sendable (Int) async throws -> User).self) else {
                        throw SalvoMacros.MockEndpoints.notMocked("user(id: Int)", in: "UsersMock")
                    }
                    return try await handler(id)
                }

                /// Answers `purge` with `handler` from now on.
                func mockPurge(_ handler: @escaping @Sendable (String, @escaping @Sendable (Result<Void, any Error>) -> Void) -> Void) {
                    self.endpoints.set("purge(key: String, completion: @escaping @Sendable (Result<Void, any Error>) -> Void)", handler)
                }

                func purge(key: String, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
                    guard let handler = self.endpoints.handler("purge(key: String, completion: @escaping @Sendable (Result<Void, any Error>) -> Void)", as: (@Sendable (String, @escaping @Sendable (Result<Void, any Error>) -> Void) -> Void).self) else {
                        SalvoMacros.MockEndpoints.fail(completion, "purge(key: String, completion: @escaping @Sendable (Result<Void, any Error>) -> Void)", in: "UsersMock")
                        return
                    }
                    return handler(key, completion)
                }
            }
            """,
            macros: self.macros)
    }

    func testRequestDeclaration() {
        assertMacroExpansion(
            """
            @Request
            struct Profile {
                let id: Int
                var body: some Request {
                    Get("users", id, from: Backend())
                        .responseBody(User.self)
                        .responseError(Problem.self)
                }
            }
            @Request
            struct Typed {
                var body: some Request<User, Empty> { Get("me", from: Backend()).responseBody(User.self) }
            }
            """,
            expandedSource: """
            struct Profile {
                let id: Int
                var body: some Request {
                    Get("users", id, from: Backend())
                        .responseBody(User.self)
                        .responseError(Problem.self)
                }
            }
            struct Typed {
                var body: some Request<User, Empty> { Get("me", from: Backend()).responseBody(User.self) }
            }

            extension Profile: RequestDeclaration {
                typealias Success = User
                typealias Failure = Problem
            }

            extension Typed: RequestDeclaration {
            }
            """,
            macros: self.macros)
    }
}
