extension Client {
    /// Sends `request` through the client's middleware, then the transport.
    func dispatch(_ request: ClientRequest) async throws(ClientError) -> ClientResponse {
        try await self.run(request, from: 0)
    }

    private func run(_ request: ClientRequest, from index: Int) async throws(ClientError) -> ClientResponse {
        let chain = self.configuration.middleware
        guard index < chain.count else { return try await self.sendToTransport(request) }
        return try await chain[index].intercept(request, next: MiddlewareNext { (next) async throws(ClientError) in
            try await self.run(next, from: index + 1)
        })
    }

    /// The end of the chain: the transport, streamed or collected as the call wants.
    private func sendToTransport(_ request: ClientRequest) async throws(ClientError) -> ClientResponse {
        let options = self.transportOptions(request.options)
        if request.isStreaming {
            let streamed: TransportResponse
            do {
                streamed = try await self.transport.send(request.head, body: request.body, options: options)
            } catch {
                throw ClientError.transport(error)
            }
            return ClientResponse(streamed, request: request.head, url: Self.finalURL(of: request.head, streamed))
        }
        let limit = request.options.maxBodySize ?? self.configuration.maxBodySize
        let collected: HTTPClientResponse
        do {
            collected = try await self.transport.sendCollecting(request.head, body: request.body, options: options, maxBodySize: limit)
        } catch {
            throw Self.collectingError(error, limit: limit)
        }
        var exchange = TransportResponse(head: collected.head, body: .bytes(collected.body, trailers: collected.trailers),
                                         redirectChain: collected.redirectChain, unfollowedRedirect: collected.unfollowedRedirect)
        exchange.redirects = collected.redirects
        exchange.effectiveRequest = collected.effectiveRequest
        exchange.version = collected.version
        exchange.interimResponses = collected.interimResponses
        exchange.decodedContentEncoding = collected.decodedContentEncoding
        exchange.metrics = collected.metrics
        return ClientResponse(exchange, request: request.head, url: Self.finalURL(of: request.head, chain: collected.redirectChain))
    }

    static func collectingError(_ error: HTTPClientError, limit: Int) -> ClientError {
        error.code == .bodyTooLarge ? ClientError(.bodyTooLarge, detail: "more than \(limit) bytes") : ClientError.transport(error)
    }
}
