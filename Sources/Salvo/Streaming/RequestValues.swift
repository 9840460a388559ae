extension Client {
    /// `request` as an `AsyncSequence` of its decoded success value: sent when iterated, the
    /// value once — or, with `interval`, again after every interval until the loop stops. A
    /// failure ends the sequence with a ``ClientError``. Salvo's stand-in for a publisher.
    ///
    /// ```swift
    /// for try await status in client.values(for: Endpoint<BuildStatus>.get("/builds/42"), every: .seconds(5)) {
    ///     if status.isFinished { break }
    /// }
    /// ```
    public func values<R: Request>(for request: R, every interval: Duration? = nil,
                                   options: CallOptions = CallOptions()) -> RequestValues<R> {
        RequestValues(client: self, request: request, interval: interval, options: options)
    }
}

/// The values of a request over time (see `Client.values(for:every:options:)`).
public struct RequestValues<R: Request>: AsyncSequence, Sendable {
    public typealias Element = R.SuccessResponseBody
    public typealias Failure = ClientError

    let client: Client
    let request: R
    let interval: Duration?
    let options: Client.CallOptions

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(values: self)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let values: RequestValues
        private var sent = 0

        init(values: RequestValues) {
            self.values = values
        }

        public mutating func next() async throws(ClientError) -> R.SuccessResponseBody? {
            try await self.next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ClientError) -> R.SuccessResponseBody? {
            if self.sent > 0 {
                guard let interval = self.values.interval else { return nil }
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return nil
                }
            }
            if Task.isCancelled { return nil }
            self.sent += 1
            return try await self.values.client.value(self.values.request, options: self.values.options)
        }

    }
}
