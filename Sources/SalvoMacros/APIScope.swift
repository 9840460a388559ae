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
public final class APIScope: Sendable {
    /// How `Body` and `Field` parameters are written.
    public enum BodyEncoding: Sendable {
        /// `application/json` (the default).
        case json
        /// `application/x-www-form-urlencoded`.
        case urlForm
        /// `multipart/form-data`: every body parameter is a `Part`.
        case multipart
    }

    /// How a streamed response is cut into elements.
    public enum StreamFraming: Sendable {
        /// One JSON document per line.
        case jsonLines
        /// Server-Sent Events; each event's data is decoded unless the element is a `ServerSentEvent`.
        case serverSentEvents
    }

    let headerFields: HTTPFields
    let invalidHeaderName: String?
    let bodyEncoding: BodyEncoding?
    let jsonEncoder: JSONEncoder?
    let jsonDecoder: JSONDecoder?
    let formEncoder: URLFormEncoder?
    let keys: KeyMapping?
    let timeout: Duration?
    let tags: [String]
    let streamFraming: StreamFraming?
    /// The coders the attributes make, or nil when they leave the client's in place.
    let coders: Coders?

    /// A scope; every part is optional and nil leaves it to the enclosing scope or the client.
    public convenience init(headers: [String: String] = [:], authorization: Authorization.Credentials? = nil,
                            encoding: BodyEncoding? = nil, jsonEncoder: JSONEncoder? = nil, jsonDecoder: JSONDecoder? = nil,
                            formEncoder: URLFormEncoder? = nil, keys: KeyMapping? = nil, timeout: Duration? = nil,
                            tags: [String] = [], streamFraming: StreamFraming? = nil) {
        var fields = HTTPFields()
        var invalid: String?
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            if let fieldName = HTTPField.Name(name) {
                fields[fieldName] = value
            } else {
                invalid = invalid ?? name
            }
        }
        if let authorization {
            fields[.authorization] = authorization.headerValue
        }
        self.init(headerFields: fields, invalidHeaderName: invalid, bodyEncoding: encoding, jsonEncoder: jsonEncoder,
                  jsonDecoder: jsonDecoder, formEncoder: formEncoder, keys: keys, timeout: timeout, tags: tags,
                  streamFraming: streamFraming)
    }

    private init(headerFields: HTTPFields, invalidHeaderName: String?, bodyEncoding: BodyEncoding?, jsonEncoder: JSONEncoder?,
                 jsonDecoder: JSONDecoder?, formEncoder: URLFormEncoder?, keys: KeyMapping?, timeout: Duration?, tags: [String],
                 streamFraming: StreamFraming?) {
        self.headerFields = headerFields
        self.invalidHeaderName = invalidHeaderName
        self.bodyEncoding = bodyEncoding
        self.jsonEncoder = jsonEncoder
        self.jsonDecoder = jsonDecoder
        self.formEncoder = formEncoder
        self.keys = keys
        self.timeout = timeout
        self.tags = tags
        self.streamFraming = streamFraming
        self.coders = Self.makeCoders(keys: keys, jsonEncoder: jsonEncoder, jsonDecoder: jsonDecoder, formEncoder: formEncoder)
    }

    /// This scope with `inner`'s settings over it: set values replace, header fields add up.
    public func merging(_ inner: APIScope) -> APIScope {
        var fields = self.headerFields
        for field in inner.headerFields {
            fields[fields: field.name] = []
        }
        fields.append(contentsOf: inner.headerFields)
        return APIScope(headerFields: fields, invalidHeaderName: self.invalidHeaderName ?? inner.invalidHeaderName,
                        bodyEncoding: inner.bodyEncoding ?? self.bodyEncoding, jsonEncoder: inner.jsonEncoder ?? self.jsonEncoder,
                        jsonDecoder: inner.jsonDecoder ?? self.jsonDecoder, formEncoder: inner.formEncoder ?? self.formEncoder,
                        keys: inner.keys ?? self.keys, timeout: inner.timeout ?? self.timeout, tags: self.tags + inner.tags,
                        streamFraming: inner.streamFraming ?? self.streamFraming)
    }

    /// Coders for what the attributes set (a JSON coder, a form encoder, a key mapping); nil
    /// when they set none, so that the client's coders apply.
    private static func makeCoders(keys: KeyMapping?, jsonEncoder: JSONEncoder?, jsonDecoder: JSONDecoder?,
                                   formEncoder: URLFormEncoder?) -> Coders? {
        guard jsonEncoder != nil || jsonDecoder != nil || formEncoder != nil || keys != nil else {
            return nil
        }
        var coders: Coders
        if let keys {
            // The mapping sets the coders' key strategies: on copies, so that an encoder the
            // protocol shares (or the app's own) keeps its own for everyone else.
            coders = Coders.json(keys: keys, encoder: jsonEncoder.map(Self.copy) ?? JSONEncoder(),
                                 decoder: jsonDecoder.map(Self.copy) ?? JSONDecoder())
        } else {
            coders = Coders(encoder: jsonEncoder ?? JSONEncoder(), decoder: jsonDecoder ?? JSONDecoder())
        }
        if var form = formEncoder {
            if let keys { form.keys = keys }
            coders.formEncoder = form
        }
        return coders
    }

    private static func copy(_ encoder: JSONEncoder) -> JSONEncoder {
        let copy = JSONEncoder()
        copy.outputFormatting = encoder.outputFormatting
        copy.dateEncodingStrategy = encoder.dateEncodingStrategy
        copy.dataEncodingStrategy = encoder.dataEncodingStrategy
        copy.nonConformingFloatEncodingStrategy = encoder.nonConformingFloatEncodingStrategy
        copy.keyEncodingStrategy = encoder.keyEncodingStrategy
        copy.userInfo = encoder.userInfo
        return copy
    }

    private static func copy(_ decoder: JSONDecoder) -> JSONDecoder {
        let copy = JSONDecoder()
        copy.dateDecodingStrategy = decoder.dateDecodingStrategy
        copy.dataDecodingStrategy = decoder.dataDecodingStrategy
        copy.nonConformingFloatDecodingStrategy = decoder.nonConformingFloatDecodingStrategy
        copy.keyDecodingStrategy = decoder.keyDecodingStrategy
        copy.userInfo = decoder.userInfo
        copy.allowsJSON5 = decoder.allowsJSON5
        copy.assumesTopLevelDictionary = decoder.assumesTopLevelDictionary
        return copy
    }
}
