import Foundation
import HTTPTypes
import Salvo

/// An ``APIRequest`` with its success type chosen: the `Request` the client sends. It encodes
/// the query and the body with the scope's coders when the attributes set some, else with the
/// client's, and decodes with the same.
struct APICall<Success: Sendable, Failure: Sendable>: Request {
    typealias SuccessResponseBody = Success
    typealias FailureResponseBody = Failure
    typealias RequestBody = Never?

    let arguments: APIRequest<Failure>
    let endpoint: TypedEndpoint<Success, Failure>

    var operationName: String { self.arguments.operationName }
    var method: HTTPRequest.Method { self.arguments.method }
    var path: String { self.arguments.path }
    var headerFields: HTTPFields { self.arguments.headerFields }
    var metadata: RequestMetadata { self.endpoint.metadata }

    init(_ arguments: APIRequest<Failure>, _ endpoint: TypedEndpoint<Success, Failure>) {
        var endpoint = endpoint
        endpoint.metadata.tags.formUnion(arguments.scope.tags)
        if let timeout = arguments.scope.timeout {
            endpoint.metadata[RequestTimeout.self] = timeout
        }
        self.arguments = arguments
        self.endpoint = endpoint
    }

    func makeHTTPRequest(baseURL: BaseURL, coders: Coders) throws(ClientError) -> HTTPRequest {
        if let problem = self.arguments.problem { throw problem }
        if let left = PathTemplate.firstPlaceholder(in: self.arguments.path) {
            throw ClientError(.invalidRequest, detail: "\(self.operationName): no argument fills the placeholder \"\(left)\" of the path")
        }
        let coders = self.arguments.scope.coders ?? coders
        var query: [QueryItem] = []
        query.reserveCapacity(self.arguments.query.count)
        for argument in self.arguments.query {
            query += try Self.queryItems(argument.key, argument.value, encoder: coders.formEncoder)
        }
        let head = TypedEndpoint<Empty, Empty>(method: self.method, path: self.path, query: query, headers: self.headerFields)
        return try head.makeHTTPRequest(baseURL: baseURL, coders: coders)
    }

    func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? {
        let coders = self.arguments.scope.coders ?? coders
        switch self.arguments.content {
        case .none:
            return nil
        case .body(let value):
            return try Self.body(value, encoding: self.arguments.scope.bodyEncoding, coders: coders)
        case .fields(let fields):
            return try Self.body(FieldsObject(fields: fields), encoding: self.arguments.scope.bodyEncoding, coders: coders)
        case .parts(let parts):
            return try MultipartFormEncoder().body(parts: parts)
        }
    }

    func decodeSuccessBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> Success {
        try self.endpoint.decodeSuccessBody(from: bytes, coders: self.arguments.scope.coders ?? coders)
    }

    func decodeFailureBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> Failure {
        try self.endpoint.decodeFailureBody(from: bytes, coders: self.arguments.scope.coders ?? coders)
    }

    private static func body(_ value: any Encodable & Sendable, encoding: APIScope.BodyEncoding?, coders: Coders) throws(ClientError) -> HTTPBody {
        switch encoding ?? .json {
        case .json, .multipart:
            return .bytes(try coders.encodeJSON(value), contentType: "application/json")
        case .urlForm:
            return try .form(value, encoder: coders.formEncoder)
        }
    }

    /// The items of one query argument: a string or an integer as it is, anything else through
    /// the form encoder (its key mapping, Booleans, dates and arrays).
    private static func queryItems(_ key: String, _ value: any Encodable & Sendable, encoder: URLFormEncoder) throws(ClientError) -> [QueryItem] {
        switch value {
        case let text as String: return [QueryItem(encoder.keys.wireName(key), text)]
        case let number as Int: return [QueryItem(encoder.keys.wireName(key), String(number))]
        default: return try encoder.fields(of: FieldsObject(fields: [(key, value)]))
        }
    }
}

/// Named values encoded as one object (a JSON object, a form): the fields of a call, in order.
struct FieldsObject: Encodable, Sendable {
    let fields: [(key: String, value: any Encodable & Sendable)]

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: FieldKey.self)
        for field in self.fields {
            try container.encode(field.value, forKey: FieldKey(stringValue: field.key))
        }
    }

    struct FieldKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
