import HTTPTypes
import OrderedCollections

/// A header field of the builder DSL's `.headers { … }`. Make your own for a field you use
/// often:
///
/// ```swift
/// struct X_Api_Key: HeaderComponent {
///     let value: String
///     var field: HTTPField { HTTPField(name: HTTPField.Name("X-Api-Key")!, value: self.value) }
/// }
/// ```
public protocol HeaderComponent: Sendable {
    var field: HTTPField { get }
}

/// Any header field: `HeaderField("X-Trace", id)`. A name HTTP does not allow (a space, a colon)
/// makes the request fail when it is sent, `.invalidRequest` saying which.
public struct HeaderField: Sendable {
    let entry: HeaderEntry

    public init(_ name: String, _ value: String) {
        self.entry = HTTPField.Name(name).map { .field(HTTPField(name: $0, value: value)) } ?? .invalidName(name)
    }

    public init(_ name: HTTPField.Name, _ value: String) {
        self.entry = .field(HTTPField(name: name, value: value))
    }
}

/// A header the builder collected: a field, or a name that cannot be one.
public enum HeaderEntry: Sendable {
    case field(HTTPField)
    case invalidName(String)
}

/// The `Authorization` field: `Authorization(.bearer(token: token))`, `.basic(…)`.
public struct Authorization: HeaderComponent {
    public let field: HTTPField

    public init(_ credentials: Credentials) {
        self.field = HTTPField(name: .authorization, value: credentials.headerValue)
    }

    /// What the field carries.
    public enum Credentials: Sendable {
        case bearer(token: String)
        case basic(username: String, password: String)

        /// `Bearer token`, with the label left out (as `@Authorization(.bearer("…"))` spells it).
        public static func bearer(_ token: String) -> Credentials { .bearer(token: token) }

        /// The field's value: `Bearer …` or `Basic …`.
        public var headerValue: String {
            switch self {
            case .bearer(let token): HTTPCredentials.bearer(token).headerValue
            case .basic(let username, let password): HTTPCredentials.basic(username: username, password: password).headerValue
            }
        }
    }
}

@resultBuilder
public enum HeaderBuilder {
    public static func buildExpression(_ component: some HeaderComponent) -> [HeaderEntry] { [.field(component.field)] }
    public static func buildExpression(_ header: HeaderField) -> [HeaderEntry] { [header.entry] }
    public static func buildExpression(_ field: HTTPField) -> [HeaderEntry] { [.field(field)] }
    public static func buildBlock(_ parts: [HeaderEntry]...) -> [HeaderEntry] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [HeaderEntry]?) -> [HeaderEntry] { part ?? [] }
    public static func buildEither(first part: [HeaderEntry]) -> [HeaderEntry] { part }
    public static func buildEither(second part: [HeaderEntry]) -> [HeaderEntry] { part }
    public static func buildArray(_ parts: [[HeaderEntry]]) -> [HeaderEntry] { parts.flatMap { $0 } }
}

/// A named value of the builder DSL: a query item (`.queryItems { Key("page", value: 2) }`)
/// or a member of a JSON body (`.body { Key("user") { Key("name", value: "Ada") } }`).
/// Values are strings, numbers, booleans, nil (JSON null; an omitted query item), arrays of
/// them, or nested keys.
public struct Key: Sendable {
    public let name: String
    public let value: JSONValue

    public init(_ name: String, value: some JSONValueConvertible) {
        self.name = name
        self.value = value.jsonValue
    }

    /// A nested object of the keys the builder lists.
    public init(_ name: String, @KeyBuilder _ keys: () -> [Key]) {
        self.name = name
        self.value = Key.object(keys())
    }

    /// `keys` as one JSON object, in order (a name given again: the later value).
    static func object(_ keys: [Key]) -> JSONValue {
        var members = OrderedDictionary<String, JSONValue>()
        for key in keys { members[key.name] = key.value }
        return .object(members)
    }

    /// The key as query items: one per value of an array, none for null, a nested object
    /// as JSON text.
    var queryItems: [QueryItem] {
        switch self.value {
        case .null: []
        case .array(let values): values.flatMap { Key(self.name, value: $0).queryItems }
        case .string(let text): [QueryItem(self.name, text)]
        case .object: [QueryItem(self.name, self.value.description)]
        default: [QueryItem(self.name, self.value.description)]
        }
    }
}

@resultBuilder
public enum KeyBuilder {
    public static func buildExpression(_ key: Key) -> [Key] { [key] }
    public static func buildBlock(_ parts: [Key]...) -> [Key] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [Key]?) -> [Key] { part ?? [] }
    public static func buildEither(first part: [Key]) -> [Key] { part }
    public static func buildEither(second part: [Key]) -> [Key] { part }
    public static func buildArray(_ parts: [[Key]]) -> [Key] { parts.flatMap { $0 } }
}
