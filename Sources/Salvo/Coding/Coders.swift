import Foundation

/// How a client turns values into bodies, queries and forms, and bodies into values: JSON
/// both ways by default, a form encoder, and one key mapping for all of them.
///
/// ```swift
/// let client = try Client(baseURL: "https://api.example.com", coders: .json(keys: .snakeCase))
///
/// let decoder = JSONDecoder()
/// decoder.dateDecodingStrategy = .iso8601
/// let custom = try Client(baseURL: "https://api.example.com", coders: Coders(decoder: decoder))
/// ```
public struct Coders: Sendable {
    /// Encodes `Encodable` request bodies (sent as `application/json`).
    public var encoder: JSONEncoder
    /// Decodes `Decodable` response bodies.
    public var decoder: JSONDecoder {
        // A mapping made for the decoder that was here does not hold for another one.
        didSet { self.decodingKeyMapping = nil }
    }
    /// Encodes forms (`application/x-www-form-urlencoded`) and query items made from values.
    public var formEncoder: URLFormEncoder
    /// The key mapping of ``formEncoder``, and of the JSON coders when they were made by
    /// ``json(keys:encoder:decoder:)``.
    public var keys: KeyMapping { self.formEncoder.keys }
    /// Set by ``json(keys:encoder:decoder:)``: the mapping the decoder's key strategy was set
    /// for, applied directly by Salvo's JSON decoder.
    var decodingKeyMapping: (@Sendable (String) -> String)?

    /// Coders with these parts; `encoder` and `decoder` are used as they are.
    public init(encoder: JSONEncoder = JSONEncoder(), decoder: JSONDecoder = JSONDecoder(),
                formEncoder: URLFormEncoder = URLFormEncoder()) {
        self.encoder = encoder
        self.decoder = decoder
        self.formEncoder = formEncoder
    }

    /// JSON both ways, with Foundation's defaults.
    public static var json: Coders { Coders() }

    /// JSON both ways and forms, with `keys` applied to all of them. The key strategies of
    /// `encoder` and `decoder` are set for `keys` (pass your own to set dates and the rest).
    public static func json(keys: KeyMapping, encoder: JSONEncoder = JSONEncoder(), decoder: JSONDecoder = JSONDecoder()) -> Coders {
        if let toWire = keys.toWire {
            encoder.keyEncodingStrategy = .custom { path in
                let last = path.last ?? AnyCodingKey("")
                return last.intValue != nil ? last : AnyCodingKey(toWire(last.stringValue))
            }
        }
        if let fromWire = keys.fromWire {
            decoder.keyDecodingStrategy = .custom { path in
                let last = path.last ?? AnyCodingKey("")
                return last.intValue != nil ? last : AnyCodingKey(fromWire(last.stringValue))
            }
        }
        var form = URLFormEncoder()
        form.keys = keys
        var coders = Coders(encoder: encoder, decoder: decoder, formEncoder: form)
        coders.decodingKeyMapping = keys.fromWire
        return coders
    }

    /// JSON of `value`, or `.encodingFailed` naming the type and the coding path.
    ///
    /// A ``JSONValue`` is written by Salvo, its objects' members in order (`JSONEncoder`
    /// keeps none), with the ``encoder``'s output formatting and non-finite number strategy.
    public func encodeJSON<Value: Encodable>(_ value: Value) throws(ClientError) -> [UInt8] {
        do {
            if let document = value as? JSONValue { return try document.jsonBytes(as: self.encoder) }
            return Array(try self.encoder.encode(value))
        } catch {
            throw ClientError.encoding(error, of: Value.self)
        }
    }

    /// `Value` from JSON `bytes`, or `.decodingFailed` saying where and what.
    ///
    /// Salvo decodes with its own decoder, which honours the ``decoder``'s strategies (keys,
    /// dates, data, non-conforming floats, user info) and throws the same `DecodingError`s;
    /// a decoder that asks for what only `JSONDecoder` does (JSON5, a `DateFormatter`, a
    /// subclass) is used as it is.
    public func decodeJSON<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws(ClientError) -> Value {
        try self.decodeJSON(Value.self, from: bytes, keyPath: [])
    }

    /// A response body as `Value`, as the client decodes success and failure bodies: ``Empty``
    /// reads nothing, `[UInt8]`, `Data` and `String` take the bytes as they are, anything else
    /// is JSON (``decodeJSON(_:from:)``). For a `Request` of your own that decodes with coders
    /// other than the client's.
    public func decodeBody<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws(ClientError) -> Value {
        try ResponseDecoding.decode(Value.self, from: bytes, coders: self)
    }

    /// `Value` from the JSON found at `keyPath` (`"data.items"`) in `bytes`; an empty key path
    /// is the whole body. Property names in the path are as after key mapping.
    public func decodeJSON<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8], at keyPath: String) throws(ClientError) -> Value {
        try self.decodeJSON(Value.self, from: bytes, keyPath: keyPath.split(separator: ".").map(String.init))
    }

    private func decodeJSON<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8], keyPath keys: [String]) throws(ClientError) -> Value {
        do {
            guard bytes.count <= JSONTape.maxDocumentSize, !Self.mayBeWideText(bytes),
                  let options = TapeDecoder.Options(self.decoder, keyMapping: self.decodingKeyMapping) else {
                if keys.isEmpty { return try self.decoder.decode(Value.self, from: Data(bytes)) }
                return try KeyPathScope.$keys.withValue(keys) {
                    try self.decoder.decode(KeyPathBox<Value>.self, from: Data(bytes)).value
                }
            }
            // A UTF-8 byte order mark is allowed before the document, as JSONDecoder allows it.
            let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            let tape = try bytes.withUnsafeBytes { try JSONTape(UnsafeRawBufferPointer(rebasing: $0[start...])) }
            let decoder = TapeDecoder(tape: tape, options: options)
            if !keys.isEmpty { try decoder.descend(into: keys) }
            return try decoder.decodeHere(Value.self)
        } catch {
            throw ClientError.decoding(error, as: Value.self, body: bytes)
        }
    }
}

extension Coders {
    /// UTF-16 or UTF-32 text (a byte order mark, or a NUL among the first bytes, which UTF-8
    /// JSON never has): left to `JSONDecoder`, which converts it.
    static func mayBeWideText(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 2 else { return false }
        return bytes[0] == 0 || bytes[1] == 0 || (bytes[0] == 0xFE && bytes[1] == 0xFF) || (bytes[0] == 0xFF && bytes[1] == 0xFE)
    }
}

/// Decodes the value under a key path: the path comes through a task-local, so a shared
/// decoder needs no copy, and coding paths in errors run from the top of the document.
struct KeyPathBox<Value: Decodable>: Decodable {
    let value: Value

    init(from decoder: any Decoder) throws {
        let path = KeyPathScope.keys
        var container = try decoder.container(keyedBy: AnyCodingKey.self)
        for key in path.dropLast() {
            container = try container.nestedContainer(keyedBy: AnyCodingKey.self, forKey: AnyCodingKey(key))
        }
        self.value = try container.decode(Value.self, forKey: AnyCodingKey(path.last ?? ""))
    }
}

enum KeyPathScope {
    @TaskLocal static var keys: [String] = []
}

/// A response (or request) with nothing to decode: an empty body, or one that is ignored.
public struct Empty: Codable, Sendable, Hashable {
    public init() {}
}
