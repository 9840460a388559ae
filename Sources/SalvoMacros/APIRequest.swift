import Foundation
import HTTPTypes
import Salvo

/// One call of an `@API` endpoint, put together from the function's arguments: what the
/// generated code builds, and what a hand-written implementation of the protocol can build too.
///
/// ```swift
/// func repository(owner: Path<String>, name: String, page: Int?) async throws -> Repository {
///     var request = APIRequest(method: .get, path: "/repos/:owner/:name", scope: Self.scope)
///     request.add(owner, key: "owner")
///     request.add(name, key: "name")
///     request.add(page, key: "page")
///     return try await request.send(with: self.client)
/// }
/// ```
///
/// Each argument goes where its type says (`Path`, `Query`, `Header`, `Body`,
/// `Field`, `Part`); an argument of any other type goes into the path when the path has a
/// placeholder of its key (`:name` or `{name}`), into the query for GET, HEAD and DELETE, and
/// into the body otherwise. Nothing here throws: a misuse the compiler could not see (two bodies,
/// a body with fields, a placeholder left unfilled) fails the call when it is sent, with
/// `.invalidRequest` saying which.
public struct APIRequest<Failure: Decodable & Sendable>: Sendable {
    /// What the declaration fixed.
    public let endpoint: APIEndpoint
    /// The header fields: the scope's, then the arguments'.
    public private(set) var headerFields: HTTPFields
    /// The values of the path's placeholders, in the path's order, as they arrive.
    private(set) var pathValues: [String?]
    private(set) var query: [APIQueryArgument] = []
    private(set) var content = APIContent.none
    private(set) var problem: ClientError?

    /// A call of `endpoint` whose failure bodies are decoded as `failure` (`@ErrorBody(Problem.self)`).
    public init(_ endpoint: APIEndpoint, failure: Failure.Type) {
        self.endpoint = endpoint
        self.headerFields = endpoint.scope.headerFields
        self.pathValues = endpoint.placeholders.isEmpty ? [] : Array(repeating: nil, count: endpoint.placeholders.count)
        if let name = endpoint.scope.invalidHeaderName {
            self.problem = ClientError(.invalidRequest, detail: "\(endpoint.operationName): \"\(name)\" is not a header field name")
        }
    }

    /// A call made by hand: the method, the path with its placeholders, the scope.
    public init(method: HTTPRequest.Method, path: String, scope: APIScope, failure: Failure.Type, operationName: String? = nil) {
        self.init(APIEndpoint(method: method, path: path, scope: scope, operationName: operationName), failure: failure)
    }

    /// The method.
    public var method: HTTPRequest.Method { self.endpoint.method }

    /// The path, with the placeholders filled so far (the others as declared).
    public var path: String {
        let literals = self.endpoint.literals
        guard literals.count > 1 else { return literals[0] }
        var path = ""
        path.reserveCapacity(self.endpoint.path.utf8.count + 32)
        path += literals[0]
        for index in self.pathValues.indices {
            path += self.pathValues[index] ?? ":" + self.endpoint.placeholders[index]
            path += literals[index + 1]
        }
        return path
    }

    var scope: APIScope { self.endpoint.scope }
    var operationName: String { self.endpoint.operationName }

    // MARK: Arguments by role

    /// Fills the placeholder `:key` (or `{key}`) with the value, percent-encoded as one segment.
    public mutating func add<Value>(_ parameter: Path<Value>, key: String) {
        let slots = self.endpoint.slots(for: key)
        guard !slots.isEmpty else {
            return self.fail("the path \"\(self.endpoint.path)\" has no placeholder :\(key) for the path parameter \"\(key)\"")
        }
        self.fill(slots, with: parameter.value, key: key)
    }

    /// A query item named `key` (after the key mapping); nil leaves it out.
    public mutating func add<Value: Encodable & Sendable>(_ parameter: Query<Value>, key: String) {
        self.addQuery(parameter.value, key: key)
    }

    /// A header field named after `key` in Capital-Kebab-Case; nil leaves it out.
    public mutating func add<Value>(_ parameter: Header<Value>, key: String) {
        guard let text = ParameterText.text(of: parameter.value) else { return }
        guard let name = self.endpoint.headerName(for: key) else {
            return self.fail("\"\(HeaderName.capitalKebab(key))\" is not a header field name")
        }
        // An argument replaces a field of the same name that the attributes set.
        let fixed = self.endpoint.scope.headerFields[fields: name]
        if !fixed.isEmpty, self.headerFields[fields: name] == fixed {
            self.headerFields[fields: name] = []
        }
        self.headerFields.append(HTTPField(name: name, value: text))
    }

    /// The whole body.
    public mutating func add<Value: Encodable & Sendable>(_ parameter: Body<Value>, key: String) {
        switch self.content {
        case .none: self.content = .body(parameter.value)
        case .body: self.fail("two Body parameters: \"\(key)\" is the second")
        case .fields, .parts: self.fail("a Body parameter (\"\(key)\") with fields: a request has one or the other")
        }
    }

    /// One field of the body (one part of a multipart body); nil leaves it out.
    public mutating func add<Value: Encodable & Sendable>(_ parameter: Field<Value>, key: String) {
        self.addField(parameter.value, key: key)
    }

    /// One part of a multipart body, named `key` unless the part has a name.
    public mutating func add(_ part: Part, key: String) {
        self.addPart(part.multipartPart(named: key), key: key)
    }

    /// One part of a multipart body; nil leaves it out.
    public mutating func add(_ part: Part?, key: String) {
        if let part { self.add(part, key: key) }
    }

    /// An argument without a role: the path if it has a placeholder `key`, else the query for
    /// GET, HEAD and DELETE, else a body field.
    public mutating func add<Value: Encodable & Sendable>(_ value: Value, key: String) {
        let slots = self.endpoint.slots(for: key)
        if !slots.isEmpty {
            self.fill(slots, with: value, key: key)
        } else if self.method == .get || self.method == .head || self.method == .delete {
            self.addQuery(value, key: key)
        } else {
            self.addField(value, key: key)
        }
    }

    // MARK: Helpers

    /// Fills `slots` with the value as one segment. An empty value, or `.` or `..` (which
    /// would change the path's meaning), fails the call instead.
    private mutating func fill<Value>(_ slots: [Int], with value: Value, key: String) {
        guard let text = ParameterText.text(of: value) else {
            return self.fail("the path parameter \"\(key)\" is nil")
        }
        guard !text.isEmpty, text != ".", text != ".." else {
            return self.fail("the path parameter \"\(key)\" is \"\(text)\", which is not a path segment")
        }
        let segment = PercentEncoding.encode(text)
        for slot in slots {
            self.pathValues[slot] = segment
        }
    }

    private mutating func addQuery<Value: Encodable & Sendable>(_ value: Value, key: String) {
        if Value.self == String.self {
            return self.query.append(APIQueryArgument(key: key, text: unsafeBitCast(value, to: String.self), value: nil))
        }
        if Value.self == Int.self {
            return self.query.append(APIQueryArgument(key: key, text: String(unsafeBitCast(value, to: Int.self)), value: nil))
        }
        if ParameterText.isNil(value) { return }
        self.query.append(APIQueryArgument(key: key, text: nil, value: value))
    }

    private mutating func addField<Value: Encodable & Sendable>(_ value: Value, key: String) {
        if ParameterText.isNil(value) { return }
        if self.scope.bodyEncoding == .multipart {
            do {
                return self.addPart(try MultipartField.part(value, key: key), key: key)
            } catch {
                if self.problem == nil { self.problem = error }
                return
            }
        }
        switch self.content {
        case .none: self.content = .fields([(key, value)])
        case .fields(var fields):
            self.content = .none
            fields.append((key, value))
            self.content = .fields(fields)
        case .body: self.fail("a field (\"\(key)\") with a Body parameter: a request has one or the other")
        case .parts: self.fail("a field (\"\(key)\") in a request of parts")
        }
    }

    private mutating func addPart(_ part: MultipartPart, key: String) {
        switch self.content {
        case .none: self.content = .parts([part])
        case .parts(var parts):
            self.content = .none
            parts.append(part)
            self.content = .parts(parts)
        case .body, .fields: self.fail("a part (\"\(key)\") with a body or fields: a multipart request has parts only")
        }
    }

    private mutating func fail(_ detail: String) {
        if self.problem == nil {
            self.problem = ClientError(.invalidRequest, detail: "\(self.operationName): \(detail)")
        }
    }
}

/// A query item waiting for the client's key mapping: text already (a string or an integer,
/// which no encoder setting changes), or a value for the client's form encoder.
struct APIQueryArgument: Sendable {
    let key: String
    let text: String?
    let value: (any Encodable & Sendable)?
}

/// What the body parameters of a call made so far.
enum APIContent: Sendable {
    case none
    case body(any Encodable & Sendable)
    case fields([(key: String, value: any Encodable & Sendable)])
    case parts([MultipartPart])
}

extension APIRequest where Failure == Empty {
    /// A call of `endpoint` whose failure bodies are not decoded.
    public init(_ endpoint: APIEndpoint) {
        self.init(endpoint, failure: Empty.self)
    }

    /// A call made by hand, whose failure bodies are not decoded.
    public init(method: HTTPRequest.Method, path: String, scope: APIScope, operationName: String? = nil) {
        self.init(method: method, path: path, scope: scope, failure: Empty.self, operationName: operationName)
    }
}

/// A field of a multipart request: text as it is, anything else as a JSON part.
enum MultipartField {
    static func part<Value: Encodable & Sendable>(_ value: Value, key: String) throws(ClientError) -> MultipartPart {
        if let text = ParameterText.plainText(of: value) {
            return .text(text, name: key)
        }
        return try .json(value, name: key)
    }
}
