/// Turns a response body into a value: the step after validation. Salvo's own decoding is
/// ``DecodableParser``; write one for anything else.
///
/// ```swift
/// /// A body that is Base64 text, as the bytes it encodes.
/// struct Base64Parser: ResponseParser {
///     func parse(_ body: [UInt8], coders: Coders) throws(ClientError) -> [UInt8] {
///         let text = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
///         guard let data = Data(base64Encoded: text) else { throw .invalidValue(at: "", "not Base64") }
///         return Array(data)
///     }
/// }
/// let bytes = try await client.value(Endpoint<String>.get("/blob"), parser: Base64Parser())
/// ```
public protocol ResponseParser<Output>: Sendable {
    associatedtype Output: Sendable
    /// The value in `body`, or a ``ClientError`` `.decodingFailed` saying where and why.
    func parse(_ body: [UInt8], coders: Coders) throws(ClientError) -> Output
}

/// Decodes a `Decodable` from JSON with the client's decoder, optionally from under a key
/// path (`"data.items"`); `[UInt8]`, `Data` and `String` are the raw body, ``Empty`` any body.
///
/// ```swift
/// // {"data": {"items": [...], "count": 3}}
/// let items = try await client.value(Endpoint<Page>.get("/items"), parser: ArrayParser<Item>(keyPath: "data.items"))
/// ```
public struct DecodableParser<Value: Decodable & Sendable>: ResponseParser {
    /// Dotted keys to the value inside the document; nil or empty for the whole document.
    public var keyPath: String?

    public init(_ type: Value.Type = Value.self, keyPath: String? = nil) {
        self.keyPath = keyPath
    }

    public func parse(_ body: [UInt8], coders: Coders) throws(ClientError) -> Value {
        if let keyPath, !keyPath.isEmpty {
            return try coders.decodeJSON(Value.self, from: body, at: keyPath)
        }
        return try ResponseDecoding.decode(Value.self, from: body, coders: coders)
    }
}

/// An array of `Element` at an optional key path.
public typealias ArrayParser<Element: Decodable & Sendable> = DecodableParser<[Element]>

/// A dictionary at an optional key path.
public typealias DictionaryParser<Key: Decodable & Hashable & Sendable, Value: Decodable & Sendable> = DecodableParser<[Key: Value]>

/// A parser from a closure.
public struct ClosureParser<Output: Sendable>: ResponseParser {
    let body: @Sendable ([UInt8], Coders) throws(ClientError) -> Output

    public init(_ body: @escaping @Sendable ([UInt8], Coders) throws(ClientError) -> Output) {
        self.body = body
    }

    public func parse(_ body: [UInt8], coders: Coders) throws(ClientError) -> Output {
        try self.body(body, coders)
    }
}

extension TypedEndpoint {
    /// The same request, its success body decoded as `type` from under `keyPath`.
    ///
    /// ```swift
    /// let users = try await client.value(Endpoint<[User]>.get("/wrapped").decoding([User].self, at: "data.items"))
    /// ```
    public func decoding<T: Decodable & Sendable>(_ type: T.Type, at keyPath: String) -> TypedEndpoint<T, Failure> {
        self.parsed(by: DecodableParser<T>(keyPath: keyPath))
    }

    /// The same request, its success body read by `parser`.
    public func parsed<P: ResponseParser>(by parser: P) -> TypedEndpoint<P.Output, Failure> {
        self.replacingSuccessDecoder { (bytes, coders) throws(ClientError) in try parser.parse(bytes, coders: coders) }
    }
}

extension Client {
    /// Sends `request` and returns its response, whatever the status, with `parser` as its
    /// success decoder: `decodeSuccessBody()` gives the parser's output.
    public func send<R: Request, P: ResponseParser>(_ request: R, parser: P, options: CallOptions = CallOptions())
        async throws(ClientError) -> Response<P.Output, R.FailureResponseBody> {
        let coders = self.configuration.coders
        return try await self.exchange(request, options: options).replacingSuccessDecoder { (bytes) throws(ClientError) in
            try parser.parse(bytes, coders: coders)
        }
    }

    /// Sends `request`, validates the response, and reads its body with `parser` instead of
    /// the request's own success type.
    public func value<R: Request, P: ResponseParser>(_ request: R, parser: P, options: CallOptions = CallOptions())
        async throws(ClientError) -> P.Output {
        let response = try await self.exchange(request, options: options)
        if let refusal = response.error { throw refusal }
        do {
            return try parser.parse(response.body, coders: self.configuration.coders)
        } catch {
            throw response.annotated(error)
        }
    }
}
