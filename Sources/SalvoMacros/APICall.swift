import Foundation
import HTTPTypes
import Salvo

/// An ``APIRequest`` with its success type chosen: the `Request` the client sends. It encodes
/// the query and the body with the scope's coders when the attributes set some, else with the
/// client's, and decodes with the same.
struct APICall<Success: Decodable & Sendable, Failure: Decodable & Sendable>: Request {
    typealias SuccessResponseBody = Success
    typealias FailureResponseBody = Failure
    typealias RequestBody = Never?

    let arguments: APIRequest<Failure>
    let metadata: RequestMetadata

    var operationName: String { self.arguments.operationName }
    var method: HTTPRequest.Method { self.arguments.method }
    var path: String { self.arguments.path }
    var headerFields: HTTPFields { self.arguments.headerFields }

    init(_ arguments: APIRequest<Failure>) {
        self.arguments = arguments
        let scope = arguments.scope
        var metadata = RequestMetadata()
        if !scope.tags.isEmpty || scope.timeout != nil {
            metadata.tags.formUnion(scope.tags)
            metadata[RequestTimeout.self] = scope.timeout
        }
        self.metadata = metadata
    }

    func makeHTTPRequest(baseURL: BaseURL, coders: Coders) throws(ClientError) -> HTTPRequest {
        if let problem = self.arguments.problem { throw problem }
        if let left = self.arguments.pathValues.firstIndex(of: nil) {
            let name = self.arguments.endpoint.placeholders[left]
            throw ClientError(.invalidRequest, detail: "\(self.operationName): no argument fills the placeholder \"\(name)\" of the path")
        }
        var query: [QueryItem] = []
        if !self.arguments.query.isEmpty {
            query.reserveCapacity(self.arguments.query.count)
            if let own = self.arguments.scope.coders {
                try Self.append(self.arguments.query, to: &query, encoder: own.formEncoder)
            } else {
                try Self.append(self.arguments.query, to: &query, encoder: coders.formEncoder)
            }
        }
        return try baseURL.request(method: self.method, path: self.arguments.path, query: query, headerFields: self.headerFields)
    }

    func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? {
        switch self.arguments.content {
        case .none:
            return nil
        case .body(let value):
            return try Self.body(value, encoding: self.arguments.scope.bodyEncoding, coders: self.arguments.scope.coders ?? coders)
        case .fields(let fields):
            return try Self.body(FieldsObject(fields: fields), encoding: self.arguments.scope.bodyEncoding,
                                 coders: self.arguments.scope.coders ?? coders)
        case .parts(let parts):
            return try MultipartFormEncoder().body(parts: parts)
        }
    }

    func decodeSuccessBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> Success {
        if let own = self.arguments.scope.coders { return try own.decodeBody(Success.self, from: bytes) }
        return try coders.decodeBody(Success.self, from: bytes)
    }

    func decodeFailureBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> Failure {
        if let own = self.arguments.scope.coders { return try own.decodeBody(Failure.self, from: bytes) }
        return try coders.decodeBody(Failure.self, from: bytes)
    }

    private static func body(_ value: any Encodable & Sendable, encoding: APIScope.BodyEncoding?, coders: Coders) throws(ClientError) -> HTTPBody {
        switch encoding ?? .json {
        case .json, .multipart:
            return .bytes(try coders.encodeJSON(value), contentType: "application/json")
        case .urlForm:
            return try .form(value, encoder: coders.formEncoder)
        }
    }

    /// The query arguments' items: a string or an integer as it is, anything else through the
    /// form encoder (its key mapping, Booleans, dates and arrays).
    private static func append(_ arguments: [APIQueryArgument], to query: inout [QueryItem],
                               encoder: borrowing URLFormEncoder) throws(ClientError) {
        for argument in arguments {
            if let text = argument.text {
                query.append(QueryItem(encoder.keys.wireName(argument.key), text))
            } else if let value = argument.value {
                query += try encoder.fields(of: FieldsObject(fields: [(argument.key, value)]))
            }
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
