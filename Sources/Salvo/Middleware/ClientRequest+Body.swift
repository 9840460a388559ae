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
            // A producer that stops when its task is cancelled may end quietly: its bytes
            // so far are not the body.
            if Task.isCancelled { throw ClientError(.cancelled, detail: "cancelled while the request body was read") }
            let bytes = collected.withLock { $0 }
            self.replaceBody(with: HTTPBody(.bytes(bytes), contentType: body.contentType, contentEncoding: body.contentEncoding))
            return bytes
        }
    }

    /// Sends `body` instead of the request's body (nil for none).
    ///
    /// The head follows the new body, so that it never describes the old one: a
    /// `Content-Length` in it is set to the new body's length (removed when that is not
    /// known); a body that names its `HTTPBody.contentType` sets `Content-Type`; and
    /// `Content-Encoding` becomes the new body's `HTTPBody.contentEncoding` (removed when it
    /// has none). The old body is not read.
    public mutating func replaceBody(with body: HTTPBody?) {
        self.body = body
        if let type = body?.contentType { self.head.headerFields[.contentType] = type }
        if self.head.headerFields[.contentEncoding] != nil || body?.contentEncoding != nil {
            self.head.headerFields[.contentEncoding] = body?.contentEncoding
        }
        guard self.head.headerFields[.contentLength] != nil else { return }
        switch body?.length {
        case .known(let length): self.head.headerFields[.contentLength] = String(length)
        case nil: self.head.headerFields[.contentLength] = "0"
        case .unknown: self.head.headerFields[.contentLength] = nil
        }
    }

    /// Sends `value` as the JSON body, `Content-Type: application/json` in the head, written
    /// with the client's coders (``Coders/encodeJSON(_:)``: a ``JSONValue`` keeps its members'
    /// order).
    ///
    /// - Throws: `.encodingFailed` naming the coding path.
    public mutating func setJSONBody<Value: Encodable>(_ value: Value) throws(ClientError) {
        let bytes = try self.coders.encodeJSON(value)
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
    /// - Parameters:
    ///   - limit: the most body bytes to read; nil for no limit.
    ///   - update: changes the body's JSON value in place.
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
