import Foundation

/// A request as a value whose failure body is not decoded: the common case of
/// ``TypedEndpoint``. `.failing(as:)` gives one with a typed failure body.
public typealias Endpoint<Success: Sendable> = TypedEndpoint<Success, Empty>

/// A request as a value: method, path, query, headers and body, with the type its success
/// (and failure) body decodes to. Mostly used through its alias ``Endpoint``.
///
/// Build one with a static function per verb, or with its initializer as a request model:
///
/// ```swift
/// let me = Endpoint<User>.get("/me")
/// let login = Endpoint<Token>.post("/login", body: Credentials(username: "ada", password: "…"))
/// let search = Endpoint<[User]>(path: "/users", query: [QueryItem("q", "ada")])   // GET by default
///
/// extension Endpoint {
///     static func posts(by user: Int) -> Endpoint<[Post]> { .get("/users/\(segment: user)/posts") }
/// }
/// let posts = try await client.value(.posts(by: 7))
/// ```
///
/// It is a ``Request`` like any other: ``Client`` sends both the same way.
public struct TypedEndpoint<Success: Sendable, Failure: Sendable>: Request {
    public typealias SuccessResponseBody = Success
    public typealias FailureResponseBody = Failure
    public typealias RequestBody = EndpointBody

    public var method: HTTPRequest.Method
    public var path: String
    public var queryItems: [QueryItem]
    public var headerFields: HTTPFields
    public var body: EndpointBody
    /// The operation's name for logs, metrics and middleware (default: method and path).
    public var operationName: String
    /// Tags and typed values for middleware (see ``tagged(_:)`` and ``with(_:_:)``).
    public var metadata = RequestMetadata()
    private let decodeSuccess: @Sendable ([UInt8], Coders) throws(ClientError) -> Success
    private let decodeFailure: @Sendable ([UInt8], Coders) throws(ClientError) -> Failure

    /// A request model: GET by default.
    public init(method: HTTPRequest.Method = .get, path: String, query: [QueryItem] = [], headers: HTTPFields = [:],
                body: EndpointBody = .none, operationName: String? = nil)
    where Success: Decodable {
        self.init(method: method, path: path, query: query, headers: headers, body: body, operationName: operationName,
                  decodeSuccess: { (bytes, coders) throws(ClientError) in try ResponseDecoding.decode(Success.self, from: bytes, coders: coders) },
                  decodeFailure: ResponseDecoding.decoder(for: Failure.self))
    }

    /// A request model whose success body is not read (`Endpoint<Void>`): GET by default.
    public init(method: HTTPRequest.Method = .get, path: String, query: [QueryItem] = [], headers: HTTPFields = [:],
                body: EndpointBody = .none, operationName: String? = nil)
    where Success == Void {
        self.init(method: method, path: path, query: query, headers: headers, body: body, operationName: operationName,
                  decodeSuccess: { _, _ in }, decodeFailure: ResponseDecoding.decoder(for: Failure.self))
    }

    /// A request model with your own decoding of each body.
    public init(method: HTTPRequest.Method = .get, path: String, query: [QueryItem] = [], headers: HTTPFields = [:],
                body: EndpointBody = .none, operationName: String? = nil,
                decodeSuccess: @escaping @Sendable ([UInt8], Coders) throws(ClientError) -> Success,
                decodeFailure: @escaping @Sendable ([UInt8], Coders) throws(ClientError) -> Failure) {
        self.method = method
        self.path = path
        self.queryItems = query
        self.headerFields = headers
        self.body = body
        self.operationName = operationName ?? "\(method.rawValue) \(path)"
        self.decodeSuccess = decodeSuccess
        self.decodeFailure = decodeFailure
    }

    public func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? {
        try self.body.make?(coders)
    }

    public func decodeSuccessBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> Success {
        try self.decodeSuccess(bytes, coders)
    }

    public func decodeFailureBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> Failure {
        try self.decodeFailure(bytes, coders)
    }

    /// The same request, its success body decoded as `type`.
    public func decoding<T: Decodable & Sendable>(_ type: T.Type) -> TypedEndpoint<T, Failure> {
        self.replacingSuccessDecoder { (bytes, coders) throws(ClientError) in try ResponseDecoding.decode(T.self, from: bytes, coders: coders) }
    }

    /// The same request with another success decoder.
    func replacingSuccessDecoder<T>(_ decode: @escaping @Sendable ([UInt8], Coders) throws(ClientError) -> T) -> TypedEndpoint<T, Failure> {
        var endpoint = TypedEndpoint<T, Failure>(method: self.method, path: self.path, query: self.queryItems, headers: self.headerFields,
                                                 body: self.body, operationName: self.operationName,
                                                 decodeSuccess: decode, decodeFailure: self.decodeFailure)
        endpoint.metadata = self.metadata
        return endpoint
    }

    /// The same request, its failure body decoded as `type`.
    public func failing<E: Decodable & Sendable>(as type: E.Type) -> TypedEndpoint<Success, E> {
        var endpoint = TypedEndpoint<Success, E>(
            method: self.method, path: self.path, query: self.queryItems, headers: self.headerFields,
            body: self.body, operationName: self.operationName, decodeSuccess: self.decodeSuccess,
            decodeFailure: { (bytes, coders) throws(ClientError) in try ResponseDecoding.decode(E.self, from: bytes, coders: coders) })
        endpoint.metadata = self.metadata
        return endpoint
    }

    /// The same request with `name: value` added to its headers.
    public func header(_ name: HTTPField.Name, _ value: String) -> Self {
        var copy = self
        copy.headerFields.append(HTTPField(name: name, value: value))
        return copy
    }

    /// The same request with `items` added to its query.
    public func query(_ items: QueryItem...) -> Self {
        var copy = self
        copy.queryItems += items
        return copy
    }

    /// The same request with `tags` added, for middleware that applies to some requests.
    public func tagged(_ tags: String...) -> Self {
        var copy = self
        copy.metadata.tags.formUnion(tags)
        return copy
    }

    /// The same request carrying `value` under `key`, for middleware to read.
    public func with<Key: RequestMetadataKey>(_ key: Key.Type, _ value: Key.Value) -> Self {
        var copy = self
        copy.metadata[key] = value
        return copy
    }

    /// The same request with a time of its own (an export that is known to be slow, a
    /// health check that must be quick): used when the call gives none, instead of the
    /// client's. Middleware read it as `request.metadata[RequestTimeout.self]`.
    public func timeout(_ duration: Duration) -> Self {
        self.with(RequestTimeout.self, duration)
    }
}

/// A path from a `String` enum, for endpoints named in one place:
///
/// ```swift
/// enum API: String, EndpointPath { case login = "/login", me = "/me" }
/// let me = Endpoint<User>.get(API.me)
/// ```
public protocol EndpointPath: RawRepresentable, Sendable where RawValue == String {}

extension TypedEndpoint where Success: Decodable {
    public static func get(_ path: String, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .get, path: path, query: query, headers: headers)
    }

    public static func delete(_ path: String, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .delete, path: path, query: query, headers: headers)
    }

    public static func head(_ path: String, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .head, path: path, query: query, headers: headers)
    }

    public static func options(_ path: String, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .options, path: path, query: query, headers: headers)
    }

    /// POST with `body` as JSON.
    public static func post<Body: Encodable & Sendable>(_ path: String, body: Body, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .post, path: path, query: query, headers: headers, body: .json(body))
    }

    /// POST with `body` as it is (form, multipart, bytes, a file…), or none.
    public static func post(_ path: String, body: HTTPBody? = nil, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .post, path: path, query: query, headers: headers, body: body.map { .raw($0) } ?? .none)
    }

    public static func put<Body: Encodable & Sendable>(_ path: String, body: Body, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .put, path: path, query: query, headers: headers, body: .json(body))
    }

    public static func put(_ path: String, body: HTTPBody? = nil, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .put, path: path, query: query, headers: headers, body: body.map { .raw($0) } ?? .none)
    }

    public static func patch<Body: Encodable & Sendable>(_ path: String, body: Body, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .patch, path: path, query: query, headers: headers, body: .json(body))
    }

    public static func patch(_ path: String, body: HTTPBody? = nil, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .patch, path: path, query: query, headers: headers, body: body.map { .raw($0) } ?? .none)
    }

    public static func get(_ path: some EndpointPath, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        .get(path.rawValue, query: query, headers: headers)
    }

    public static func delete(_ path: some EndpointPath, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        .delete(path.rawValue, query: query, headers: headers)
    }

    public static func post<Body: Encodable & Sendable>(_ path: some EndpointPath, body: Body, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        .post(path.rawValue, body: body, query: query, headers: headers)
    }

    public static func put<Body: Encodable & Sendable>(_ path: some EndpointPath, body: Body, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        .put(path.rawValue, body: body, query: query, headers: headers)
    }
}

/// What an endpoint sends: nothing, a body ready to go, or a value encoded with the
/// client's coders when the request is made.
public struct EndpointBody: Sendable {
    let make: (@Sendable (Coders) throws(ClientError) -> HTTPBody?)?

    /// No body.
    public static var none: EndpointBody { EndpointBody(make: nil) }

    /// `body` as it is.
    public static func raw(_ body: HTTPBody) -> EndpointBody { EndpointBody { _ in body } }

    /// `value` as JSON, with the client's encoder.
    public static func json<Value: Encodable & Sendable>(_ value: Value) -> EndpointBody {
        EndpointBody { (coders) throws(ClientError) in .bytes(try coders.encodeJSON(value), contentType: "application/json") }
    }

    /// `value` as a form (`application/x-www-form-urlencoded`), with the client's form
    /// encoder (its key mapping, array and date styles).
    public static func form<Value: Encodable & Sendable>(_ value: Value) -> EndpointBody {
        EndpointBody { (coders) throws(ClientError) in try .form(value, encoder: coders.formEncoder) }
    }

    /// A body made from the client's coders when the request is made; an error it throws
    /// fails the call as `.encodingFailed` (a `ClientError` passes as it is).
    ///
    /// ```swift
    /// body: .encoded { coders in try .multipart([.json(profile, name: "profile", encoder: coders.encoder)]) }
    /// ```
    public static func encoded(_ make: @escaping @Sendable (Coders) throws -> HTTPBody?) -> EndpointBody {
        EndpointBody { (coders) throws(ClientError) in
            do {
                return try make(coders)
            } catch {
                throw ClientError.encoding(error, of: HTTPBody.self)
            }
        }
    }
}
