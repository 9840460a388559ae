import HTTPTypes

// Completion-handler forms of the client's calls, for code that is not async (001, 002).
// Each handler is called exactly once, on a thread of Swift's global concurrent executor —
// never the caller's thread and never the main thread by itself — with `.cancelled` when the
// returned handle cancelled the call first.
extension Client {
    /// `send(_:options:)` with a completion handler. The returned handle cancels the call.
    ///
    /// ```swift
    /// client.send(Endpoint<User>.get("/users/7")) { result in
    ///     if case .success(let response) = result { print(response.status) }
    /// }
    /// ```
    @discardableResult
    public func send<R: Request>(
        _ request: R, options: CallOptions = CallOptions(),
        completion: @escaping @Sendable (Result<Response<R.SuccessResponseBody, R.FailureResponseBody>, ClientError>) -> Void
    ) -> CallHandle {
        Self.completing(completion) { () async throws(ClientError) in try await self.send(request, options: options) }
    }

    /// `value(_:options:)` with a completion handler. The returned handle cancels the call.
    @discardableResult
    public func value<R: Request>(
        _ request: R, options: CallOptions = CallOptions(),
        completion: @escaping @Sendable (Result<R.SuccessResponseBody, ClientError>) -> Void
    ) -> CallHandle {
        Self.completing(completion) { () async throws(ClientError) in try await self.value(request, options: options) }
    }

    /// `valueAndResponse(_:options:)` with a completion handler.
    @discardableResult
    public func valueAndResponse<R: Request>(
        _ request: R, options: CallOptions = CallOptions(),
        completion: @escaping @Sendable (Result<(value: R.SuccessResponseBody, response: Response<R.SuccessResponseBody, R.FailureResponseBody>), ClientError>) -> Void
    ) -> CallHandle {
        Self.completing(completion) { () async throws(ClientError) in try await self.valueAndResponse(request, options: options) }
    }

    /// ``upload(_:timeout:options:progress:)`` with a completion handler; `progress` is
    /// called as the bytes go, from the thread that sends them.
    @discardableResult
    public func upload<R: UploadRequest>(
        _ request: R, timeout: Duration? = nil, options: CallOptions = CallOptions(), progress: ProgressHandler? = nil,
        completion: @escaping @Sendable (Result<Response<R.SuccessResponseBody, R.FailureResponseBody>, ClientError>) -> Void
    ) -> CallHandle {
        Self.completing(completion) { () async throws(ClientError) in
            try await self.upload(request, timeout: timeout, options: options, progress: progress)
        }
    }

    /// ``download(_:to:options:progress:)`` with a completion handler.
    @discardableResult
    public func download<R: Request>(
        _ request: R, to path: String, options: CallOptions = CallOptions(), progress: ProgressHandler? = nil,
        completion: @escaping @Sendable (Result<DownloadedFile, ClientError>) -> Void
    ) -> CallHandle {
        Self.completing(completion) { () async throws(ClientError) in
            try await self.download(request, to: path, options: options, progress: progress)
        }
    }

    /// Runs `work` in a task of its own and hands its result to `completion`, once.
    private static func completing<Value>(
        _ completion: @escaping @Sendable (Result<Value, ClientError>) -> Void,
        _ work: @escaping @Sendable () async throws(ClientError) -> Value
    ) -> CallHandle {
        CallHandle(Task {
            do throws(ClientError) {
                completion(.success(try await work()))
            } catch {
                completion(.failure(error))
            }
        })
    }
}

/// Cancels a call started with a completion handler: its handler then gets `.cancelled`
/// (unless it already ran).
public struct CallHandle: Sendable {
    private let task: Task<Void, Never>

    init(_ task: Task<Void, Never>) {
        self.task = task
    }

    /// A handle for a call that has already ended (a mock's answer, say): cancelling it does nothing.
    public init() {
        self.task = Task {}
    }

    public func cancel() {
        self.task.cancel()
    }
}
