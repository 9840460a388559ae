extension Client {
    /// A call's options as middleware see them: its timeout (or the client's) turned into an
    /// absolute deadline as the call enters the chain, so that everything a middleware does —
    /// waiting for a place or a token refresh, a retry, a replay — spends the same time, and
    /// the client's body size limit and validators filled in (what an ``Interceptor`` judges
    /// a response by).
    func middlewareOptions(_ options: CallOptions) -> CallOptions {
        var options = options
        options.transport = self.transportOptions(options).anchored(at: .now)
        if options.maxBodySize == nil { options.maxBodySize = self.configuration.maxBodySize }
        if options.validators == nil { options.validators = self.configuration.validators }
        if options.cachePolicy == nil, self.configuration.cache != nil { options.cachePolicy = self.configuration.cachePolicy }
        return options
    }

    /// A call on its one way out: tracked in the client's activity view, cancellable by its
    /// id when the caller gave one, through the middleware if the client has any, then the
    /// transport. Without middleware no ``ClientRequest`` is made, and a call without an id
    /// goes through no closure that escapes: the fast case pays for nothing it does not use.
    @inline(__always)
    func route(_ head: HTTPRequest, body: HTTPBody?, operationName: String, metadata: RequestMetadata,
               options: CallOptions, streaming: Bool = false) async throws(ClientError) -> ClientResponse {
        guard let id = options.id else {
            // The common case straight, with no closure: each one costs a frame in an async
            // function.
            guard self.configuration.activity != nil else {
                return try await self.send(head, body: body, operationName: operationName, metadata: metadata, options: options, streaming: streaming)
            }
            return try await self.tracked(operationName, head) { () async throws(ClientError) in
                try await self.send(head, body: body, operationName: operationName, metadata: metadata, options: options, streaming: streaming)
            }
        }
        return try await self.calls.run(id) { () async throws(ClientError) in
            try await self.tracked(operationName, head) { () async throws(ClientError) in
                try await self.send(head, body: body, operationName: operationName, metadata: metadata, options: options, streaming: streaming)
            }
        }
    }

    @inline(__always)
    private func send(_ head: HTTPRequest, body: HTTPBody?, operationName: String, metadata: RequestMetadata,
                      options: CallOptions, streaming: Bool) async throws(ClientError) -> ClientResponse {
        if metadata.routesOnItsOwn {
            return try await self.chain(for: metadata)(ClientRequest(
                head: head, body: body, operationName: operationName, baseURL: self.baseURL, options: self.middlewareOptions(options),
                metadata: metadata, isStreaming: streaming, coders: self.configuration.coders))
        }
        guard let chain = self.chain else {
            return try await Self.sendToTransport(head, body: body, options: self.transportOptions(options),
                                                  limit: options.maxBodySize ?? self.configuration.maxBodySize,
                                                  streaming: streaming, transport: self.transport)
        }
        if let cache = self.cacheAlone, !streaming,
           let fresh = cache.freshAnswer(head, policy: options.cachePolicy ?? self.configuration.cachePolicy,
                                         maxBodySize: options.maxBodySize ?? self.configuration.maxBodySize) {
            return fresh
        }
        return try await chain(ClientRequest(head: head, body: body, operationName: operationName, baseURL: self.baseURL,
                                             options: self.middlewareOptions(options), metadata: metadata, isStreaming: streaming,
                                             coders: self.configuration.coders))
    }

    /// The way of a request that brings its own middleware (in front of the client's) or a
    /// stand-in for the transport (behind the client's middleware): built for each such request.
    private func chain(for metadata: RequestMetadata) -> MiddlewareNext {
        var link: MiddlewareLink
        if let standIn = metadata[StandInTransport.self] {
            link = MiddlewareLink(.function(standIn))
            for middleware in self.middleware.reversed() {
                link = MiddlewareLink(.middleware(middleware, link))
            }
        } else {
            link = self.chain?.link ?? MiddlewareLink(.transport(self.transport, maxBodySize: self.configuration.maxBodySize))
        }
        for middleware in (metadata[RequestMiddleware.self] ?? []).reversed() {
            link = MiddlewareLink(.middleware(middleware, link))
        }
        return MiddlewareNext(link: link)
    }

    /// The middleware as one chain of links, built once per client: each link calls its
    /// middleware with the link after it, the last one the transport. Nil without middleware.
    static func chain(_ middleware: [any Middleware], transport: any Transport, defaults: Configuration) -> MiddlewareNext? {
        guard !middleware.isEmpty else { return nil }
        var link = MiddlewareLink(.transport(transport, maxBodySize: defaults.maxBodySize))
        for middleware in middleware.reversed() {
            link = MiddlewareLink(.middleware(middleware, link))
        }
        return MiddlewareNext(link: link)
    }

    /// The end of every call's way: the transport, streamed or collected as the call wants.
    /// (A middleware that moved the call's timeout into a deadline — a retry — hands on
    /// `options` as it left them: nothing here puts the timeout back.)
    @usableFromInline
    static func sendToTransport(_ head: HTTPRequest, body: HTTPBody?, options: TransportOptions, limit: Int, streaming: Bool,
                                transport: any Transport) async throws(ClientError) -> ClientResponse {
        if streaming {
            let streamed: TransportResponse
            do {
                streamed = try await transport.send(head, body: body, options: options)
            } catch {
                throw ClientError.transport(error)
            }
            return ClientResponse(streamed, request: head, url: Self.finalURL(of: head, streamed))
        }
        let collected = try await Self.collect(head, body: body, options: options, limit: limit, transport: transport)
        return ClientResponse(collected: collected, request: head, url: Self.finalURL(of: head, chain: collected.redirectChain))
    }

    /// The transport's collected form: the one place every collected call reaches it, the
    /// chain's end and a client without middleware alike.
    @inline(__always)
    static func collect(_ head: HTTPRequest, body: HTTPBody?, options: TransportOptions, limit: Int,
                        transport: any Transport) async throws(ClientError) -> CollectedResponse {
        do {
            return try await transport.sendCollecting(head, body: body, options: options, maxBodySize: limit)
        } catch {
            throw Self.collectingError(error, limit: limit)
        }
    }

    static func collectingError(_ error: TransportError, limit: Int) -> ClientError {
        error.code == .bodyTooLarge ? ClientError(.bodyTooLarge, detail: "more than \(limit) bytes") : ClientError.transport(error)
    }
}
