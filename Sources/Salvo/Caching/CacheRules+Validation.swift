/// Validation (RFC 9111 §4.3) and invalidation (§4.4): the conditional request a cache sends,
/// how a `304` picks and updates stored responses, how a cache answers a caller's own
/// conditional request, and what an unsafe request makes stale.
extension CacheRules {
    /// `request` made conditional on `selected`, the stored response it would be answered
    /// with: `If-None-Match` with its entity tag, `If-Modified-Since` with its
    /// `Last-Modified` (never its `Date`: a date the origin did not give as a validator).
    ///
    /// Only the selected response's tag goes, although §4.3.1 allows listing every stored
    /// variant's: other variants were chosen by other request values, and origins (the
    /// conformance suite's among them) compare `If-None-Match` to the one tag they last sent.
    static func conditionalRequest(_ request: HTTPRequest, selected: StoredResponse) -> HTTPRequest {
        var request = request
        if let tag = selected.head.headerFields[.eTag] { request.headerFields[.ifNoneMatch] = tag }
        if let lastModified = selected.head.headerFields[.lastModified], HTTPDate.parse(lastModified) != nil {
            request.headerFields[.ifModifiedSince] = lastModified
        }
        return request
    }

    /// Whether a request carries preconditions of its own (then it is sent as the caller
    /// made it, and a `304` goes back to the caller).
    static func isConditional(_ request: HTTPRequest) -> Bool {
        // One pass over the fields, not one per precondition.
        request.headerFields.contains { Self.preconditions.contains($0.name) }
    }

    private static let preconditions: Set<HTTPField.Name> = [.ifNoneMatch, .ifModifiedSince, .ifMatch, .ifUnmodifiedSince, .ifRange, .range]

    /// The stored responses a `304` to `request` speaks for (§4.3.4), among those that could
    /// have answered the request (its variant; with credentials kept apart, its user's): with
    /// the `304`'s strong entity tag, all of them; with a weak one, the most recent that has
    /// it; else with its `Last-Modified` (compared as dates); else, when it names no
    /// validator, the one selected.
    static func notModifiedTargets(_ response: HTTPResponse, request: HTTPRequest, selected: StoredResponse?,
                                   entries: [StoredResponse]) -> [StoredResponse] {
        let fields = response.headerFields
        let candidates = entries.filter { Self.matches(request, $0) }
        if let tag = fields[.eTag] {
            if tag.hasPrefix("W/") {
                return candidates.first { $0.head.headerFields[.eTag].map { Self.weakMatch($0, tag) } ?? false }.map { [$0] } ?? []
            }
            return candidates.filter { $0.head.headerFields[.eTag] == tag }
        }
        if let lastModified = fields[.lastModified].flatMap(HTTPDate.parse) {
            return candidates.filter { $0.head.headerFields[.lastModified].flatMap(HTTPDate.parse) == lastModified }
        }
        // No validator at all (servers often leave them out of a 304): the one that was
        // selected, which the conditional request named.
        guard let selected, candidates.contains(where: { $0.id == selected.id }) else { return [] }
        return [selected]
    }

    /// `entry` updated by a `304` (§3.2): its fields replaced by the `304`'s of the same name,
    /// except framing and hop-by-hop ones; `Age` the `304`'s or none (the old one described
    /// the old message); the times those of the validation.
    static func merged(_ entry: StoredResponse, with response: HTTPResponse, requestTime: Double, responseTime: Double) -> StoredResponse {
        var entry = entry
        let update = Self.storableHead(response, decodedContentEncoding: false).headerFields
        var names: Set<HTTPField.Name> = []
        for field in update where !Self.framing.contains(field.name.canonicalName) { names.insert(field.name) }
        var fields = HTTPFields(entry.head.headerFields.filter { !names.contains($0.name) && $0.name != .age })
        for field in update where names.contains(field.name) { fields.append(field) }
        // The 304's Date stands for the stored one; without one, the time it came (RFC 9110
        // §6.6.1), so that the entry's age starts again.
        if update[.date] == nil { fields[.date] = HTTPDate.format(responseTime) }
        entry.head.headerFields = fields
        entry.requestTime = requestTime
        entry.responseTime = responseTime
        return entry
    }

    /// Weak comparison of two entity tags (RFC 9110 §8.8.3.2): equal once `W/` is dropped.
    static func weakMatch(_ a: String, _ b: String) -> Bool {
        func opaque(_ tag: String) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : tag[...] }
        return opaque(CacheControl.trimmed(a[...]).description) == opaque(CacheControl.trimmed(b[...]).description)
    }

    /// Whether a caller's conditional `GET` is satisfied by `entry` (§4.3.2): an
    /// `If-None-Match` tag (or `*`) that weakly matches its entity tag; without
    /// `If-None-Match`, an `If-Modified-Since` no earlier than its `Last-Modified`.
    static func satisfiesPrecondition(_ request: HTTPRequest, _ entry: StoredResponse) -> Bool {
        let fields = request.headerFields
        if fields[.ifNoneMatch] != nil {
            guard let stored = entry.head.headerFields[.eTag] else { return false }
            return fields[values: .ifNoneMatch].flatMap { CacheControl.members(of: $0) }.contains { $0 == "*" || Self.weakMatch(String($0), stored) }
        }
        if let since = fields[.ifModifiedSince].flatMap(HTTPDate.parse) {
            guard let modified = entry.head.headerFields[.lastModified].flatMap(HTTPDate.parse) else { return false }
            return modified <= since
        }
        return false
    }

    /// The `304` a cache answers a satisfied conditional request with: the stored fields
    /// that describe the representation, no body.
    static func notModified(from head: HTTPResponse) -> HTTPResponse {
        var response = HTTPResponse(status: .notModified)
        response.headerFields = HTTPFields(head.headerFields.filter { !Self.framing.contains($0.name.canonicalName) && $0.name != .contentType })
        return response
    }

    // MARK: Invalidation (§4.4)

    static let safeMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .trace]

    /// The keys an answer to an unsafe request makes stale: its own URL, and those its
    /// `Location` and `Content-Location` name on the same origin — when the answer is not an
    /// error (2xx or 3xx). Empty for safe methods.
    static func invalidatedKeys(_ request: HTTPRequest, _ response: HTTPResponse) -> [String] {
        guard !Self.safeMethods.contains(request.method), (200..<400).contains(response.status.code) else { return [] }
        let target = "\(request.scheme ?? "http")://\(request.authority ?? "")\(request.path ?? "/")"
        var keys = [Self.key(forURL: target)]
        let base = URIReference(target)
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let value = response.headerFields[name] else { continue }
            var resolved = URIReference(value).resolved(against: base)
            resolved.fragment = nil
            guard resolved.scheme?.lowercased() == base.scheme?.lowercased(),
                  resolved.authority?.lowercased() == base.authority?.lowercased() else { continue }
            let key = Self.key(forURL: resolved.description)
            if !keys.contains(key) { keys.append(key) }
        }
        return keys
    }
}
