import Synchronization

/// An ``HTTPCacheStore`` in memory: bounded in bytes, least recently used entries evicted
/// first, bodies larger than a per-entry limit not kept. The default store of ``HTTPCache``.
///
/// ```swift
/// let cache = HTTPCache(store: MemoryCacheStore(capacity: 20 << 20, entryLimit: 1 << 20))
/// ```
public final class MemoryCacheStore: HTTPCacheStore {
    private struct Item {
        var entry: StoredResponse
        var body: [UInt8]
        /// Larger is more recently used.
        var lastUse: UInt64
        /// What the cache's rules read of the entry's fields, kept beside it once read.
        var facts: EntryFacts? = nil
        /// The head last served from it and its age in whole seconds: the hits of one second
        /// share it, instead of each copying the stored head to write its `Age`.
        var served: (age: Int, head: HTTPResponse)? = nil
    }

    private struct State {
        var items: [String: [Item]] = [:]
        var size = 0
        /// Bytes held by writers not yet committed: bounded by the capacity too, so that many
        /// bodies being stored at once cannot hold more than the store would keep.
        var pending = 0
        var tick: UInt64 = 0

        mutating func touch() -> UInt64 {
            self.tick += 1
            return self.tick
        }

        mutating func remove(id: String, key: String) {
            guard var list = self.items[key], let index = list.firstIndex(where: { $0.entry.id == id }) else { return }
            self.size -= Self.cost(list[index])
            list.remove(at: index)
            self.items[key] = list.isEmpty ? nil : list
        }

        /// Drops least recently used entries until `size` fits in `capacity`.
        mutating func evict(toFit capacity: Int) {
            while self.size > capacity {
                guard let oldest = self.items.values.joined().min(by: { $0.lastUse < $1.lastUse }) else { return }
                self.remove(id: oldest.entry.id, key: oldest.entry.key)
            }
        }

        /// A body's bytes, plus a rough allowance for the head.
        static func cost(_ item: Item) -> Int { item.body.count + 512 }
    }

    /// The most bytes kept in all.
    public let capacity: Int
    /// The largest body kept.
    public let entryLimit: Int
    private let state = Mutex(State())

    /// A store of at most `capacity` bytes (default 10 MiB), keeping bodies of at most
    /// `entryLimit` bytes (default: a tenth of the capacity).
    public init(capacity: Int = 10 << 20, entryLimit: Int? = nil) {
        self.capacity = capacity
        self.entryLimit = min(entryLimit ?? capacity / 10, capacity)
    }

    /// The bytes held now.
    public var size: Int { self.state.withLock { $0.size } }

    public func entries(for key: String) async -> [StoredResponse] {
        self.state.withLock { state in
            (state.items[key] ?? []).reversed().map(\.entry)
        }
    }

    public func body(of entry: StoredResponse) async -> ResponseBody? {
        self.bytes(of: entry).map { ResponseBody.bytes($0) }
    }

    /// The most recently stored entry under `key` that `matches`, with its body, marked used —
    /// a hit's one visit to the store: no list copied, one lock.
    func first(_ key: String, where matches: (StoredResponse) -> Bool)
        -> (entry: StoredResponse, body: [UInt8], facts: EntryFacts?, served: (age: Int, head: HTTPResponse)?)? {
        self.state.withLock { state in
            guard let index = state.items[key]?.lastIndex(where: { matches($0.entry) }) else { return nil }
            let use = state.touch()
            state.items[key]![index].lastUse = use
            let item = state.items[key]![index]
            return (item.entry, item.body, item.facts, item.served)
        }
    }

    /// Keeps the head served from `entry` at `age` beside it (unless its head was replaced).
    func keepServed(_ head: HTTPResponse, age: Int, for entry: StoredResponse) {
        self.state.withLock { state in
            guard let index = state.items[entry.key]?.firstIndex(where: {
                $0.entry.id == entry.id && $0.entry.responseTime == entry.responseTime && $0.entry.requestTime == entry.requestTime
            }) else { return }
            state.items[entry.key]![index].served = (age, head)
        }
    }

    /// Keeps `facts`, read from `entry`, beside it — unless its head was replaced meanwhile
    /// (a revalidation gives it new times): facts never sit beside another head than theirs.
    func keep(_ facts: EntryFacts, for entry: StoredResponse) {
        self.state.withLock { state in
            guard let index = state.items[entry.key]?.firstIndex(where: {
                $0.entry.id == entry.id && $0.entry.responseTime == entry.responseTime && $0.entry.requestTime == entry.requestTime
            }) else { return }
            state.items[entry.key]![index].facts = facts
        }
    }

    /// The body of `entry` as bytes (what ``HTTPCache`` uses for collected calls: no chunk
    /// sequence in between).
    func bytes(of entry: StoredResponse) -> [UInt8]? {
        self.state.withLock { state in
            // In place: a copy of the list out of the dictionary would copy it whole on the
            // write back (a hit's one job here is to mark the entry used).
            guard let index = state.items[entry.key]?.firstIndex(where: { $0.entry.id == entry.id }) else { return nil }
            let use = state.touch()
            state.items[entry.key]![index].lastUse = use
            return state.items[entry.key]![index].body
        }
    }

    public func makeWriter(for entry: StoredResponse) async -> (any CacheEntryWriter)? {
        guard entry.bodySize <= self.entryLimit else { return nil }
        return Writer(store: self, entry: entry)
    }

    public func update(_ entry: StoredResponse) async {
        self.state.withLock { state in
            guard var list = state.items[entry.key], let index = list.firstIndex(where: { $0.entry.id == entry.id }) else { return }
            var updated = entry
            updated.bodySize = list[index].entry.bodySize
            list[index].entry = updated
            list[index].facts = nil
            list[index].served = nil
            list[index].lastUse = state.touch()
            state.items[entry.key] = list
        }
    }

    public func remove(id: String, key: String) async {
        self.state.withLock { $0.remove(id: id, key: key) }
    }

    public func removeAll(key: String) async {
        self.state.withLock { state in
            for item in state.items[key] ?? [] { state.size -= State.cost(item) }
            state.items[key] = nil
        }
    }

    public func removeAll() async {
        self.state.withLock { $0 = State() }
    }

    fileprivate func commit(_ entry: StoredResponse, body: [UInt8], replacing: [String]) {
        self.state.withLock { state in
            for id in replacing { state.remove(id: id, key: entry.key) }
            state.remove(id: entry.id, key: entry.key)
            var entry = entry
            entry.bodySize = body.count
            let item = Item(entry: entry, body: body, lastUse: state.touch())
            state.items[entry.key, default: []].append(item)
            state.size += State.cost(item)
            state.evict(toFit: self.capacity)
        }
    }

    /// Reserves `count` bytes for a body being written; false when the bodies being written
    /// would then hold more than the capacity.
    fileprivate func reserve(_ count: Int) -> Bool {
        self.state.withLock { state in
            guard state.pending + count <= self.capacity else { return false }
            state.pending += count
            return true
        }
    }

    fileprivate func release(_ count: Int) {
        self.state.withLock { $0.pending = max(0, $0.pending - count) }
    }

    /// Collects a body, refusing past the entry limit.
    private final class Writer: CacheEntryWriter {
        private let store: MemoryCacheStore
        private let entry: StoredResponse
        private let body = Mutex<[UInt8]?>([])

        init(store: MemoryCacheStore, entry: StoredResponse) {
            self.store = store
            self.entry = entry
        }

        func write(_ bytes: [UInt8]) async throws {
            guard self.store.reserve(bytes.count) else {
                await self.abort()
                throw TransportError(.bodyTooLarge, detail: "the bodies being stored hold the store's whole capacity")
            }
            let fits = self.body.withLock { body -> Bool in
                guard var current = body else { return false }
                body = nil   // moved out, so the append below does not copy
                current.append(contentsOf: bytes)
                guard current.count <= self.store.entryLimit else { return false }
                body = current
                return true
            }
            // Counted, whatever happened: the release below gives back all that was reserved.
            self.reserved.withLock { $0 += bytes.count }
            if !fits {
                await self.abort()
                throw TransportError(.bodyTooLarge, detail: "a cached body is limited to \(self.store.entryLimit) bytes")
            }
        }

        func commit(replacing: [String]) async throws {
            defer { self.release() }
            guard let bytes = self.body.withLock({ body in defer { body = nil }; return body }) else {
                throw TransportError(.bodyTooLarge, detail: "the entry was aborted")
            }
            self.store.commit(self.entry, body: bytes, replacing: replacing)
        }

        func abort() async {
            self.body.withLock { $0 = nil }
            self.release()
        }

        /// What this writer reserved of the store's capacity.
        private let reserved = Mutex(0)

        private func release() {
            let bytes = self.reserved.withLock { reserved in defer { reserved = 0 }; return reserved }
            if bytes > 0 { self.store.release(bytes) }
        }

        deinit { self.release() }
    }
}
