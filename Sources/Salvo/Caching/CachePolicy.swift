import Foundation

/// How a call uses the client's HTTP cache: per call (``Client/CallOptions/cachePolicy``) or
/// for every call of a client (``Client/Configuration/cachePolicy``).
///
/// ```swift
/// let options = Client.CallOptions(cachePolicy: .returnCacheDataElseLoad)
/// let feed = try await client.value(GetFeed(), options: options)
/// ```
///
/// The names of Foundation's `URLRequest.CachePolicy` (as Simplicity spells them), and the
/// Fetch standard's `RequestCache` modes as aliases where they mean the same.
public enum CachePolicy: Sendable, Hashable {
    /// RFC 9111's rules: a fresh stored response answers, a stale one is validated, the
    /// request's own `Cache-Control` is honoured. The default (Fetch: `default`).
    case useProtocolCachePolicy
    /// Any stored response answers, however old; only when there is none is the origin
    /// asked, and its answer stored (Fetch: `force-cache`).
    case returnCacheDataElseLoad
    /// Any stored response answers, however old; the origin is never asked. Without one the
    /// call fails with ``ClientError/Code/notCached`` — offline mode (Fetch: `only-if-cached`).
    case returnCacheDataDontLoad
    /// The origin is asked without looking in the cache; its answer is stored (Fetch: `reload`).
    case reloadIgnoringLocalCacheData
    /// A stored response is always validated with the origin first, however fresh (Fetch:
    /// `no-cache`).
    case revalidate
    /// The cache is neither read nor written (Fetch: `no-store`).
    case noStore

    /// Fetch's `default`.
    public static let `default` = CachePolicy.useProtocolCachePolicy
    /// Fetch's `force-cache`.
    public static let forceCache = CachePolicy.returnCacheDataElseLoad
    /// Fetch's `only-if-cached`.
    public static let onlyIfCached = CachePolicy.returnCacheDataDontLoad
    /// Fetch's `reload`.
    public static let reload = CachePolicy.reloadIgnoringLocalCacheData
    /// Fetch's `no-cache`.
    public static let noCache = CachePolicy.revalidate
}

/// Where an HTTP cache gets the time: seconds since 1970. Tests pass their own, so no test
/// ever sleeps to make a response stale.
///
/// ```swift
/// let now = Mutex(1_700_000_000.0)
/// let cache = HTTPCache(clock: CacheClock { now.withLock { $0 } })
/// ```
public struct CacheClock: Sendable {
    public let now: @Sendable () -> Double

    public init(_ now: @escaping @Sendable () -> Double) {
        self.now = now
    }

    /// The system's wall clock.
    public static let system = CacheClock { Date().timeIntervalSince1970 }
}
