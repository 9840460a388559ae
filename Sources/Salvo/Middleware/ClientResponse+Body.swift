/// Reading a response's body in a middleware.
extension ClientResponse {
    /// The whole body, collected once and kept: the caller (and every middleware after)
    /// reads the same bytes again. A body the transport collected already is not copied.
    ///
    /// ```swift
    /// let response = try await next(request)
    /// guard !request.isStreaming else { return response }
    /// var seen = response
    /// let bytes = try await seen.bodyBytes(for: request, limit: 64 * 1024)
    /// print(request.operationName, bytes.count)
    /// return seen
    /// ```
    ///
    /// A streamed call's body (``ClientRequest/isStreaming``: `stream`, `download`,
    /// `events`) is the caller's to read and may never end: it is refused, and left unread.
    ///
    /// - Parameters:
    ///   - request: the request this answers, as the middleware has it.
    ///   - limit: the most bytes to read; nil for the call's ``Client/CallOptions/maxBodySize``
    ///     (which the client fills in with its own), no limit when neither says.
    /// - Throws: `.middlewareFailed` for a streamed call; `.bodyTooLarge` past the limit;
    ///   `.transportFailed` when reading fails.
    public mutating func bodyBytes(for request: ClientRequest, limit: Int? = nil) async throws(ClientError) -> [UInt8] {
        guard !request.isStreaming else {
            throw ClientError(.middlewareFailed, detail: "a streamed call's response body is the caller's to read, not collected in a middleware")
        }
        let limit = limit ?? request.options.maxBodySize
        let bytes: [UInt8]
        do {
            bytes = try await self.collectedBytes(limit: limit)
        } catch where error.transportError?.code == .bodyTooLarge {
            throw Self.tooLarge(limit)
        }
        // A body the transport collected came under the call's limit, which may be larger
        // than this one.
        if let limit, bytes.count > limit { throw Self.tooLarge(limit) }
        return bytes
    }

    private static func tooLarge(_ limit: Int?) -> ClientError {
        ClientError(.bodyTooLarge, detail: "more than \(limit ?? Int.max) bytes")
    }
}
