import HTTPTypes
import Synchronization

/// RFC 9111's rules for a private cache, as pure functions of requests, stored responses and
/// a time passed in: what may be stored, how old a stored response is and for how long it is
/// fresh, whether it may answer a request, how to validate it, how a `304` updates it, and
/// what an unsafe request invalidates. No I/O and no clock of its own: ``HTTPCache`` drives it.
///
/// Choices where the RFC leaves room (each tested in `CacheRulesTests`):
/// - Only `GET` responses are stored and answered; `HEAD` and the rest pass through.
/// - `no-cache` with field names (`no-cache="Set-Cookie"`) is read as plain `no-cache`
///   (validate every time): the safe reading.
/// - A directive given twice keeps its first value; two `Expires` fields, or one that is not
///   an HTTP date, mean "already expired".
/// - `s-maxage` and `proxy-revalidate` are for shared caches and ignored; `private` and
///   `public` both allow storing.
/// - Heuristic freshness is ``Options/heuristicFraction`` of the time since `Last-Modified`,
///   at most ``Options/heuristicLimit``, for the statuses RFC 9110 §15.1 calls heuristically
///   cacheable (or any status with `public`); URLs with a query get it too (§4.2.2 allows).
struct CacheRules: Sendable {
    var heuristicFraction: Double = 0.1
    var heuristicLimit: Double = 86_400
    /// What each stored response's fields say, read once (a hit reads none of them again): by
    /// id, stamped with the entry's times (a revalidation gives it new ones).
    let memo = StampedMemo<String, EntryTimes, EntryFacts>()

    /// Heuristically cacheable statuses (RFC 9110 §15.1), 206 left out: ranges are not stored.
    static let heuristicStatuses: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]
    /// Statuses whose semantics the cache knows (for `must-understand`).
    static let understoodStatuses: Set<Int> = heuristicStatuses.union([302, 303, 307, 400, 403, 500, 502, 503, 504])
    /// Fields that describe one connection or one message's framing: never stored, never
    /// updated by a `304` (RFC 9111 §3.1, §3.2).
    static let hopByHop: Set<String> = ["connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
                                        "trailer", "proxy-authenticate", "proxy-authorization",
                                        "proxy-authentication-info"]
    static let framing: Set<String> = ["content-length", "content-range", "content-encoding"]

    // MARK: Keys and variants

    /// The primary key: the full URL (`https://host/path?query`); only `GET` responses are
    /// stored, so the method goes without saying.
    static func key(for request: HTTPRequest) -> String {
        let (scheme, authority, path) = (request.scheme ?? "http", request.authority ?? "", request.path ?? "/")
        var key = ""
        key.reserveCapacity(scheme.utf8.count + 3 + authority.utf8.count + path.utf8.count)
        key += scheme
        key += "://"
        key += authority
        key += path
        return key
    }

    static func key(forURL url: String) -> String { url }

    /// The names a response's `Vary` lists, lower-case, in order; `["*"]` when it has `*`.
    static func varyNames(_ response: HTTPResponse) -> [String] {
        var names: [String] = []
        for value in response.headerFields[values: .vary] {
            for member in CacheControl.members(of: value) {
                let name = member.lowercased()
                if name == "*" { return ["*"] }
                if !names.contains(name) { names.append(name) }
            }
        }
        return names
    }

    /// The request's values for the names `response` varies on, and, when
    /// `separatingCredentials`, for the fields that carry credentials (``credentialFields``),
    /// as if the response varied on them too: what answered one user — or a request without
    /// credentials — is served only to the same. Credentials are kept as digests, never as
    /// they are (a disk store would otherwise hold every token).
    static func varyValues(of request: HTTPRequest, for response: HTTPResponse,
                           separatingCredentials: Bool = false) -> [StoredResponse.VaryValue] {
        var names = self.varyNames(response)
        if separatingCredentials, names != ["*"] {
            names += self.credentialFields.filter { !names.contains($0) }
        }
        return names.map { name in
            StoredResponse.VaryValue(name: name, value: name == "*" ? nil : self.storedValue(of: name, in: request))
        }
    }

    /// What a variant keeps of the request's `name`: its value, or for a credential field
    /// its SHA-256.
    static func storedValue(of name: String, in request: HTTPRequest) -> String? {
        guard let value = self.normalizedValue(of: name, in: request) else { return nil }
        return self.credentialFields.contains(name) ? "sha256:" + SHA256.hex(Array(value.utf8)) : value
    }

    /// What identifies the user a request speaks for: the digest of its credentials.
    static func credentialDigest(_ request: HTTPRequest) -> String {
        self.credentialFields.map { self.storedValue(of: $0, in: request) ?? "-" }.joined(separator: ",")
    }

    /// The request fields that say who is asking: a response stored for one value of them
    /// is not served to a request with another (``HTTPCache/Options/separatesCredentials``).
    static let credentialFields = ["authorization", "cookie"]

    /// A field's values joined as one list, white space around commas dropped: `a,b` and
    /// `a, b` select the same variant; a missing field is nil.
    static func normalizedValue(of name: String, in request: HTTPRequest) -> String? {
        let interned: HTTPField.Name? = switch name {
        case "authorization": .authorization
        case "cookie": .cookie
        default: HTTPField.Name(name)
        }
        guard let fieldName = interned else { return nil }
        let values = request.headerFields[values: fieldName]
        guard !values.isEmpty else { return nil }
        return values.flatMap { CacheControl.members(of: $0) }.joined(separator: ",")
    }

    /// Whether `entry` was chosen by the values `request` has (`Vary: *` never matches).
    static func matches(_ request: HTTPRequest, _ entry: StoredResponse) -> Bool {
        entry.varyValues.allSatisfy { vary in vary.name != "*" && self.storedValue(of: vary.name, in: request) == vary.value }
    }

    /// A request's values as variants keep them, its credentials' digests computed once
    /// (not once per stored variant, under a store's lock).
    struct RequestValues: Sendable {
        let request: HTTPRequest
        let authorization: String?
        let cookie: String?

        init(_ request: HTTPRequest) {
            self.request = request
            self.authorization = CacheRules.storedValue(of: "authorization", in: request)
            self.cookie = CacheRules.storedValue(of: "cookie", in: request)
        }

        func value(of name: String) -> String? {
            switch name {
            case "authorization": self.authorization
            case "cookie": self.cookie
            default: CacheRules.storedValue(of: name, in: self.request)
            }
        }

        /// Whether `entry` was chosen by these values (`Vary: *` never matches).
        func matches(_ entry: StoredResponse) -> Bool {
            entry.varyValues.allSatisfy { vary in vary.name != "*" && self.value(of: vary.name) == vary.value }
        }
    }

    // MARK: Storing (§3)

    /// Whether `response` to `request` may be stored, and is worth it.
    func isStorable(_ request: HTTPRequest, _ response: HTTPResponse) -> Bool {
        let code = response.status.code
        guard request.method == .get, code >= 200, code != 206, code != 304 else { return false }
        guard !CacheControl(request.headerFields).has("no-store") else { return false }
        let directives = CacheControl(response.headerFields)
        if directives.has("must-understand") {
            // §5.2.2.3: a status the cache knows lifts `no-store`; any other is not stored.
            guard Self.understoodStatuses.contains(code) else { return false }
        } else if directives.has("no-store") {
            return false
        }
        let fields = response.headerFields
        return directives.has("max-age") || fields[.expires] != nil || directives.has("public") || directives.has("private")
            || Self.heuristicStatuses.contains(code) || fields[.eTag] != nil || fields[.lastModified] != nil
    }

    /// The head as stored: hop-by-hop fields and those `Connection` lists dropped; a
    /// content coding the transport already decoded no longer claimed.
    static func storableHead(_ response: HTTPResponse, decodedContentEncoding: Bool) -> HTTPResponse {
        var listed = Self.hopByHop
        for value in response.headerFields[values: .connection] {
            for member in CacheControl.members(of: value) { listed.insert(member.lowercased()) }
        }
        var head = response
        head.headerFields = HTTPFields(response.headerFields.filter { field in
            let name = field.name.canonicalName
            if listed.contains(name) { return false }
            return !(decodedContentEncoding && (name == "content-encoding" || name == "content-length"))
        })
        return head
    }

    // MARK: Age and freshness (§4.2)

    /// How long `entry` is fresh for, from when it was generated (§4.2.1).
    func freshnessLifetime(_ entry: StoredResponse) -> Double {
        self.facts(entry).lifetime
    }

    /// What `entry`'s fields say for its freshness, from the memo or read now.
    func facts(_ entry: StoredResponse) -> EntryFacts {
        if let known = self.memo.value(entry.id, EntryTimes(entry)) { return known }
        let directives = CacheControl(entry.head.headerFields)
        let apparentAge = max(0, entry.responseTime - self.dateValue(entry))
        let responseDelay = max(0, entry.responseTime - entry.requestTime)
        let correctedAgeValue = Self.ageValue(entry.head.headerFields) + responseDelay
        let facts = EntryFacts(directives: directives, lifetime: self.readFreshnessLifetime(entry),
                               initialAge: max(apparentAge, correctedAgeValue), responseTime: entry.responseTime)
        self.memo.keep(facts, entry.id, EntryTimes(entry))
        return facts
    }

    /// §4.2.1: `max-age`, else `Expires` less `Date`, else a heuristic (§4.2.2).
    private func readFreshnessLifetime(_ entry: StoredResponse) -> Double {
        let fields = entry.head.headerFields
        switch CacheControl(fields).seconds("max-age") {
        case .value(let seconds): return seconds
        case .invalid: return 0
        case .absent: break
        }
        let expiresValues = fields[values: .expires]
        if !expiresValues.isEmpty {
            guard expiresValues.count == 1, let expires = HTTPDate.parse(expiresValues[0]) else { return 0 }
            return max(0, expires - self.dateValue(entry))
        }
        let code = entry.head.status.code
        guard Self.heuristicStatuses.contains(code) || CacheControl(fields).has("public"),
              let lastModified = fields[.lastModified].flatMap(HTTPDate.parse) else { return 0 }
        return min(max(0, self.dateValue(entry) - lastModified) * self.heuristicFraction, self.heuristicLimit)
    }

    /// The origin's `Date`, or when the response was received if it has none (or a bad one).
    func dateValue(_ entry: StoredResponse) -> Double {
        entry.head.headerFields[.date].flatMap(HTTPDate.parse) ?? entry.responseTime
    }

    /// The first `Age` value when it is a delta-seconds; any other value is ignored.
    static func ageValue(_ fields: HTTPFields) -> Double {
        guard let first = fields[values: .age].first, let member = CacheControl.members(of: first).first else { return 0 }
        return CacheControl.deltaSeconds(member) ?? 0
    }

    /// `current_age` (§4.2.3): the age the response had when it arrived (the larger of what
    /// the clocks say and what `Age` plus the response delay say — so a server clock behind
    /// or ahead of ours never makes a response younger), plus the time it spent here.
    func currentAge(_ entry: StoredResponse, now: Double) -> Double {
        self.facts(entry).currentAge(now: now)
    }

    /// Whether a stored response may answer a request without the origin, and if not, why.
    enum Usability: Equatable {
        /// Fresh for this request.
        case fresh
        /// Stale, but the request or the response allows it (`max-stale`).
        case staleAllowed(CacheStatus.StaleReason)
        /// Stale within `stale-while-revalidate`: answer, and validate in the background.
        case staleWhileRevalidate
        /// Must be validated first (stale, `no-cache`, or the request asks for younger).
        case mustValidate
    }

    /// The request's directives, `Pragma: no-cache` read as `no-cache` when it has no
    /// `Cache-Control` (RFC 9111 §5.4).
    static func requestDirectives(_ request: HTTPRequest) -> CacheControl {
        let fields = request.headerFields
        // Most requests say nothing: no list to read, no table to make.
        if fields[.cacheControl] == nil && fields[.pragma] == nil { return CacheControl([String]()) }
        if fields[values: .cacheControl].isEmpty,
           fields[values: .pragma].contains(where: { CacheControl.members(of: $0).contains { $0.lowercased() == "no-cache" } }) {
            return CacheControl(["no-cache"])
        }
        return CacheControl(fields)
    }

    /// How `entry` may answer `request` at `now` (§4.2, §5.2.1, RFC 5861).
    func usability(of entry: StoredResponse, for request: HTTPRequest, now: Double,
                   asked given: CacheControl? = nil, facts known: EntryFacts? = nil) -> Usability {
        let asked = given ?? Self.requestDirectives(request)
        let facts = known ?? self.facts(entry)
        let said = facts.directives
        if said.has("no-cache") || asked.has("no-cache") { return .mustValidate }
        let lifetime = facts.lifetime
        let age = facts.currentAge(now: now)
        switch asked.seconds("max-age") {
        case .value(let limit) where age > limit: return .mustValidate
        case .invalid: return .mustValidate
        default: break
        }
        var needed = lifetime
        switch asked.seconds("min-fresh") {
        case .value(let extra): needed -= extra
        case .invalid: return .mustValidate
        case .absent: break
        }
        if age < needed { return .fresh }
        // Fresh but short of `min-fresh`: `max-stale` does not lift that.
        if age < lifetime { return .mustValidate }
        let staleness = age - lifetime
        guard !said.has("must-revalidate") else { return .mustValidate }
        // `max-stale` bare allows any staleness; with a value that is not delta-seconds it
        // allows none (read as the safe way, as an invalid `max-age` is).
        switch asked.seconds("max-stale") {
        case .value(let allowed) where staleness <= allowed: return .staleAllowed(.requestAllowed)
        case .invalid where asked.value("max-stale") == nil: return .staleAllowed(.requestAllowed)
        default: break
        }
        if case .value(let window) = said.seconds("stale-while-revalidate"), staleness < window { return .staleWhileRevalidate }
        return .mustValidate
    }

    /// Whether `entry` may answer when the origin failed: within the response's or the
    /// request's `stale-if-error` window (RFC 5861 §4); and, when the origin could not be
    /// reached at all (`unreachable`: the connection failed or closed without an answer),
    /// however stale — RFC 9111 §4.2.4 lets a disconnected cache serve stale. Never past
    /// `must-revalidate` or `no-cache`, nor to a request that said `no-cache` or `no-store`.
    func mayServeOnError(_ entry: StoredResponse, for request: HTTPRequest, now: Double, unreachable: Bool = false) -> Bool {
        let said = CacheControl(entry.head.headerFields)
        guard !said.has("must-revalidate"), !said.has("no-cache") else { return false }
        let asked = Self.requestDirectives(request)
        guard !asked.has("no-cache"), !asked.has("no-store") else { return false }
        let staleness = self.currentAge(entry, now: now) - self.freshnessLifetime(entry)
        if staleness < 0 || unreachable { return true }
        for directives in [said, asked] {
            if case .value(let window) = directives.seconds("stale-if-error"), staleness <= window { return true }
        }
        return false
    }

    /// Whole seconds of freshness left (for `Cache-Status`'s `ttl`), negative when stale.
    func timeToLive(_ entry: StoredResponse, now: Double) -> Int {
        let facts = self.facts(entry)
        return Int((facts.lifetime - facts.currentAge(now: now)).rounded(.down))
    }
}

/// What a stored response's fields say for its freshness (RFC 9111 §4.2), read once.
struct EntryFacts: Sendable {
    /// Its `Cache-Control` directives.
    let directives: CacheControl
    /// Its freshness lifetime, in seconds.
    let lifetime: Double
    /// `corrected_initial_age` (§4.2.3).
    let initialAge: Double
    let responseTime: Double

    func currentAge(now: Double) -> Double {
        self.initialAge + max(0, now - self.responseTime)
    }
}

/// The times of a stored response, which a revalidation changes: what its facts are stamped
/// with.
struct EntryTimes: Equatable, Sendable {
    var requestTime: Double
    var responseTime: Double

    init(_ entry: StoredResponse) {
        self.requestTime = entry.requestTime
        self.responseTime = entry.responseTime
    }
}
