/// Between the cache and its store: answers made from stored entries, and origin answers
/// stored as they go on to the caller.
extension HTTPCache {
    /// A response from `entry`, with its current `Age` (or a `304` when the caller's own
    /// precondition is satisfied by it); nil when its body is gone from the store.
    /// `facts` and `body` when the caller has them already (a hit from memory).
    func answer(_ request: ClientRequest, from entry: StoredResponse, status: CacheStatus, now: Double,
                facts known: EntryFacts? = nil, body given: [UInt8]? = nil) async -> ClientResponse? {
        let facts = known ?? self.rules.facts(entry)
        if CacheRules.isConditional(request.head), CacheRules.satisfiesPrecondition(request.head, entry) {
            var head = entry.head
            let age = facts.currentAge(now: now)
            head.headerFields[.age] = String(Int(age.rounded(.down)))
            let response = ClientResponse(head: CacheRules.notModified(from: head), body: [], for: request)
            return self.marked(response, status, ttl: Int((facts.lifetime - age).rounded(.down)))
        }
        if request.isStreaming {
            guard let body = await self.store.body(of: entry) else { return nil }
            var streamed = TransportResponse(head: self.servedHead(entry, facts: facts, status: status, now: now), body: body)
            streamed.extras.values.cacheStatus = status
            return ClientResponse(streamed, request: request.head, url: entry.key)
        }
        let bytes: [UInt8]
        let limit = request.options.maxBodySize ?? Int.max
        if let given {
            // Larger than the call takes: no answer from here (the origin's will say why).
            guard given.count <= limit else { return nil }
            bytes = given
        } else if let memory = self.memory {
            // Straight from memory: no chunk sequence between the stored bytes and the caller.
            guard let stored = memory.bytes(of: entry), stored.count <= limit else { return nil }
            bytes = stored
        } else {
            guard let body = await self.store.body(of: entry),
                  let read = try? await body.collect(upTo: limit) else { return nil }
            bytes = read
        }
        return self.made(request.head, from: entry, body: bytes, facts: facts, status: status, now: now)
    }

    /// A whole answer from `entry` and its `body`, made once with its status (no copy to
    /// mark it afterwards).
    func made(_ request: HTTPRequest, from entry: StoredResponse, body: [UInt8], facts: EntryFacts, status: CacheStatus,
              now: Double) -> ClientResponse {
        self.made(request, from: entry, body: body, servedHead: self.servedHead(entry, facts: facts, status: status, now: now), status: status)
    }

    /// A whole answer with the head as served (its `Age` and status written already).
    func made(_ request: HTTPRequest, from entry: StoredResponse, body: [UInt8], servedHead: HTTPResponse,
              status: CacheStatus) -> ClientResponse {
        var collected = CollectedResponse(head: servedHead, body: body)
        if status == .hit {
            collected.extras = Self.hitExtras   // shared: a hit allocates no box for its status
        } else {
            collected.extras.values.cacheStatus = status
        }
        // The entry's key is the request's URL: no need to write it out again.
        return ClientResponse(collected: collected, request: request, url: entry.key)
    }

    /// What a fresh hit carries besides head and body: its status alone, one box for all.
    private static let hitExtras: ExchangeExtras = {
        var values = ExchangeExtras.Values()
        values.cacheStatus = .hit
        return ExchangeExtras(values)
    }()

    /// The stored head as served now: its `Age`, and the `Cache-Status` field when configured.
    private func servedHead(_ entry: StoredResponse, facts: EntryFacts, status: CacheStatus, now: Double) -> HTTPResponse {
        var head = entry.head
        let age = facts.currentAge(now: now)
        head.headerFields[.age] = String(Int(age.rounded(.down)))
        if let name = self.options.statusHeaderName {
            let ttl = Int((facts.lifetime - age).rounded(.down))
            head.headerFields.append(HTTPField(name: .cacheStatus, value: status.headerValue(cacheName: name, ttl: ttl)))
        }
        return head
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
        // A response reached through redirects answers another URL than the key's (§2: the
        // key is the request's target): not stored.
        guard self.rules.isStorable(request.head, response.head), response.details.redirectChain.isEmpty else {
            return self.marked(response, status(false))
        }
        let responseTime = self.clock.now()
        var head = CacheRules.storableHead(response.head, decodedContentEncoding: response.details.decodedContentEncoding != nil)
        // A cache adds the Date a message lacks (RFC 9110 §6.6.1), so its age can be told.
        if head.headerFields[.date] == nil { head.headerFields[.date] = HTTPDate.format(responseTime) }
        let varyValues = CacheRules.varyValues(of: request.head, for: response.head,
                                               separatingCredentials: self.options.separatesCredentials)
        let collected = response.collectedBody
        let declaredSize = head.headerFields[.contentLength].flatMap { Int($0) } ?? 0
        let entry = StoredResponse(id: self.makeID(), key: key, head: head, varyValues: varyValues, requestTime: requestTime,
                                   responseTime: responseTime, bodySize: collected?.count ?? declaredSize)
        let stored = await self.store.entries(for: key)
        // The same variant goes; and past the cap on variants (one per user, with credentials
        // kept apart), the least recently stored ones.
        var replaced = stored.filter { $0.varyValues == varyValues }.map(\.id)
        let others = stored.filter { $0.varyValues != varyValues }
        if others.count >= self.options.maxVariantsPerKey {
            replaced += others.suffix(others.count - self.options.maxVariantsPerKey + 1).map(\.id)
        }
        guard let writer = await self.store.makeWriter(for: entry) else { return self.marked(response, status(false)) }
        if let collected {
            do {
                try await writer.write(collected)
                guard !self.wasInvalidated(key, since: requestTime) else {
                    await writer.abort()
                    return self.marked(response, status(false))
                }
                try await writer.commit(replacing: replaced)
                // An invalidation between the check and the commit: taken back (the record is
                // written before the store is emptied, so one of the two looks sees it).
                if self.wasInvalidated(key, since: requestTime) {
                    await self.store.remove(id: entry.id, key: key)
                    return self.marked(response, status(false))
                }
            } catch {
                await writer.abort()
                return self.marked(response, status(false))
            }
            return self.marked(response, status(true), ttl: self.rules.timeToLive(entry, now: responseTime))
        }
        var teed = response
        let sink = CachingBody.Sink(writer: writer, replacing: replaced, mayCommit: { [self] in !self.wasInvalidated(key, since: requestTime) },
                                    takeBack: { [self] in await self.store.remove(id: entry.id, key: key) })
        teed.body = CachingBody.body(response.body, sink: sink)
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
    /// How an HTTP cache served this response (`CacheStatus`); nil when the client has
    /// no cache, or the call did not go through it.
    public var cacheStatus: CacheStatus? { self.details.extras.values.cacheStatus }
}

extension StreamingResponse {
    /// How an HTTP cache served this response (`CacheStatus`); nil when no cache took part.
    public var cacheStatus: CacheStatus? { self.details.extras.values.cacheStatus }
}
