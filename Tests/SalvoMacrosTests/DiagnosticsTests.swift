import SalvoMacrosPlugin
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

/// Misuse is a compile-time error at the code that causes it, with a fix-it where the fix is
/// obvious; nothing is generated for a protocol with errors (so no second wave of errors).
final class DiagnosticsTests: XCTestCase {
    let macros: [String: any Macro.Type] = [
        "API": APIMacro.self, "Mock": MockMacro.self, "Request": RequestMacro.self,
        "GET": MarkerMacro.self, "POST": MarkerMacro.self, "HTTP": MarkerMacro.self, "Headers": MarkerMacro.self,
    ]

    func testTwoBodies() {
        assertMacroExpansion(
            """
            @API
            protocol Todos {
                @POST("/todos")
                func create(todo: Body<Todo>, other: Body<Todo>) async throws
            }
            """,
            expandedSource: """
            protocol Todos {
                func create(todo: Body<Todo>, other: Body<Todo>) async throws
            }
            """,
            diagnostics: [DiagnosticSpec(message: "an endpoint has at most one Body parameter; 'other' is the second", line: 4, column: 35)],
            macros: self.macros)
    }

    func testBodyWithAFieldOffersAQuery() {
        assertMacroExpansion(
            """
            @API
            protocol Todos {
                @POST("/todos")
                func create(todo: Body<Todo>, notify: Bool) async throws
            }
            """,
            expandedSource: """
            protocol Todos {
                func create(todo: Body<Todo>, notify: Bool) async throws
            }
            """,
            diagnostics: [DiagnosticSpec(
                message: "'notify' would be a body field, but the endpoint has a Body parameter: a request has a body or fields, not both",
                line: 4, column: 35, fixIts: [FixItSpec(message: "send 'notify' as a query item")])],
            macros: self.macros,
            applyFixIts: ["send 'notify' as a query item"],
            fixedSource: """
            @API
            protocol Todos {
                @POST("/todos")
                func create(todo: Body<Todo>, notify: Query<Bool>) async throws
            }
            """)
    }

    func testBodyWithASpelledField() {
        assertMacroExpansion(
            """
            @API
            protocol Todos {
                @POST("/todos")
                func create(todo: Body<Todo>, name: Field<String>) async throws
            }
            """,
            expandedSource: """
            protocol Todos {
                func create(todo: Body<Todo>, name: Field<String>) async throws
            }
            """,
            diagnostics: [DiagnosticSpec(
                message: "'name' would be a body field, but the endpoint has a Body parameter: a request has a body or fields, not both",
                line: 4, column: 35)],
            macros: self.macros)
    }

    func testAPlaceholderWithoutAnArgument() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                @GET("/users/:userID/todos")
                func todos(id: Int) async throws -> [Todo]
            }
            """,
            expandedSource: """
            protocol Users {
                func todos(id: Int) async throws -> [Todo]
            }
            """,
            diagnostics: [DiagnosticSpec(
                message: "the path's placeholder 'userID' has no argument: add a parameter named 'userID' (or labelled '… userID: T')",
                line: 4, column: 10)],
            macros: self.macros)
    }

    func testAPlaceholderTakenByAnotherRole() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                @GET("/users/:id")
                func user(id: Query<Int>) async throws -> User
            }
            """,
            expandedSource: """
            protocol Users {
                func user(id: Query<Int>) async throws -> User
            }
            """,
            diagnostics: [DiagnosticSpec(message: "the path's placeholder 'id' has no argument: the parameter 'id' is a Query",
                                         line: 4, column: 15)],
            macros: self.macros)
    }

    func testAPathParameterWithoutAPlaceholder() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                @GET("/users")
                func user(id: Path<Int>) async throws -> User
            }
            """,
            expandedSource: """
            protocol Users {
                func user(id: Path<Int>) async throws -> User
            }
            """,
            diagnostics: [DiagnosticSpec(message: "'id' is a Path parameter but the path has no placeholder ':id'", line: 4, column: 15)],
            macros: self.macros)
    }

    func testNeitherAsyncNorACallbackOffersAsyncThrows() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                @GET("/user")
                func user() -> User
            }
            """,
            expandedSource: """
            protocol Users {
                func user() -> User
            }
            """,
            diagnostics: [DiagnosticSpec(
                message: "an endpoint is 'async throws', or takes a completion handler as its last parameter",
                line: 4, column: 14, fixIts: [FixItSpec(message: "make it 'async throws'")])],
            macros: self.macros,
            applyFixIts: ["make it 'async throws'"],
            fixedSource: """
            @API
            protocol Users {
                @GET("/user")
                func user() async throws -> User
            }
            """)
    }

    func testAsyncWithoutThrowsOffersThrows() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                @GET("/user")
                func user() async -> User
            }
            """,
            expandedSource: """
            protocol Users {
                func user() async -> User
            }
            """,
            diagnostics: [DiagnosticSpec(message: "an async endpoint throws: a request can fail", line: 4, column: 14,
                                         fixIts: [FixItSpec(message: "add 'throws'")])],
            macros: self.macros,
            applyFixIts: ["add 'throws'"],
            fixedSource: """
            @API
            protocol Users {
                @GET("/user")
                func user() async throws -> User
            }
            """)
    }

    func testACompletionHandlerMustBeSendable() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                @GET("/user")
                func user(completion: @escaping (Result<User, any Error>) -> Void)
            }
            """,
            expandedSource: """
            protocol Users {
                func user(completion: @escaping (Result<User, any Error>) -> Void)
            }
            """,
            diagnostics: [DiagnosticSpec(message: "the completion handler is called from another task: mark it @Sendable",
                                         line: 4, column: 27, fixIts: [FixItSpec(message: "mark the handler @Sendable")])],
            macros: self.macros,
            applyFixIts: ["mark the handler @Sendable"],
            fixedSource: """
            @API
            protocol Users {
                @GET("/user")
                func user(completion: @Sendable @escaping (Result<User, any Error>) -> Void)
            }
            """)
    }

    func testUnsupportedParameters() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                @GET("/users")
                func users(names: String..., filter: (User) -> Bool, page: inout Int) async throws -> [User]
            }
            """,
            expandedSource: """
            protocol Users {
                func users(names: String..., filter: (User) -> Bool, page: inout Int) async throws -> [User]
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "this parameter cannot be sent: a variadic parameter has no single wire value; take an array", line: 4, column: 16),
                DiagnosticSpec(message: "this parameter cannot be sent: a function is sent nowhere; only the last parameter may be a completion handler", line: 4, column: 34),
                DiagnosticSpec(message: "this parameter cannot be sent: 'inout' has no meaning for a request", line: 4, column: 58),
            ],
            macros: self.macros)
    }

    func testACompletionHandlerMustEscape() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                @GET("/user")
                func user(completion: @Sendable (Result<User, any Error>) -> Void)
            }
            """,
            expandedSource: """
            protocol Users {
                func user(completion: @Sendable (Result<User, any Error>) -> Void)
            }
            """,
            diagnostics: [DiagnosticSpec(message: "the completion handler is called after the function returns: mark it @escaping",
                                         line: 4, column: 27, fixIts: [FixItSpec(message: "mark the handler @escaping")])],
            macros: self.macros,
            applyFixIts: ["mark the handler @escaping"],
            fixedSource: """
            @API
            protocol Users {
                @GET("/user")
                func user(completion: @escaping @Sendable (Result<User, any Error>) -> Void)
            }
            """)
    }

    func testTheAsyncFixItKeepsTypedThrows() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                @GET("/user")
                func user() throws(ClientError) -> User
            }
            """,
            expandedSource: """
            protocol Users {
                func user() throws(ClientError) -> User
            }
            """,
            diagnostics: [DiagnosticSpec(
                message: "an endpoint is 'async throws', or takes a completion handler as its last parameter",
                line: 4, column: 14, fixIts: [FixItSpec(message: "make it 'async throws'")])],
            macros: self.macros,
            applyFixIts: ["make it 'async throws'"],
            fixedSource: """
            @API
            protocol Users {
                @GET("/user")
                func user() async throws(ClientError) -> User
            }
            """)
    }

    func testAliasesAndColonsInsideSegmentsAreNotMisread() {
        // An alias may be a Query or a Header: only the compiler knows, so no error here; and
        // a colon inside a segment is text, not a placeholder.
        assertMacroExpansion(
            """
            @Mock
            protocol Items {
                @POST("/v1/{name}:publish")
                func publish(name: String, trace: Trace, item: Body<Item>) async throws
            }
            """,
            expandedSource: """
            protocol Items {
                func publish(name: String, trace: Trace, item: Body<Item>) async throws
            }

            /// The `Items` endpoints answered by closures: `mock…` sets one per endpoint.
            final class ItemsMock: Items, Sendable {
                private let endpoints = SalvoMacros.MockEndpoints()

                init() {
                }

                /// Answers `publish` with `handler` from now on.
                func mockPublish(_ handler: @escaping @Sendable (String, Trace, Body<Item>) async throws -> Void) {
                    self.endpoints.set("publish(name: String, trace: Trace, item: Body<Item>)", handler)
                }

                func publish(name: String, trace: Trace, item: Body<Item>) async throws {
                    guard let handler = self.endpoints.handler("publish(name: String, trace: Trace, item: Body<Item>)", as: (@Sendable (String, Trace, Body<Item>) async throws -> Void).self) else {
                        throw SalvoMacros.MockEndpoints.notMocked("publish(name: String, trace: Trace, item: Body<Item>)", in: "ItemsMock")
                    }
                    return try await handler(name, trace, item)
                }
            }
            """,
            macros: self.macros)
    }

    func testAParameterWithoutANameIsRefused() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                @GET("/users")
                func users(_: Int) async throws -> [User]
            }
            """,
            expandedSource: """
            protocol Users {
                func users(_: Int) async throws -> [User]
            }
            """,
            diagnostics: [DiagnosticSpec(message: "this parameter cannot be sent: a parameter without a name has no key to be sent under; name it",
                                         line: 4, column: 16)],
            macros: self.macros)
    }

    func testAMissingMethodOffersGET() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                func users() async throws -> [User]
            }
            """,
            expandedSource: """
            protocol Users {
                func users() async throws -> [User]
            }
            """,
            diagnostics: [DiagnosticSpec(
                message: "'users' has no method and path: add @GET, @POST, @PUT, @PATCH, @DELETE, @HEAD, @OPTIONS, @TRACE, @CONNECT or @HTTP",
                line: 3, column: 10, fixIts: [FixItSpec(message: "add @GET(\"/users\")")])],
            macros: self.macros)
    }

    func testHeaderNamesMethodsAndPathsAreChecked() {
        assertMacroExpansion(
            #"""
            @API
            @Headers(["Bad Name": "x"])
            protocol Users {
                @HTTP("/cache", method: "NOT A METHOD")
                func purge() async throws

                @GET("/users/\(id)")
                func users() async throws -> [User]
            }
            """#,
            expandedSource: #"""
            protocol Users {
                func purge() async throws
                func users() async throws -> [User]
            }
            """#,
            diagnostics: [
                DiagnosticSpec(message: "\"Bad Name\" is not a header field name", line: 2, column: 11),
                DiagnosticSpec(message: "\"NOT A METHOD\" is not an HTTP method name (letters, digits and !#$%&'*+-.^_`|~)", line: 4, column: 5),
                DiagnosticSpec(message: "the path must be a string literal without interpolation: arguments fill it through ':name' placeholders", line: 7, column: 5),
            ],
            macros: self.macros)
    }

    func testOtherMembersAndOtherDeclarations() {
        assertMacroExpansion(
            """
            @API
            protocol Users {
                var token: String { get }
            }
            @API
            struct NotAProtocol {}
            @Request
            class NotAStruct {}
            """,
            expandedSource: """
            protocol Users {
                var token: String { get }
            }
            struct NotAProtocol {}
            class NotAStruct {}
            """,
            diagnostics: [
                DiagnosticSpec(message: "an @API protocol holds endpoint functions only; move this member to an extension or another type", line: 3, column: 5),
                DiagnosticSpec(message: "@API applies to a protocol", line: 5, column: 1),
                DiagnosticSpec(message: "@Request applies to a struct", line: 7, column: 1),
            ],
            macros: self.macros)
    }
}
