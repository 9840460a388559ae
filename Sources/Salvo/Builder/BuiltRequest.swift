import Foundation
import HTTPTypes

/// A request put together from its parts by the builder DSL: `Get("users", id, from:
/// service)` and its modifiers. It is a ``Request`` like any other — a ``Client`` sends it
/// (to the service's base URL, whatever the client's), with the client's middleware.
///
/// ```swift
/// let request = Get("users", 7, "posts", from: ExampleService())
///     .headers {
///         HeaderField("X-Api-Key", "sample")
///         Authorization(.bearer(token: token))
///     }
///     .queryItems { Key("page", value: 2) }
///     .responseBody([Post].self)
///     .responseError(Problem.self)
/// let (posts, error) = await client.outcome(request)
/// ```
public struct BuiltRequest<Success: Sendable, Failure: Sendable>: Request {
    public typealias SuccessResponseBody = Success
    public typealias FailureResponseBody = Failure
    public typealias RequestBody = EndpointBody

    /// What it is built into: an endpoint, with the service's base URL beside it.
    public internal(set) var endpoint: TypedEndpoint<Success, Failure>
    /// The service's base URL (nil: the client's).
    let base: URL?
    /// A header name HTTP does not allow, given to `.headers { … }`: the send fails, saying so.
    var invalidHeaderName: String?

    init(endpoint: TypedEndpoint<Success, Failure>, base: URL?, invalidHeaderName: String? = nil) {
        self.endpoint = endpoint
        self.base = base
        self.invalidHeaderName = invalidHeaderName
    }

    public var operationName: String { self.endpoint.operationName }
    public var method: HTTPRequest.Method { self.endpoint.method }
    public var path: String { self.endpoint.path }
    public var headerFields: HTTPFields { self.endpoint.headerFields }
    public var queryItems: [QueryItem] { self.endpoint.queryItems }
    public var body: EndpointBody { self.endpoint.body }
    public var metadata: RequestMetadata { self.endpoint.metadata }

    public func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? {
        try self.endpoint.encodeBody(with: coders)
    }

    public func makeHTTPRequest(baseURL: BaseURL, coders: Coders) throws(ClientError) -> HTTPRequest {
        if let name = self.invalidHeaderName {
            throw ClientError(.invalidRequest, detail: "\"\(name)\" is not a header field name")
        }
        let base = try self.base.map { (url) throws(ClientError) in try BaseURL(url.absoluteString) } ?? baseURL
        return try self.endpoint.makeHTTPRequest(baseURL: base, coders: coders)
    }

    public func decodeSuccessBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> Success {
        try self.endpoint.decodeSuccessBody(from: bytes, coders: coders)
    }

    public func decodeFailureBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> Failure {
        try self.endpoint.decodeFailureBody(from: bytes, coders: coders)
    }
}

// MARK: The verbs

/// `GET` of the path made of `segments` (each percent-encoded as one segment: `"users", 7`
/// is `/users/7`) on `service`.
public func Get(_ segments: any Sendable..., from service: some Service) -> BuiltRequest<Empty, Empty> {
    BuiltRequest.make(.get, segments, service)
}

/// `POST` of the path made of `segments` on `service`; a body with `.body { … }`.
public func Post(_ segments: any Sendable..., from service: some Service) -> BuiltRequest<Empty, Empty> {
    BuiltRequest.make(.post, segments, service)
}

/// `PUT` of the path made of `segments` on `service`.
public func Put(_ segments: any Sendable..., from service: some Service) -> BuiltRequest<Empty, Empty> {
    BuiltRequest.make(.put, segments, service)
}

/// `PATCH` of the path made of `segments` on `service`.
public func Patch(_ segments: any Sendable..., from service: some Service) -> BuiltRequest<Empty, Empty> {
    BuiltRequest.make(.patch, segments, service)
}

/// `DELETE` of the path made of `segments` on `service`.
public func Delete(_ segments: any Sendable..., from service: some Service) -> BuiltRequest<Empty, Empty> {
    BuiltRequest.make(.delete, segments, service)
}

/// `HEAD` of the path made of `segments` on `service`.
public func Head(_ segments: any Sendable..., from service: some Service) -> BuiltRequest<Empty, Empty> {
    BuiltRequest.make(.head, segments, service)
}

extension BuiltRequest where Success == Empty, Failure == Empty {
    static func make(_ method: HTTPRequest.Method, _ segments: [any Sendable], _ service: some Service) -> Self {
        let path = "/" + segments.map { PathSegment.encode(String(describing: $0)) }.joined(separator: "/")
        let endpoint = TypedEndpoint<Empty, Empty>(method: method, path: path).with(RequestMiddleware.self, [ServiceHooks(service: service)])
        return BuiltRequest(endpoint: endpoint, base: service.baseURL)
    }
}

/// One path segment, percent-encoded as RFC 3986 allows in a segment.
enum PathSegment {
    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/;?#"))) ?? text
    }
}

// MARK: Modifiers

extension BuiltRequest {
    /// Adds the header fields the builder lists (``HeaderField``, ``Authorization``, or your own
    /// ``HeaderComponent``); a name given again replaces the earlier value.
    public func headers(@HeaderBuilder _ fields: () -> [HeaderEntry]) -> Self {
        var copy = self
        for entry in fields() {
            switch entry {
            case .field(let field): copy.endpoint = copy.endpoint.header(field.name, field.value)
            case .invalidName(let name): copy.invalidHeaderName = copy.invalidHeaderName ?? name
            }
        }
        return copy
    }

    /// Adds query items, in order: `Key("page", value: 2)`; an array value repeats its key.
    public func queryItems(@KeyBuilder _ keys: () -> [Key]) -> Self {
        var copy = self
        for key in keys() {
            copy.endpoint.queryItems += key.queryItems
        }
        return copy
    }

    /// A JSON object body of the keys the builder lists, nested with `Key("name") { … }`.
    public func body(@KeyBuilder _ keys: () -> [Key]) -> Self {
        var copy = self
        copy.endpoint.body = .json(Key.object(keys()))
        return copy
    }

    /// The body as it is: an `HTTPBody`, or an `Encodable` value sent as JSON.
    public func body(_ body: EndpointBody) -> Self {
        var copy = self
        copy.endpoint.body = body
        return copy
    }

    /// Decodes a successful response as `T`.
    public func responseBody<T: Decodable & Sendable>(_ type: T.Type) -> BuiltRequest<T, Failure> {
        BuiltRequest<T, Failure>(endpoint: self.endpoint.decoding(type), base: self.base, invalidHeaderName: self.invalidHeaderName)
    }

    /// Decodes a failed response's body as `E` (`error.failureBody(as: E.self)`).
    public func responseError<E: Decodable & Sendable>(_ type: E.Type) -> BuiltRequest<Success, E> {
        BuiltRequest<Success, E>(endpoint: self.endpoint.failing(as: type), base: self.base, invalidHeaderName: self.invalidHeaderName)
    }

    /// Asks for credentials from the client's authorization middleware (`TokenAuthorization`
    /// or `StaticAuthorization` with `scope: .optIn`).
    public func authorize() -> Self {
        BuiltRequest(endpoint: self.endpoint.authorized(), base: self.base, invalidHeaderName: self.invalidHeaderName)
    }

    /// A time limit for this request, used when the call gives none.
    public func timeout(_ duration: Duration) -> Self {
        BuiltRequest(endpoint: self.endpoint.timeout(duration), base: self.base, invalidHeaderName: self.invalidHeaderName)
    }

    /// Tags for the client's middleware.
    public func tagged(_ tags: String...) -> Self {
        var copy = self
        for tag in tags { copy.endpoint = copy.endpoint.tagged(tag) }
        return copy
    }
}
