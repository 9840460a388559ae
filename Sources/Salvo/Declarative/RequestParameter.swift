/// A function parameter of an `@API` protocol that says where its value goes: the path, the
/// query, a header, the body or one field of it.
///
/// ```swift
/// @API
/// protocol Repositories {
///     @GET("/users/:owner/repos")
///     func list(owner: Path<String>, sort: Query<String?>, trace: Header<String>) async throws -> [Repository]
/// }
///
/// try await repositories.list(owner: "ada", sort: nil, trace: "abc")   // literals become the wrapper
/// try await repositories.list(owner: Path(name), sort: .init(order), trace: .init(id))
/// ```
///
/// Each role is a real type, so the role travels through type aliases (`typealias ID =
/// Path<Int>`) and module names (`Salvo.Path<Int>`): the generated code hands the value to
/// overloads the compiler chooses by its type. A parameter without a wrapper gets its role
/// from its name and the method: a path placeholder of the same name, else a query item for
/// GET, HEAD and DELETE, else a body field.
public struct RequestParameter<Role: RequestParameterRole, Value> {
    /// The argument.
    public var value: Value

    public init(_ value: Value) {
        self.value = value
    }
}

/// What a ``RequestParameter`` fills in.
public protocol RequestParameterRole: Sendable {}

/// Where a ``RequestParameter`` goes.
public enum RequestParameterRoles {
    /// Replaces `:name` or `{name}` in the path, percent-encoded as one segment.
    public enum Path: RequestParameterRole {}
    /// A query item; `nil` leaves it out, an array repeats the key as the client's form encoder
    /// says.
    public enum Query: RequestParameterRole {}
    /// A header field named after the parameter in Capital-Kebab-Case (`apiKey` is `Api-Key`);
    /// `nil` leaves it out.
    public enum Header: RequestParameterRole {}
    /// The whole body, encoded as the endpoint's encoding says (JSON unless told otherwise).
    public enum Body: RequestParameterRole {}
    /// One member of the body; all the fields of a call make one object (or one form).
    public enum Field: RequestParameterRole {}
}

/// A path parameter: `@GET("/users/:id") func user(id: Path<Int>)`.
public typealias Path<Value> = RequestParameter<RequestParameterRoles.Path, Value>
/// A query item: `func search(term: Query<String>, page: Query<Int?>)`.
public typealias Query<Value> = RequestParameter<RequestParameterRoles.Query, Value>
/// A header field named after the parameter: `requestID: Header<String>` sends `Request-Id`.
public typealias Header<Value> = RequestParameter<RequestParameterRoles.Header, Value>
/// The request body: `func create(todo: Body<Todo>)`. At most one, and never with fields.
public typealias Body<Value> = RequestParameter<RequestParameterRoles.Body, Value>
/// One field of the body: `func create(name: Field<String>, done: Field<Bool>)`.
public typealias Field<Value> = RequestParameter<RequestParameterRoles.Field, Value>

extension RequestParameter: Sendable where Value: Sendable {}
extension RequestParameter: Equatable where Value: Equatable {}
extension RequestParameter: Hashable where Value: Hashable {}

extension RequestParameter: CustomStringConvertible {
    public var description: String { String(describing: self.value) }
}

extension RequestParameter: ExpressibleByUnicodeScalarLiteral where Value: ExpressibleByStringLiteral {
    public init(unicodeScalarLiteral value: Value.StringLiteralType) {
        self.init(Value(stringLiteral: value))
    }
}

extension RequestParameter: ExpressibleByExtendedGraphemeClusterLiteral where Value: ExpressibleByStringLiteral {
    public init(extendedGraphemeClusterLiteral value: Value.StringLiteralType) {
        self.init(Value(stringLiteral: value))
    }
}

extension RequestParameter: ExpressibleByStringLiteral where Value: ExpressibleByStringLiteral {
    public init(stringLiteral value: Value.StringLiteralType) {
        self.init(Value(stringLiteral: value))
    }
}

extension RequestParameter: ExpressibleByStringInterpolation where Value: ExpressibleByStringInterpolation {
    public init(stringInterpolation: Value.StringInterpolation) {
        self.init(Value(stringInterpolation: stringInterpolation))
    }
}

extension RequestParameter: ExpressibleByIntegerLiteral where Value: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Value.IntegerLiteralType) {
        self.init(Value(integerLiteral: value))
    }
}

extension RequestParameter: ExpressibleByFloatLiteral where Value: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Value.FloatLiteralType) {
        self.init(Value(floatLiteral: value))
    }
}

extension RequestParameter: ExpressibleByBooleanLiteral where Value: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Value.BooleanLiteralType) {
        self.init(Value(booleanLiteral: value))
    }
}

extension RequestParameter: ExpressibleByNilLiteral where Value: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) {
        self.init(nil)
    }
}

extension RequestParameter: ExpressibleByArrayLiteral where Value: RangeReplaceableCollection {
    public init(arrayLiteral elements: Value.Element...) {
        self.init(Value(elements))
    }
}
