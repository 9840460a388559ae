import Synchronization
import Salvo

/// The closures a generated `…Mock` answers its endpoints with, by endpoint: set from any
/// task, read from any task.
///
/// ```swift
/// let mock = RepositoriesMock()
/// mock.mockList { owner, sort in
///     #expect(owner == "ada")
///     return [Repository(name: "engine")]
/// }
/// ```
public final class MockEndpoints: Sendable {
    private let handlers = Mutex<[String: any Sendable]>([:])

    public init() {}

    /// Answers `endpoint` with `handler` from now on.
    public func set(_ endpoint: String, _ handler: any Sendable) {
        self.handlers.withLock { $0[endpoint] = handler }
    }

    /// The handler set for `endpoint`, if any.
    public func handler<Handler>(_ endpoint: String, as type: Handler.Type) -> Handler? {
        self.handlers.withLock { $0[endpoint] } as? Handler
    }

    /// The error a call of an endpoint with no handler throws: `.invalidRequest` naming it.
    public static func notMocked(_ endpoint: String, in mock: String) -> ClientError {
        ClientError(.invalidRequest, detail: "\(mock).\(endpoint) was called but has no mock: set one with its mock… function")
    }

    // A completion handler of an endpoint with no handler hears the same error.

    public static func fail<Value>(_ completion: @Sendable (Result<Value, ClientError>) -> Void, _ endpoint: String, in mock: String) {
        completion(.failure(Self.notMocked(endpoint, in: mock)))
    }

    public static func fail<Value>(_ completion: @Sendable (Result<Value, any Error>) -> Void, _ endpoint: String, in mock: String) {
        completion(.failure(Self.notMocked(endpoint, in: mock)))
    }
}
