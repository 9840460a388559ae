import Foundation

/// An endpoint as a type: what it sends, and what it answers with on success and on failure.
///
/// ```swift
/// struct Login: Request {
///     struct Credentials: Encodable, Sendable { var username, password: String }
///     struct Token: Decodable, Sendable { var token: String }
///     struct Problem: Decodable, Sendable { var error: String }
///     typealias SuccessResponseBody = Token
///     typealias FailureResponseBody = Problem
///
///     static var operationID: String { "login" }
///     var method: HTTPRequest.Method { .post }
///     var path: String { "/login" }
///     var body: Credentials
/// }
///
/// let token = try await client.value(Login(body: .init(username: "ada", password: "…")))
/// ```
///
/// Only ``path`` is required; everything else has a default: GET, no headers, no query, no
/// body (`Never?`), an ``Empty`` success and failure. An `Encodable` body goes as JSON, an
/// `HTTPBody` as it is; a `Decodable` response is decoded from JSON, `[UInt8]`, `Data` and
/// `String` are the raw body. Each step can be replaced: ``encodeBody(with:)`` (or
/// ``encodeBody()``, bytes you make yourself), ``makeHTTPRequest(baseURL:coders:)``,
/// ``decodeSuccessBody(from:coders:)``, ``decodeFailureBody(from:coders:)``.
///
/// The same concept has two other spellings: ``Endpoint``, a value built by static functions
/// (`.get("users")`) or by its initializer (a request model with method, path, query,
/// headers and body). Whatever the spelling, ``Client`` sends it the same way.
public protocol Request<SuccessResponseBody, FailureResponseBody>: Sendable {
    /// What the request sends: `Never?` for none, an `Encodable` value (JSON), an `HTTPBody`.
    associatedtype RequestBody: Sendable = Never?
    /// What a successful response decodes to.
    associatedtype SuccessResponseBody: Sendable = Empty
    /// What a failed response (see ``Client/Configuration/validators``) decodes to.
    associatedtype FailureResponseBody: Sendable = Empty

    /// The operation's name, for logs, metrics and middleware (default: the type's name).
    static var operationID: String { get }
    /// This request's operation name (default: ``operationID``; an ``Endpoint`` has its own).
    var operationName: String { get }
    var method: HTTPRequest.Method { get }
    /// The path, relative to the client's base URL. Use `\(segment: value)` for values.
    var path: String { get }
    var headerFields: HTTPFields { get }
    var queryItems: [QueryItem] { get }
    var body: RequestBody { get }
    /// Tags and typed values for the client's middleware (default: none).
    var metadata: RequestMetadata { get }

    /// The body as it goes on the wire; nil sends none.
    func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody?
    /// The body's bytes made by the request itself, as other libraries spell the hook
    /// (Simplicity's `encodeBody()`): when it returns bytes, they go as the body, with the
    /// `Content-Type` your ``headerFields`` name, whatever ``body`` is. Default: nil, and the
    /// body is made from ``body`` (``encodeBody(with:)``). An error it throws fails the call as
    /// `.encodingFailed` (a ``ClientError`` as it is).
    func encodeBody() throws -> Data?
    /// The request head. The default joins the base URL and ``path``, adds ``queryItems``
    /// (after any query in the path) and ``headerFields``.
    func makeHTTPRequest(baseURL: BaseURL, coders: Coders) throws(ClientError) -> HTTPRequest
    func decodeSuccessBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> SuccessResponseBody
    func decodeFailureBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> FailureResponseBody
}

extension Request {
    public static var operationID: String { String(describing: Self.self) }
    public var operationName: String { Self.operationID }
    public var method: HTTPRequest.Method { .get }
    public var headerFields: HTTPFields { [:] }
    public var queryItems: [QueryItem] { [] }
    public var metadata: RequestMetadata { RequestMetadata() }

    public func makeHTTPRequest(baseURL: BaseURL, coders: Coders) throws(ClientError) -> HTTPRequest {
        try baseURL.request(method: self.method, path: self.path, query: self.queryItems, headerFields: self.headerFields)
    }
}

extension Request {
    public func encodeBody() throws -> Data? { nil }

    /// The bytes of ``encodeBody()``, when the request makes its body itself.
    func ownBody() throws(ClientError) -> HTTPBody? {
        do {
            return try self.encodeBody().map { HTTPBody.bytes(Array($0)) }
        } catch {
            throw ClientError.encoding(error, of: Self.self)
        }
    }
}

extension Request where RequestBody == Never? {
    public var body: Never? { nil }
    public func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? { try self.ownBody() }
}

extension Request where RequestBody: Encodable {
    public func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? {
        if let own = try self.ownBody() { return own }
        return .bytes(try coders.encodeJSON(self.body), contentType: "application/json")
    }
}

extension Request where RequestBody == HTTPBody {
    public func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? { try self.ownBody() ?? self.body }
}

extension Request where RequestBody == HTTPBody? {
    public func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? { try self.ownBody() ?? self.body }
}

// MARK: Decoding, by the type asked for

extension Request where SuccessResponseBody: Decodable {
    public func decodeSuccessBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> SuccessResponseBody {
        try ResponseDecoding.decode(SuccessResponseBody.self, from: bytes, coders: coders)
    }
}

extension Request where FailureResponseBody: Decodable {
    public func decodeFailureBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> FailureResponseBody {
        try ResponseDecoding.decode(FailureResponseBody.self, from: bytes, coders: coders)
    }
}

extension Request where SuccessResponseBody == Void {
    /// A success body that is not read.
    public func decodeSuccessBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> Void {}
}

/// How a body becomes the type asked for: raw types as they are, ``Empty`` from anything,
/// the rest from JSON.
enum ResponseDecoding {
    /// A decoder for a type known to be `Decodable` (or `Void`) only when the request is
    /// built: an endpoint's failure type, which its builders do not constrain (so that
    /// `extension Endpoint where Success == X` needs nothing more). A type that is neither
    /// fails to decode, with the reason.
    static func decoder<Value: Sendable>(for type: Value.Type) -> @Sendable ([UInt8], Coders) throws(ClientError) -> Value {
        if let nothing = () as? Value { return { _, _ in nothing } }
        return { bytes, coders throws(ClientError) in
            guard let decodable = Value.self as? any Decodable.Type else {
                throw ClientError(.decodingFailed, detail: "\(Value.self) is not Decodable: give the request a decoder for it")
            }
            return try Self.decode(decodable, as: Value.self, from: bytes, coders: coders)
        }
    }

    private static func decode<D: Decodable, Value>(_ type: D.Type, as: Value.Type, from bytes: [UInt8], coders: Coders) throws(ClientError) -> Value {
        guard let value = try Self.decode(D.self, from: bytes, coders: coders) as? Value else {
            throw ClientError(.decodingFailed, detail: "\(D.self) is not \(Value.self)")
        }
        return value
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8], coders: Coders) throws(ClientError) -> Value {
        if Value.self == Empty.self { return Empty() as! Value }
        if Value.self == [UInt8].self { return bytes as! Value }
        if Value.self == Data.self { return Data(bytes) as! Value }
        if Value.self == String.self { return String(decoding: bytes, as: UTF8.self) as! Value }
        return try coders.decodeJSON(Value.self, from: bytes)
    }
}
