import Synchronization

/// Reading and replacing a request's body in a middleware.
///
/// ```swift
/// // Adds a field to every JSON request body.
/// struct AddClientVersion: Middleware {
///     func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
///         var request = request
///         if request.body?.contentType == "application/json" {
///             try await request.updateJSONBody { object in object["clientVersion"] = "2.1" }
///         }
///         return try await next(request)
///     }
/// }
/// ```
extension ClientRequest {
    /// The whole body, read into memory; empty without a body.
    ///
    /// A streamed body is read to its end once and replaced by the bytes read (its type and
    /// content coding kept), so the request can still be sent — and now sent again. Reading
    /// a large file or an endless stream this way holds it all in memory: give a `limit`.
    ///
    /// - Parameter limit: the most bytes to read; nil for no limit.
    /// - Throws: `.bodyTooLarge` past `limit` (the body is then spent if it was streamed);
    ///   the error of a producer that fails, as ``ClientError/init(_:)`` wraps it.
    public mutating func bodyBytes(limit: Int? = nil) async throws(ClientError) -> [UInt8] {
        guard let body = self.body else { return [] }
        let limit = limit ?? Int.max
        switch body.content {
        case .bytes(let bytes):
            guard bytes.count <= limit else { throw Self.tooLarge(limit) }
            return bytes
        case .stream(let length, _, let produce):
            if let length, length > limit { throw Self.tooLarge(limit) }
            let collected = Mutex<[UInt8]>([])
            let writer = HTTPBodyWriter { (chunk) throws(TransportError) in
                let fits = collected.withLock { bytes in
                    guard chunk.count <= limit - bytes.count else { return false }
                    bytes += chunk
                    return true
                }
                if !fits { throw TransportError(.bodyTooLarge, phase: .request, detail: "more than \(limit) bytes") }
            }
            do {
                try await produce(writer)
            } catch let error as TransportError where error.code == .bodyTooLarge {
                throw Self.tooLarge(limit)
            } catch {
                throw ClientError(error)
            }
            let bytes = collected.withLock { $0 }
            self.replaceBody(with: HTTPBody(.bytes(bytes), contentType: body.contentType, contentEncoding: body.contentEncoding))
            return bytes
        }
    }

    /// Sends `body` instead of the request's body (nil for none).
    ///
    /// A `Content-Length` in the head is set to the new body's length (removed when that is
    /// not known), so that the head never announces the old one; the transport frames the
    /// body by its own length anyway. A `Content-Type` in the head still wins over the
    /// body's ``HTTPBody/contentType``. The old body is not read.
    public mutating func replaceBody(with body: HTTPBody?) {
        self.body = body
        guard self.head.headerFields[.contentLength] != nil else { return }
        switch body?.length {
        case .known(let length): self.head.headerFields[.contentLength] = String(length)
        case nil: self.head.headerFields[.contentLength] = "0"
        case .unknown: self.head.headerFields[.contentLength] = nil
        }
    }

    /// Sends `value` as the JSON body (`application/json`), written as
    /// ``Coders/encodeJSON(_:)`` does with Foundation's default encoder (a ``JSONValue``
    /// keeps its members' order).
    ///
    /// - Throws: `.encodingFailed` naming the coding path.
    public mutating func setJSONBody<Value: Encodable>(_ value: Value) throws(ClientError) {
        let bytes = try Coders.json.encodeJSON(value)
        self.replaceBody(with: .bytes(bytes, contentType: MediaType.json.rawValue))
    }

    /// Reads the JSON body as a ``JSONValue``, lets `update` change it, and sends the result
    /// (members in their order, new ones at the end). Without a body, or with an empty one,
    /// `update` starts from ``JSONValue/null``, which setting a member turns into an object.
    ///
    /// ```swift
    /// try await request.updateJSONBody { object in object["source"] = "ios" }
    /// ```
    ///
    /// - Parameter limit: the most body bytes to read; nil for no limit.
    /// - Throws: `.encodingFailed` when the body is not JSON; `.bodyTooLarge` past `limit`;
    ///   what `update` throws, as ``ClientError/init(_:)`` wraps it.
    public mutating func updateJSONBody(limit: Int? = nil, _ update: (inout JSONValue) throws -> Void) async throws(ClientError) {
        let bytes = try await self.bodyBytes(limit: limit)
        var document = JSONValue.null
        if !bytes.isEmpty {
            do {
                document = try Coders.json.decodeJSON(JSONValue.self, from: bytes)
            } catch {
                throw ClientError(.encodingFailed, detail: "the request body is not JSON: \(error.detail ?? "\(error.code)")")
            }
        }
        do {
            try update(&document)
        } catch {
            throw ClientError(error)
        }
        try self.setJSONBody(document)
    }

    private static func tooLarge(_ limit: Int) -> ClientError {
        ClientError(.bodyTooLarge, detail: "a request body of more than \(limit) bytes")
    }
}
