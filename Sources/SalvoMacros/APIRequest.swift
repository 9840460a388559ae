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
/// Each argument goes where its type says (``Path``, ``Query``, ``Header``, ``Body``,
/// ``Field``, ``Part``); an argument of any other type goes into the path when the path has a
/// placeholder of its key (`:name` or `{name}`), into the query for GET, HEAD and DELETE, and
/// into the body otherwise. Nothing here throws: a misuse the compiler could not see (two bodies,
/// a body with fields, a placeholder left unfilled) fails the call when it is sent, with
/// `.invalidRequest` saying which.
public struct APIRequest<Failure: Sendable>: Sendable {
    /// The method.
    public let method: HTTPRequest.Method
    /// The path, placeholders filled as arguments arrive; it may carry a query of its own.
    public private(set) var path: String
    /// The header fields: the scope's, then the arguments'.
    public private(set) var headerFields: HTTPFields
    let scope: APIScope
    let operationName: String
    private(set) var query: [QueryArgument] = []
    private(set) var content = Content.none
    private(set) var problem: ClientError?

    /// A query item waiting for the client's form encoder.
    struct QueryArgument: Sendable {
        let key: String
        let value: any Encodable & Sendable
    }

    /// What the body parameters made so far.
    enum Content: Sendable {
        case none
        case body(any Encodable & Sendable)
        case fields([(key: String, value: any Encodable & Sendable)])
        case parts([MultipartPart])
    }

    /// A call whose failure bodies are decoded as `failure` (`@ErrorBody(Problem.self)`).
    public init(method: HTTPRequest.Method, path: String, scope: APIScope, failure: Failure.Type,
                operationName: String? = nil) {
        self.method = method
        self.path = path
        self.scope = scope
        self.headerFields = scope.headerFields
        self.operationName = operationName ?? "\(method.rawValue) \(path)"
        if let name = scope.invalidHeaderName {
            self.problem = ClientError(.invalidRequest, detail: "\"\(name)\" is not a header field name")
        }
    }

    // MARK: Arguments by role

    /// Fills the placeholder `:key` (or `{key}`) with the value, percent-encoded as one segment.
    public mutating func add<Value>(_ parameter: Path<Value>, key: String) {
        guard let text = ParameterText.text(of: parameter.value) else {
            return self.fail("the path parameter \"\(key)\" is nil")
        }
        if !PathTemplate.fill(&self.path, key: key, with: text) {
            self.fail("the path \"\(self.path)\" has no placeholder :\(key) for the path parameter \"\(key)\"")
        }
    }

    /// A query item named `key` (after the key mapping); nil leaves it out.
    public mutating func add<Value: Encodable & Sendable>(_ parameter: Query<Value>, key: String) {
        self.addQuery(parameter.value, key: key)
    }

    /// A header field named after `key` in Capital-Kebab-Case; nil leaves it out.
    public mutating func add<Value>(_ parameter: Header<Value>, key: String) {
        guard let text = ParameterText.text(of: parameter.value) else { return }
        let name = HeaderName.capitalKebab(key)
        guard let fieldName = HTTPField.Name(name) else {
            return self.fail("\"\(name)\" is not a header field name")
        }
        self.headerFields.append(HTTPField(name: fieldName, value: text))
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
        if PathTemplate.hasPlaceholder(self.path, key: key) {
            self.add(Path(value), key: key)
        } else if self.method == .get || self.method == .head || self.method == .delete {
            self.addQuery(value, key: key)
        } else {
            self.addField(value, key: key)
        }
    }

    // MARK: Helpers

    private mutating func addQuery<Value: Encodable & Sendable>(_ value: Value, key: String) {
        if ParameterText.isNil(value) { return }
        self.query.append(QueryArgument(key: key, value: value))
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

extension APIRequest where Failure == Empty {
    /// A call whose failure bodies are not decoded.
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
