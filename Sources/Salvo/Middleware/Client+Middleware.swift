extension Client {
    /// A call's options as middleware see them: its timeout (or the client's) turned into an
    /// absolute deadline as the call enters the chain, so that everything a middleware does —
    /// waiting for a place or a token refresh, a retry, a replay — spends the same time, and
    /// the client's body size limit filled in.
    func middlewareOptions(_ options: CallOptions) -> CallOptions {
        var options = options
        options.transport = self.transportOptions(options).anchored(at: .now)
        if options.maxBodySize == nil { options.maxBodySize = self.configuration.maxBodySize }
        return options
    }

    /// Sends a call's `request` through the middleware and the transport: tracked in the
    /// client's activity view, and cancellable by its id when the caller gave one. A call
    /// without an id goes through no closure that escapes (nothing allocated for it here).
    func route(_ request: ClientRequest, operationName: String, id: RequestID?) async throws(ClientError) -> ClientResponse {
        guard let id else {
            return try await self.tracked(operationName, request.head) { () async throws(ClientError) in try await self.dispatch(request) }
        }
        return try await self.calls.run(id) { () async throws(ClientError) in
            try await self.tracked(operationName, request.head) { () async throws(ClientError) in try await self.dispatch(request) }
        }
    }

    /// Sends `request` through the client's middleware, then the transport.
    func dispatch(_ request: ClientRequest) async throws(ClientError) -> ClientResponse {
        guard let chain = self.chain else {
            return try await Self.sendToTransport(request, transport: self.transport, defaults: self.configuration)
        }
        return try await chain(request)
    }

    /// The middleware as one chain of links, built once per client: each link calls its
    /// middleware with the link after it, the last one the transport. Nil without middleware.
    static func chain(_ middleware: [any Middleware], transport: any Transport, defaults: Configuration) -> MiddlewareNext? {
        guard !middleware.isEmpty else { return nil }
        var link = MiddlewareLink(.transport(transport, defaults))
        for middleware in middleware.reversed() {
            link = MiddlewareLink(.middleware(middleware, link))
        }
        return MiddlewareNext(link: link)
    }

    /// The end of the chain: the transport, streamed or collected as the call wants.
    @usableFromInline
    static func sendToTransport(_ request: ClientRequest, transport: any Transport, defaults: Configuration) async throws(ClientError)
        -> ClientResponse {
        // The client's timeout is in the call's options already (middlewareOptions); a
        // middleware that moved it into a deadline (a retry) must not get it back.
        let options = request.options.transport
        if request.isStreaming {
            let streamed: TransportResponse
            do {
                streamed = try await transport.send(request.head, body: request.body, options: options)
            } catch {
                throw ClientError.transport(error)
            }
            return ClientResponse(streamed, request: request.head, url: Self.finalURL(of: request.head, streamed))
        }
        let limit = request.options.maxBodySize ?? defaults.maxBodySize
        let collected: CollectedResponse
        do {
            collected = try await transport.sendCollecting(request.head, body: request.body, options: options, maxBodySize: limit)
        } catch {
            throw Self.collectingError(error, limit: limit)
        }
        return ClientResponse(collected: collected, request: request.head,
                              url: Self.finalURL(of: request.head, chain: collected.redirectChain))
    }

    static func collectingError(_ error: TransportError, limit: Int) -> ClientError {
        error.code == .bodyTooLarge ? ClientError(.bodyTooLarge, detail: "more than \(limit) bytes") : ClientError.transport(error)
    }
}
