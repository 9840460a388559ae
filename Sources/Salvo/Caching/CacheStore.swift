import HTTPTypes
import SalvoTransport

/// A response as an HTTP cache keeps it, without its body: what the cache's rules need to
/// decide whether it may answer a request, and the request header values it was chosen by.
///
/// Stores keep these as they are given and hand them back; they never interpret them. The
/// cache's rules (RFC 9111) live in one place above the stores.
public struct StoredResponse: Sendable, Hashable, Codable {
    /// Identifies the entry within its store (a new one for every response stored).
    public var id: String
    /// The primary key: the URL of the `GET` it answered (`https://host/path?query`).
    public var key: String
    /// The response head as received (merged with a 304's fields after a revalidation).
    public var head: HTTPResponse
    /// The values the request had for each name the response's `Vary` lists (lower-case
    /// names, in the order listed; nil for a field the request did not have). Empty when
    /// the response has no `Vary`.
    public var varyValues: [VaryValue]
    /// When the request that got this response was sent (RFC 9111's `request_time`), in
    /// seconds since 1970.
    public var requestTime: Double
    /// When the response was received (`response_time`), in seconds since 1970.
    public var responseTime: Double
    /// The body's size in bytes (as delivered: after content decoding).
    public var bodySize: Int

    public struct VaryValue: Sendable, Hashable, Codable {
        public var name: String
        public var value: String?

        public init(name: String, value: String?) {
            self.name = name
            self.value = value
        }
    }

    public init(id: String, key: String, head: HTTPResponse, varyValues: [VaryValue] = [],
                requestTime: Double, responseTime: Double, bodySize: Int) {
        self.id = id
        self.key = key
        self.head = head
        self.varyValues = varyValues
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.bodySize = bodySize
    }
}

/// Where an HTTP cache keeps its entries: in memory (``MemoryCacheStore``) or on disk
/// (``DiskCacheStore``), or a store of your own.
///
/// A key holds any number of entries (a response's variants, chosen by `Vary`). A body is
/// written as it arrives and becomes visible only when committed, whole; a reader sees an
/// entry whole or not at all. A store may drop any entry at any time to stay within its
/// capacity (least recently used first); the cache then goes to the network.
public protocol HTTPCacheStore: Sendable {
    /// The entries under `key`, most recently stored first.
    func entries(for key: String) async -> [StoredResponse]

    /// The body of `entry`, read as it is consumed; nil when the entry is gone (removed, or
    /// found damaged — a damaged entry is removed as it is found).
    func body(of entry: StoredResponse) async -> ResponseBody?

    /// Starts storing `entry`'s body; nil when the store will not take it (larger than its
    /// per-entry limit, or than its capacity). Nothing is visible until the writer commits.
    func makeWriter(for entry: StoredResponse) async -> (any CacheEntryWriter)?

    /// Replaces the stored head of `entry` (matched by ``StoredResponse/id``) and its times,
    /// keeping its body: a revalidation's merge. No effect when it is gone.
    func update(_ entry: StoredResponse) async

    /// Removes the entry with `id` under `key`.
    func remove(id: String, key: String) async

    /// Removes every entry under `key`.
    func removeAll(key: String) async

    /// Removes everything.
    func removeAll() async
}

/// A body on its way into a store.
public protocol CacheEntryWriter: Sendable {
    /// Appends `bytes`; throws when the entry cannot be kept (past the per-entry limit, a
    /// disk error) — the writer is then aborted.
    func write(_ bytes: [UInt8]) async throws
    /// Makes the entry visible, whole, with its body as written; entries under the same key
    /// listed in `replacing` (by id) are removed in the same step.
    func commit(replacing: [String]) async throws
    /// Drops what was written; nothing becomes visible.
    func abort() async
}
