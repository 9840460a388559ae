/// A request's way through the cache: which stored response may answer it, when the origin
/// is asked (plainly, conditionally, or not at all), and what is stored of its answer.
///
/// ```
/// not GET ─────────────── pass on; an unsafe method's non-error answer invalidates
/// no-store / Range ─────── pass on (bypassed)
/// reload ───────────────── ask the origin, store the answer (bypassed, stored)
/// a stored variant matches:
///   fresh ───────────────── answer from it (hit), or a 304 for a satisfied precondition
///   max-stale allows ────── answer from it (stale)
///   stale-while-revalidate─ answer from it, validate once in the background (stale)
///   otherwise ───────────── validate: 304 → answer from it updated (revalidated);
///                           5xx or failure within stale-if-error → answer from it (stale);
///                           a new response → store it in its place (replaced)
/// nothing usable ───────── only-if-cached: 504; else one request per key at a time (miss)
/// ```
extension HTTPCache {
    /// Answers `request`, asking the rest of the chain (`next`) when it must.
    public func respond(to request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let policy = request.options.cachePolicy ?? .useProtocolCachePolicy
        let head = request.head
        guard head.method == .get else { return try await self.passOn(request, next: next) }
        let directives = CacheRules.requestDirectives(head)
        if policy == .noStore || directives.has("no-store") || head.headerFields[.range] != nil {
            return self.marked(try await next(request), .bypassed(stored: false))
        }
        let key = CacheRules.key(for: head)
        if policy == .reloadIgnoringLocalCacheData {
            let requestTime = self.clock.now()
            let response = try await next(request)
            return await self.storing(response, for: request, key: key, requestTime: requestTime) { .bypassed(stored: $0) }
        }
        return try await self.lookUp(request, key: key, policy: policy, directives: directives,
                                     collapsing: self.options.collapsesMisses && !CacheRules.isConditional(head), next: next)
    }

    /// A fresh stored answer to a plain `GET` from a memory store, made without a
    /// ``ClientRequest`` (the client asks before building one, when its cache is its only
    /// middleware); nil in every other case, which then takes the chain (``respond(to:next:)``).
    /// The same rules: a request with directives of its own, preconditions or a range, or a
    /// policy other than the protocol's, is not answered here.
    func freshAnswer(_ head: HTTPRequest, policy: CachePolicy, maxBodySize: Int) -> ClientResponse? {
        guard policy == .useProtocolCachePolicy, head.method == .get,
              !head.headerFields.contains(where: { Self.notPlain.contains($0.name) }),
              let (memory, hit) = self.freshInMemory(head, key: CacheRules.key(for: head), asked: CacheControl([String]()),
                                                     maxBodySize: maxBodySize) else { return nil }
        let age = Int(hit.facts.currentAge(now: hit.now).rounded(.down))
        if let served = hit.served, served.age == age {
            return self.made(head, from: hit.entry, body: hit.body, servedHead: served.head, status: .hit)
        }
        let answer = self.made(head, from: hit.entry, body: hit.body, facts: hit.facts, status: .hit, now: hit.now)
        memory.keepServed(answer.head, age: age, for: hit.entry)
        return answer
    }

    /// A stored response fresh for `head`, from a memory store, with its body and facts (read
    /// and kept beside it the first time): one visit to the store, a hit's whole lookup.
    private func freshInMemory(_ head: HTTPRequest, key: String, asked: CacheControl, maxBodySize: Int)
        -> (MemoryCacheStore, MemoryHit)? {
        guard let memory = self.memory else { return nil }
        // A request with credentials has them digested once, not once per stored variant under
        // the store's lock; one without has nothing to digest.
        let found = head.headerFields[.authorization] == nil && head.headerFields[.cookie] == nil
            ? memory.first(key, where: { CacheRules.matches(head, $0) })
            : memory.first(key, where: CacheRules.RequestValues(head).matches)
        guard let (entry, body, kept, served) = found, body.count <= maxBodySize else { return nil }
        let now = self.clock.now()
        let facts = kept ?? self.rules.facts(entry)
        if kept == nil { memory.keep(facts, for: entry) }
        guard self.rules.usability(of: entry, for: head, now: now, asked: asked, facts: facts) == .fresh else { return nil }
        return (memory, MemoryHit(entry: entry, body: body, facts: facts, served: served, now: now))
    }

    private struct MemoryHit {
        var entry: StoredResponse
        var body: [UInt8]
        var facts: EntryFacts
        var served: (age: Int, head: HTTPResponse)?
        var now: Double
    }

    /// What makes a request more than a plain `GET` to the cache: directives, preconditions,
    /// a range.
    private static let notPlain: Set<HTTPField.Name> = [.cacheControl, .pragma, .ifNoneMatch, .ifModifiedSince, .ifMatch,
                                                        .ifUnmodifiedSince, .ifRange, .range]

    private func lookUp(_ request: ClientRequest, key: String, policy: CachePolicy, directives: CacheControl, collapsing: Bool,
                        next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let head = request.head
        let now = self.clock.now()
        // A fresh answer from memory, the common hit: one visit to the store, the entry's
        // facts read once.
        if policy == .useProtocolCachePolicy, !request.isStreaming,
           let (_, hit) = self.freshInMemory(head, key: key, asked: directives, maxBodySize: request.options.maxBodySize ?? .max),
           let answer = await self.answer(request, from: hit.entry, status: .hit, now: hit.now, facts: hit.facts, body: hit.body) {
            return answer
        }
        let entries = await self.store.entries(for: key)
        if let selected = entries.first(where: { CacheRules.matches(head, $0) }) {
            switch policy {
            case .returnCacheDataElseLoad, .returnCacheDataDontLoad:
                let status: CacheStatus = self.rules.timeToLive(selected, now: now) > 0 ? .hit : .stale(.policy)
                if let answer = await self.answer(request, from: selected, status: status, now: now) { return answer }
            case .revalidate:
                return try await self.validate(request, selected: selected, entries: entries, next: next)
            default:
                switch self.rules.usability(of: selected, for: head, now: now, asked: directives) {
                case .fresh:
                    if let answer = await self.answer(request, from: selected, status: .hit, now: now) { return answer }
                case .staleAllowed(let reason):
                    if let answer = await self.answer(request, from: selected, status: .stale(reason), now: now) { return answer }
                case .staleWhileRevalidate:
                    if let answer = await self.answer(request, from: selected, status: .stale(.whileRevalidating), now: now) {
                        let background = ClientRequest(head: head, body: nil, operationName: request.operationName, baseURL: request.baseURL,
                                                       options: request.options, metadata: request.metadata, isStreaming: false,
                                                       coders: request.coders)
                        self.revalidateInBackground(key) {
                            _ = try? await self.validate(background, selected: selected, entries: entries, next: next)
                        }
                        return answer
                    }
                case .mustValidate:
                    if directives.has("only-if-cached") { return self.gatewayTimeout(request) }
                    return try await self.validate(request, selected: selected, entries: entries, next: next)
                }
            }
        }
        if policy == .returnCacheDataDontLoad {
            throw ClientError(.notCached, detail: "nothing stored for \(request.url), and the policy forbids loading")
        }
        if directives.has("only-if-cached") { return self.gatewayTimeout(request) }
        if collapsing {
            // One flight per user: another's answer would not be theirs to use anyway.
            let flight = self.options.separatesCredentials ? key + " " + CacheRules.credentialDigest(head) : key
            switch await self.flights.board(flight, until: request.options.transport.deadline) {
            case .follower:
                return try await self.lookUp(request, key: key, policy: policy, directives: directives, collapsing: false, next: next)
            case .leader:
                defer { self.flights.land(flight) }
                return try await self.fetch(request, key: key, next: next)
            }
        }
        return try await self.fetch(request, key: key, next: next)
    }

    /// A miss: the origin's answer, stored when it may be.
    private func fetch(_ request: ClientRequest, key: String, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let requestTime = self.clock.now()
        let response = try await next(request)
        return await self.storing(response, for: request, key: key, requestTime: requestTime) { .miss(stored: $0) }
    }

    /// Validates `selected` with the origin (§4.3.1), or sends the caller's own conditional
    /// request as it is, and answers from what comes back.
    private func validate(_ request: ClientRequest, selected: StoredResponse, entries: [StoredResponse],
                          next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let ownConditional = CacheRules.isConditional(request.head)
        var sent = request
        if !ownConditional {
            sent.head = CacheRules.conditionalRequest(request.head, selected: selected)
        }
        let requestTime = self.clock.now()
        let response: ClientResponse
        do {
            response = try await next(sent)
        } catch {
            guard error.code != .cancelled,
                  self.rules.mayServeOnError(selected, for: request.head, now: self.clock.now(), unreachable: error.code == .transportFailed),
                  let answer = await self.answer(request, from: selected, status: .stale(.originFailed), now: self.clock.now()) else { throw error }
            return answer
        }
        let now = self.clock.now()
        let code = response.status.code
        if [500, 502, 503, 504].contains(code), self.rules.mayServeOnError(selected, for: request.head, now: now),
           let answer = await self.answer(request, from: selected, status: .stale(.originFailed), now: now) {
            await response.discardBody(streaming: request.isStreaming)
            return answer
        }
        guard code == 304 else {
            return await self.storing(response, for: request, key: selected.key, requestTime: requestTime) { .replaced(stored: $0) }
        }
        var chosen: StoredResponse?
        let invalidated = self.wasInvalidated(selected.key, since: requestTime)
        for target in CacheRules.notModifiedTargets(response.head, request: request.head, selected: selected, entries: entries) {
            let updated = CacheRules.merged(target, with: response.head, requestTime: requestTime, responseTime: now)
            if !invalidated {
                await self.store.update(updated)
                self.rules.memo.forget(updated.id)
            }
            if updated.id == selected.id || chosen == nil { chosen = updated }
        }
        // The caller's own precondition held: its 304 is the answer.
        if ownConditional { return self.marked(response, chosen == nil ? .miss(stored: false) : .revalidated) }
        if let chosen, let answer = await self.answer(request, from: chosen, status: .revalidated, now: now) {
            await response.discardBody(streaming: request.isStreaming)
            return answer
        }
        // A 304 that speaks for nothing stored (or whose entry went meanwhile) is no answer to
        // a request the caller did not make conditional (§4.3.4): ask again, unconditionally.
        await response.discardBody(streaming: request.isStreaming)
        return try await self.fetch(request, key: selected.key, next: next)
    }

    /// A request with a method other than GET: passed on; an unsafe one's non-error answer
    /// makes stale what it may have changed (§4.4).
    private func passOn(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let response = try await next(request)
        for key in CacheRules.invalidatedKeys(request.head, response.head) {
            await self.invalidate(key)
        }
        return self.marked(response, .bypassed(stored: false))
    }

    /// `only-if-cached` with nothing to answer (RFC 9111 §5.2.1.7).
    private func gatewayTimeout(_ request: ClientRequest) -> ClientResponse {
        self.marked(ClientResponse(head: HTTPResponse(status: .gatewayTimeout), body: [], for: request), .miss(stored: false))
    }
}
