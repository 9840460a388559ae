import Synchronization

/// A private HTTP cache (RFC 9111) for a client: the rules in one place, a store for the
/// entries (``MemoryCacheStore`` by default, or a disk store), and a clock.
///
/// Give it to a client, where it runs after your middleware (so it sees requests as they
/// go out, authorization included) and every call can choose a ``CachePolicy``:
///
/// ```swift
/// let cache = HTTPCache(store: MemoryCacheStore(capacity: 50 << 20))
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(cache: cache))
/// let user = try await client.send(GetUser(id: 7))
/// print(user.cacheStatus)   // .miss(stored: true), then .hit while it is fresh
/// ```
///
/// or as a middleware where you want it in a chain (``CacheMiddleware``). What it does:
/// stores `GET` responses that may be stored; answers from a fresh one with an `Age`;
/// validates a stale one (`If-None-Match`, `If-Modified-Since`) and answers a `304` with the
/// stored response, updated; chooses among variants by `Vary`; serves stale within
/// `stale-while-revalidate` (validating once in the background) and `stale-if-error`;
/// answers a caller's own conditional request with a `304` when a fresh entry satisfies it;
/// collapses concurrent misses for a key into one request; and drops what an unsafe request
/// (`POST`, `PUT`, `PATCH`, `DELETE`, …) changed. Every response says how it was served
/// (`CacheStatus`), and with ``Options/statusHeaderName`` also in a `Cache-Status` field.
public final class HTTPCache: Sendable {
    /// How the cache behaves.
    public struct Options: Sendable {
        /// The name the cache gives itself in an RFC 9211 `Cache-Status` field added to
        /// every response it handles (`Salvo; hit`); nil (the default) adds none.
        public var statusHeaderName: String?
        /// Freshness of a response without explicit freshness: this fraction of the time
        /// since its `Last-Modified` (RFC 9111 §4.2.2; 10%)…
        public var heuristicFraction: Double
        /// …and at most this long (one day).
        public var heuristicLimit: Duration
        /// Whether concurrent misses for one key wait for one request (yes).
        public var collapsesMisses: Bool
        /// Whether a response to a request with `Authorization` or `Cookie` is served only to
        /// requests with the same values (yes). A private cache may serve it to anyone, but
        /// one client in a server often calls on behalf of many users, each with their own
        /// token: with this on, one user's answer never reaches another (a response to a
        /// request without credentials is for anyone). Turn it off only when every request
        /// of the client speaks for the same user.
        public var separatesCredentials: Bool

        /// How many variants of one URL are kept (with credentials kept apart, one per user
        /// who asked): past it, the least recently stored go (64).
        public var maxVariantsPerKey: Int

        public init(statusHeaderName: String? = nil, heuristicFraction: Double = 0.1, heuristicLimit: Duration = .seconds(86_400),
                    collapsesMisses: Bool = true, separatesCredentials: Bool = true, maxVariantsPerKey: Int = 64) {
            self.maxVariantsPerKey = max(1, maxVariantsPerKey)
            self.statusHeaderName = statusHeaderName
            self.heuristicFraction = heuristicFraction
            self.heuristicLimit = heuristicLimit
            self.collapsesMisses = collapsesMisses
            self.separatesCredentials = separatesCredentials
        }
    }

    /// Where the entries are kept.
    public let store: any HTTPCacheStore
    /// The store when it is a ``MemoryCacheStore`` (its hits take a shorter way), found once.
    let memory: MemoryCacheStore?
    public let options: Options
    let clock: CacheClock
    let rules: CacheRules
    let flights = CacheFlights()
    /// Background revalidations under way, one per key at most.
    private let background = Mutex<[String: Task<Void, Never>]>([:])
    private let serial = Atomic<UInt64>(0)
    /// When each key was last invalidated: a response whose request went out before that is
    /// not stored (it may predate the change that invalidated the key).
    private let invalidations = Mutex<[String: Double]>([:])

    /// A cache over `store` (in memory by default), timed by `clock` (the system's by default).
    public init(store: any HTTPCacheStore = MemoryCacheStore(), options: Options = Options(), clock: CacheClock = .system) {
        self.store = store
        self.memory = store as? MemoryCacheStore
        self.options = options
        self.clock = clock
        let limit = options.heuristicLimit.components
        self.rules = CacheRules(heuristicFraction: options.heuristicFraction,
                                heuristicLimit: Double(limit.seconds) + Double(limit.attoseconds) / 1e18)
    }

    /// A new entry id: unique within this process and across runs (a disk store keeps ids).
    func makeID() -> String {
        let serial = self.serial.wrappingAdd(1, ordering: .relaxed).newValue
        let now = self.clock.now()
        let milliseconds = now.isFinite && now > 0 ? UInt64(min(now * 1000, 1e15)) : 0
        return "\(milliseconds)-\(serial)-\(UInt32.random(in: 0...UInt32.max))"
    }

    // MARK: Invalidation

    /// Removes what is stored under `key`, and remembers when: a request already under way
    /// (sent before the change that invalidated the key) does not bring it back.
    func invalidate(_ key: String) async {
        let now = self.clock.now()
        self.invalidations.withLock { invalidations in
            if invalidations.count >= 4096 {
                // Only the recent ones matter: the newest half is kept (and, once in a while,
                // the sorting this takes is all it costs).
                let kept = invalidations.sorted { $0.value > $1.value }.prefix(2048)
                invalidations = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
            }
            invalidations[key] = now
        }
        await self.store.removeAll(key: key)
    }

    /// Whether `key` (or everything) was invalidated at or after `requestTime`.
    func wasInvalidated(_ key: String, since requestTime: Double) -> Bool {
        self.invalidations.withLock { invalidations in
            [invalidations[key], invalidations[Self.everything]].contains { $0.map { $0 >= requestTime } ?? false }
        }
    }

    /// The record of ``removeAll()`` among the keys' (no key starts with a space).
    private static let everything = " everything"

    // MARK: Background revalidation

    /// Runs `work` unless a background revalidation of `key` is already under way.
    func revalidateInBackground(_ key: String, _ work: @escaping @Sendable () async -> Void) {
        self.background.withLock { background in
            guard background[key] == nil else { return }
            // The task's own removal takes the lock too, so it cannot run before this insertion.
            background[key] = Task {
                await work()
                self.background.withLock { _ = $0.removeValue(forKey: key) }
            }
        }
    }

    /// Waits for the background revalidations under way (`stale-while-revalidate`) to end:
    /// for tests, and before a program exits.
    public func waitForBackgroundRevalidations() async {
        while let task = self.background.withLock({ $0.values.first }) {
            await task.value
        }
    }

    // MARK: Operations by URL

    /// Stores `body` as the response for `GET url` (status 200 unless given; `headerFields`
    /// as the response's), replacing what is stored for it; false when the store will not
    /// take it.
    ///
    /// ```swift
    /// await cache.store(Array("{\"id\":7}".utf8), headerFields: [.contentType: "application/json", .cacheControl: "max-age=60"],
    ///                   for: "https://api.example.com/users/7")
    /// ```
    @discardableResult
    public func store(_ body: [UInt8], status: HTTPResponse.Status = .ok, headerFields: HTTPFields = [:], for url: String) async -> Bool {
        let now = self.clock.now()
        var fields = headerFields
        if fields[.date] == nil { fields[.date] = HTTPDate.format(now) }
        let key = CacheRules.key(forURL: url)
        let entry = StoredResponse(id: self.makeID(), key: key, head: HTTPResponse(status: status, headerFields: fields),
                                   requestTime: now, responseTime: now, bodySize: body.count)
        guard let writer = await self.store.makeWriter(for: entry) else { return false }
        do {
            try await writer.write(body)
            try await writer.commit(replacing: await self.store.entries(for: key).map(\.id))
            return true
        } catch {
            await writer.abort()
            return false
        }
    }

    /// The response stored for `GET url` most recently, whatever its age (nil: none).
    public func cachedResponse(for url: String) async -> CachedResponse? {
        let key = CacheRules.key(forURL: url)
        for entry in await self.store.entries(for: key) {
            guard let body = await self.store.body(of: entry), let bytes = try? await body.collect(upTo: Int.max) else { continue }
            return CachedResponse(head: entry.head, body: bytes, storedAt: entry.responseTime)
        }
        return nil
    }

    /// Removes what is stored for `GET url` (every variant).
    public func removeCachedResponse(for url: String) async {
        await self.invalidate(CacheRules.key(forURL: url))
    }

    /// Removes everything stored.
    public func removeAll() async {
        let now = self.clock.now()
        self.invalidations.withLock { $0 = [Self.everything: now] }
        await self.store.removeAll()
    }
}

/// A response as a cache keeps it, read back by URL (``HTTPCache/cachedResponse(for:)``).
public struct CachedResponse: Sendable {
    public var head: HTTPResponse
    public var body: [UInt8]
    /// When it was received (or last validated), in seconds since 1970.
    public var storedAt: Double
}
