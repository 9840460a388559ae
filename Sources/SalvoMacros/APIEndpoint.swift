import HTTPTypes
import Salvo

/// What the declaration of an endpoint fixes, worked out once: the method, the path cut at its
/// placeholders, for each parameter key the placeholder it fills and the header name it would
/// have, the scope. The generated code keeps one per endpoint (a static constant) and starts
/// every call's ``APIRequest`` from it, so that a call does no parsing.
///
/// ```swift
/// private static let todos = APIEndpoint(method: .get, path: "/users/:name/todos", keys: ["name", "done"],
///                                        scope: Self.scope, operationName: "Users.todos(name:done:)")
/// ```
public final class APIEndpoint: Sendable {
    /// The method.
    public let method: HTTPRequest.Method
    /// The path as declared, placeholders and all.
    public let path: String
    /// What the attributes say.
    public let scope: APIScope
    /// The name middleware and logs see.
    public let operationName: String
    /// The path's text between placeholders: one more than ``placeholders``.
    let literals: [String]
    /// The placeholders' names, in the path's order.
    let placeholders: [String]
    let keys: [Key]

    /// A parameter's key, with what it needs worked out.
    struct Key: Sendable {
        let name: String
        /// The placeholders it fills (a name may stand more than once in a path).
        let slots: [Int]
        /// Its header field name in Capital-Kebab-Case, when that is a valid name.
        let headerName: HTTPField.Name?
    }

    /// An endpoint; `keys` are its parameters' keys (a key not listed still works, worked out
    /// at each call).
    public init(method: HTTPRequest.Method, path: String, keys: [String] = [], scope: APIScope, operationName: String? = nil) {
        self.method = method
        self.path = path
        self.scope = scope
        self.operationName = operationName ?? "\(method.rawValue) \(path)"
        let (literals, placeholders) = PathTemplate.split(path)
        self.literals = literals
        self.placeholders = placeholders
        self.keys = keys.map { Self.key($0, placeholders: placeholders) }
    }

    /// The placeholders `key` fills; none when the path has no placeholder of its name.
    func slots(for key: String) -> [Int] {
        for index in self.keys.indices where self.keys[index].name == key {
            return self.keys[index].slots
        }
        return Self.slots(key, in: self.placeholders)
    }

    /// The header field name of `key`, if it makes a valid one.
    func headerName(for key: String) -> HTTPField.Name? {
        for index in self.keys.indices where self.keys[index].name == key {
            return self.keys[index].headerName
        }
        return HTTPField.Name(HeaderName.capitalKebab(key))
    }

    private static func key(_ name: String, placeholders: [String]) -> Key {
        Key(name: name, slots: Self.slots(name, in: placeholders), headerName: HTTPField.Name(HeaderName.capitalKebab(name)))
    }

    private static func slots(_ name: String, in placeholders: [String]) -> [Int] {
        placeholders.indices.filter { placeholders[$0] == name }
    }
}
