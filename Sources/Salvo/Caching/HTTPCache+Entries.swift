/// Between the cache and its store: answers made from stored entries, and origin answers
/// stored as they go on to the caller.
extension HTTPCache {
    /// A response from `entry`, with its current `Age` (or a `304` when the caller's own
    /// precondition is satisfied by it); nil when its body is gone from the store.
    func answer(_ request: ClientRequest, from entry: StoredResponse, status: CacheStatus, now: Double) async -> ClientResponse? {
        var head = entry.head
        head.headerFields[.age] = String(Int(self.rules.currentAge(entry, now: now).rounded(.down)))
        if CacheRules.isConditional(request.head), CacheRules.satisfiesPrecondition(request.head, entry) {
            let response = ClientResponse(head: CacheRules.notModified(from: head), body: [], for: request)
            return self.marked(response, status, ttl: self.rules.timeToLive(entry, now: now))
        }
        let response: ClientResponse
        if !request.isStreaming, let memory = self.store as? MemoryCacheStore {
            // Straight from memory: no chunk sequence between the stored bytes and the caller.
            guard let bytes = memory.bytes(of: entry) else { return nil }
            response = ClientResponse(head: head, body: bytes, for: request)
        } else {
            guard let body = await self.store.body(of: entry) else { return nil }
            if request.isStreaming {
                response = ClientResponse(TransportResponse(head: head, body: body), request: request.head, url: request.url)
            } else {
                guard let bytes = try? await body.collect(upTo: request.options.maxBodySize ?? Int.max) else { return nil }
                response = ClientResponse(head: head, body: bytes, for: request)
            }
        }
        return self.marked(response, status, ttl: self.rules.timeToLive(entry, now: now))
    }

    /// `response` with its cache status, and the `Cache-Status` field when configured.
    func marked(_ response: ClientResponse, _ status: CacheStatus, ttl: Int? = nil) -> ClientResponse {
        var response = response
        response.cacheStatus = status
        if let name = self.options.statusHeaderName {
            response.head.headerFields.append(HTTPField(name: .cacheStatus, value: status.headerValue(cacheName: name, ttl: ttl)))
        }
        return response
    }

    /// The origin's `response`, stored when the rules allow, in place of the stored
    /// response(s) of its variant: a collected body at once, a streamed one as the caller
    /// reads it. `status` says how it was served, given whether it is being stored.
    func storing(_ response: ClientResponse, for request: ClientRequest, key: String, requestTime: Double,
                 status: (Bool) -> CacheStatus) async -> ClientResponse {
        guard self.rules.isStorable(request.head, response.head) else { return self.marked(response, status(false)) }
        let responseTime = self.clock.now()
        let head = CacheRules.storableHead(response.head, decodedContentEncoding: response.details.decodedContentEncoding != nil)
        let varyValues = CacheRules.varyValues(of: request.head, for: response.head,
                                               separatingCredentials: self.options.separatesCredentials)
        let collected = response.collectedBody
        let declaredSize = head.headerFields[.contentLength].flatMap { Int($0) } ?? 0
        let entry = StoredResponse(id: self.makeID(), key: key, head: head, varyValues: varyValues, requestTime: requestTime,
                                   responseTime: responseTime, bodySize: collected?.count ?? declaredSize)
        let replaced = await self.store.entries(for: key).filter { $0.varyValues == varyValues }.map(\.id)
        guard let writer = await self.store.makeWriter(for: entry) else { return self.marked(response, status(false)) }
        if let collected {
            do {
                try await writer.write(collected)
                try await writer.commit(replacing: replaced)
            } catch {
                await writer.abort()
                return self.marked(response, status(false))
            }
            return self.marked(response, status(true), ttl: self.rules.timeToLive(entry, now: responseTime))
        }
        var teed = response
        teed.body = .stream(CachingBody(upstream: response.body, sink: CachingBody.Sink(writer: writer, replacing: replaced)))
        return self.marked(teed, status(true), ttl: self.rules.timeToLive(entry, now: responseTime))
    }
}

extension ClientResponse {
    /// How an HTTP cache served this response; nil when no cache took part.
    public var cacheStatus: CacheStatus? {
        get {
            switch self.answer {
            case .collected(let collected): collected.extras.values.cacheStatus
            case .streamed(let streamed): streamed.extras.values.cacheStatus
            }
        }
        set {
            switch self.answer {
            case .collected(var collected):
                collected.extras.values.cacheStatus = newValue
                self.answer = .collected(collected)
            case .streamed(var streamed):
                streamed.extras.values.cacheStatus = newValue
                self.answer = .streamed(streamed)
            }
        }
    }
}

extension Response {
    /// How an HTTP cache served this response (``CacheStatus``); nil when the client has
    /// no cache, or the call did not go through it.
    public var cacheStatus: CacheStatus? { self.details.extras.values.cacheStatus }
}

extension StreamingResponse {
    /// How an HTTP cache served this response (``CacheStatus``); nil when no cache took part.
    public var cacheStatus: CacheStatus? { self.details.extras.values.cacheStatus }
}
