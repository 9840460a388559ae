import Foundation
import HTTPTypes
import Salvo

/// What the attributes of an `@API` protocol or of one of its functions say about every request
/// they make: fixed header fields, credentials, how bodies are encoded, key mapping, a timeout,
/// tags, a failure body and how a stream is framed.
///
/// The generated code makes one scope for the protocol and one more for each function with
/// attributes of its own, each once (a static constant), so that a call pays for none of it.
/// A function's scope starts from the protocol's: what it sets replaces what the protocol set,
/// and its header fields are added to the protocol's.
public struct APIScope: Sendable {
    /// How `Body` and `Field` parameters are written.
    public enum BodyEncoding: Sendable {
        /// `application/json` (the default).
        case json
        /// `application/x-www-form-urlencoded`.
        case urlForm
        /// `multipart/form-data`: every body parameter is a ``Part``.
        case multipart
    }

    /// How a streamed response is cut into elements.
    public enum StreamFraming: Sendable {
        /// One JSON document per line.
        case jsonLines
        /// Server-Sent Events; each event's data is decoded unless the element is a ``ServerSentEvent``.
        case serverSentEvents
    }

    var headerFields = HTTPFields()
    var invalidHeaderName: String?
    var bodyEncoding: BodyEncoding?
    var jsonEncoder: JSONEncoder?
    var jsonDecoder: JSONDecoder?
    var formEncoder: URLFormEncoder?
    var keys: KeyMapping?
    var timeout: Duration?
    var tags: [String] = []
    var streamFraming: StreamFraming?
    /// The coders the attributes make, or nil when they leave the client's in place.
    private(set) var coders: Coders?

    /// A scope; every part is optional and nil leaves it to the enclosing scope or the client.
    public init(headers: [String: String] = [:], authorization: Authorization.Credentials? = nil,
                encoding: BodyEncoding? = nil, jsonEncoder: JSONEncoder? = nil, jsonDecoder: JSONDecoder? = nil,
                formEncoder: URLFormEncoder? = nil, keys: KeyMapping? = nil, timeout: Duration? = nil,
                tags: [String] = [], streamFraming: StreamFraming? = nil) {
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            self.setHeader(name, value)
        }
        if let authorization {
            self.headerFields[.authorization] = authorization.headerValue
        }
        self.bodyEncoding = encoding
        self.jsonEncoder = jsonEncoder
        self.jsonDecoder = jsonDecoder
        self.formEncoder = formEncoder
        self.keys = keys
        self.timeout = timeout
        self.tags = tags
        self.streamFraming = streamFraming
        self.coders = self.makeCoders()
    }

    /// This scope with `inner`'s settings over it: set values replace, header fields add up.
    public func merging(_ inner: APIScope) -> APIScope {
        var merged = self
        for field in inner.headerFields {
            merged.headerFields[fields: field.name] = []
        }
        merged.headerFields.append(contentsOf: inner.headerFields)
        merged.invalidHeaderName = self.invalidHeaderName ?? inner.invalidHeaderName
        merged.bodyEncoding = inner.bodyEncoding ?? self.bodyEncoding
        merged.jsonEncoder = inner.jsonEncoder ?? self.jsonEncoder
        merged.jsonDecoder = inner.jsonDecoder ?? self.jsonDecoder
        merged.formEncoder = inner.formEncoder ?? self.formEncoder
        merged.keys = inner.keys ?? self.keys
        merged.timeout = inner.timeout ?? self.timeout
        merged.tags = self.tags + inner.tags
        merged.streamFraming = inner.streamFraming ?? self.streamFraming
        merged.coders = merged.makeCoders()
        return merged
    }

    private mutating func setHeader(_ name: String, _ value: String) {
        guard let fieldName = HTTPField.Name(name) else {
            self.invalidHeaderName = self.invalidHeaderName ?? name
            return
        }
        self.headerFields[fieldName] = value
    }

    /// Coders for what the attributes set (a JSON coder, a form encoder, a key mapping); nil
    /// when they set none, so that the client's coders apply.
    private func makeCoders() -> Coders? {
        guard self.jsonEncoder != nil || self.jsonDecoder != nil || self.formEncoder != nil || self.keys != nil else {
            return nil
        }
        var coders: Coders
        if let keys = self.keys {
            coders = Coders.json(keys: keys, encoder: self.jsonEncoder ?? JSONEncoder(), decoder: self.jsonDecoder ?? JSONDecoder())
        } else {
            coders = Coders(encoder: self.jsonEncoder ?? JSONEncoder(), decoder: self.jsonDecoder ?? JSONDecoder())
        }
        if var form = self.formEncoder {
            if let keys = self.keys { form.keys = keys }
            coders.formEncoder = form
        }
        return coders
    }
}
