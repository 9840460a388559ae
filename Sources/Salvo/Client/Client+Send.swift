extension Client {
    /// Sends `request` and returns its response, whatever the status: check
    /// `response.error` (the call's validators' verdict, by default "not 2xx") or
    /// `response.status.kind`, then decode the success or the failure body. Validators given
    /// in `options` are run the same way: a refusal is in `response.error`, never skipped.
    ///
    /// - Throws: ``ClientError`` when no response came (`.transportFailed`, `.cancelled`) or
    ///   the request could not be made (`.invalidRequest`, `.encodingFailed`).
    public func send<R: Request>(_ request: R, options: CallOptions = CallOptions()) async throws(ClientError)
        -> Response<R.SuccessResponseBody, R.FailureResponseBody> {
        try await self.exchange(request, options: options)
    }

    /// Sends `request` and returns its success body, decoded.
    ///
    /// - Throws: ``ClientError``: `.unacceptableStatus` (or `.validationFailed`) when a
    ///   validator refused the response — with its status, head, raw body, and the decoded
    ///   failure body when it decodes; `.decodingFailed` with the coding path; and what
    ///   `send(_:options:)` throws.
    public func value<R: Request>(_ request: R, options: CallOptions = CallOptions()) async throws(ClientError) -> R.SuccessResponseBody {
        try await self.valueAndResponse(request, options: options).value
    }

    /// Sends `request` and returns its success body, decoded, with the response it came in.
    public func valueAndResponse<R: Request>(_ request: R, options: CallOptions = CallOptions()) async throws(ClientError)
        -> (value: R.SuccessResponseBody, response: Response<R.SuccessResponseBody, R.FailureResponseBody>) {
        let response = try await self.exchange(request, options: options)
        if let refusal = response.error { throw refusal }
        return (try response.decodeSuccessBody(), response)
    }

    /// Sends `request` and returns its decoded success body or the error, without throwing.
    ///
    /// ```swift
    /// let (user, error) = await client.outcome(GetUser(id: 7))
    /// ```
    public func outcome<R: Request>(_ request: R, options: CallOptions = CallOptions()) async
        -> (value: R.SuccessResponseBody?, error: ClientError?) {
        do {
            return (try await self.value(request, options: options), nil)
        } catch {
            return (nil, error)
        }
    }
}

// MARK: Endpoint values by implicit member

/// These overloads let an endpoint declared as a static member on ``TypedEndpoint`` be
/// written with a leading dot: `try await client.value(.users(named: "ada"))`.
extension Client {
    public func send<Success, Failure>(_ endpoint: TypedEndpoint<Success, Failure>, options: CallOptions = CallOptions())
        async throws(ClientError) -> Response<Success, Failure> {
        try await self.exchange(endpoint, options: options)
    }

    public func value<Success, Failure>(_ endpoint: TypedEndpoint<Success, Failure>, options: CallOptions = CallOptions())
        async throws(ClientError) -> Success {
        try await self.valueAndResponse(endpoint, options: options).value
    }

    public func outcome<Success, Failure>(_ endpoint: TypedEndpoint<Success, Failure>, options: CallOptions = CallOptions())
        async -> (value: Success?, error: ClientError?) {
        do {
            return (try await self.valueAndResponse(endpoint, options: options).value, nil)
        } catch {
            return (nil, error)
        }
    }
}

extension Client {
    public func valueAndResponse<Success, Failure>(_ endpoint: TypedEndpoint<Success, Failure>, options: CallOptions = CallOptions())
        async throws(ClientError) -> (value: Success, response: Response<Success, Failure>) {
        let response = try await self.exchange(endpoint, options: options)
        if let refusal = response.error { throw refusal }
        return (try response.decodeSuccessBody(), response)
    }

    public func values<Success, Failure>(for endpoint: TypedEndpoint<Success, Failure>, every interval: Duration? = nil,
                                         options: CallOptions = CallOptions()) -> RequestValues<TypedEndpoint<Success, Failure>> {
        RequestValues(client: self, request: endpoint, interval: interval, options: options)
    }

    public func stream<Success, Failure>(_ endpoint: TypedEndpoint<Success, Failure>, options: CallOptions = CallOptions())
        async throws(ClientError) -> StreamingResponse<Failure> {
        let (head, body) = try self.prepare(endpoint)
        return try await self.stream(endpoint, head: head, body: body, options: options)
    }
}

// MARK: Empty success bodies

extension Client {
    /// ``value(_:options:)`` for a request whose success body is ``Empty``: nothing to
    /// discard (`try await client.value(Endpoint<Empty>.delete("/items/7"))`).
    @discardableResult
    public func value<R: Request>(_ request: R, options: CallOptions = CallOptions()) async throws(ClientError)
        -> Empty where R.SuccessResponseBody == Empty {
        try await self.valueAndResponse(request, options: options).value
    }

    @discardableResult
    public func value<Failure>(_ endpoint: TypedEndpoint<Empty, Failure>, options: CallOptions = CallOptions())
        async throws(ClientError) -> Empty {
        try await self.valueAndResponse(endpoint, options: options).value
    }
}
