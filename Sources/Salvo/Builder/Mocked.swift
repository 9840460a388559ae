import HTTPTypes

extension BuiltRequest {
    /// This request answered by `reply` instead of the network: the service's hooks, the
    /// client's middleware (authorization, retries, logging, cache), validation and decoding
    /// all run as for a real answer.
    ///
    /// ```swift
    /// let request = Get("users", 7, from: Backend())
    ///     .responseBody(User.self)
    ///     .mocked(try .json(User(id: 7, name: "Ada")))
    /// ```
    public func mocked(_ reply: MockTransport.Reply) -> Self {
        self.mocked(where: { _ in reply })
    }

    /// This request answered by what `answer` makes of it instead of the network (a reply, or
    /// an error to fail with): to check what is sent and answer as a test needs.
    ///
    /// ```swift
    /// .mocked(where: { request in
    ///     request.head.headerFields[.authorization] == nil ? .status(.unauthorized) : try .json(profile)
    /// })
    /// ```
    public func mocked(where answer: @escaping @Sendable (ClientRequest) throws -> MockTransport.Reply) -> Self {
        var copy = self
        copy.endpoint = copy.endpoint.with(StandInTransport.self) { (request) async throws(ClientError) -> ClientResponse in
            try await MockedAnswer.answer(request, with: answer)
        }
        return copy
    }
}

/// Answers a request in place of the network.
enum MockedAnswer {
    static func answer(_ request: ClientRequest,
                       with answer: @Sendable (ClientRequest) throws -> MockTransport.Reply) async throws(ClientError) -> ClientResponse {
        let reply: MockTransport.Reply
        do {
            reply = try answer(request)
        } catch {
            throw ClientError.middleware(error, in: "mocked")
        }
        if let delay = reply.delay {
            do {
                try await Task.sleep(for: delay)
            } catch {
                throw ClientError(.cancelled, detail: "cancelled while a mocked reply was delayed")
            }
        }
        if let failure = reply.error { throw ClientError.transport(failure) }
        return ClientResponse(head: HTTPResponse(status: reply.status, headerFields: reply.headerFields), body: reply.body, for: request)
    }
}
