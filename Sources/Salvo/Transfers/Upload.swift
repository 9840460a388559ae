/// A request made to upload: its bytes come from ``encodeUploadData()`` — in memory, or a
/// file streamed from disk — and ``Client/upload(_:timeout:options:progress:)`` sends it with its
/// own timeout and reports progress.
///
/// ```swift
/// struct UploadAvatar: UploadRequest {
///     typealias SuccessResponseBody = Avatar
///     var method: HTTPRequest.Method { .put }
///     var path: String { "/me/avatar" }
///     var file: String
///     func encodeUploadData() throws(ClientError) -> HTTPBody {
///         do { return try .file(path: self.file, contentType: "image/png") } catch { throw .transport(error) }
///     }
/// }
/// let response = try await client.upload(UploadAvatar(file: "avatar.png"), timeout: .seconds(120)) { progress in
///     print(progress.fractionCompleted ?? 0)
/// }
/// ```
public protocol UploadRequest: Request {
    /// The bytes to upload.
    func encodeUploadData() throws(ClientError) -> HTTPBody
}

extension UploadRequest where RequestBody == Never? {
    /// An upload request sent with ``Client/send(_:options:)`` sends its upload data too.
    public func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? {
        try self.encodeUploadData()
    }
}

extension Client {
    /// Uploads `request`'s data, with `timeout` for the whole exchange (instead of the
    /// client's, and of `options.timeout`), reporting to `progress` as the bytes go. Returns
    /// the response whatever its status, as `send(_:options:)` does; `options` gives the
    /// rest (deadline, head and read timeouts, body size limit).
    public func upload<R: UploadRequest>(_ request: R, timeout: Duration? = nil, options: CallOptions = CallOptions(),
                                         progress: ProgressHandler? = nil)
        async throws(ClientError) -> Response<R.SuccessResponseBody, R.FailureResponseBody> {
        try await self.upload(request, body: try request.encodeUploadData(), timeout: timeout, options: options, progress: progress)
    }

    /// Uploads `body` as `request`'s body (any request: its own body is not used).
    ///
    /// ```swift
    /// let file = try HTTPBody.file(path: "/var/backups/db.tar.gz")
    /// let response = try await client.upload(Endpoint<Receipt>.put("/backups/today"), body: file, timeout: .seconds(600))
    /// ```
    public func upload<R: Request>(_ request: R, body: HTTPBody, timeout: Duration? = nil, options: CallOptions = CallOptions(),
                                   progress: ProgressHandler? = nil)
        async throws(ClientError) -> Response<R.SuccessResponseBody, R.FailureResponseBody> {
        let sent = progress.map { body.reportingProgress($0) } ?? body
        let (head, prepared) = try self.prepare(request, body: sent)
        var options = options
        if let timeout { options.timeout = timeout }
        return try await self.exchange(request, head: head, body: prepared, options: options)
    }
}
