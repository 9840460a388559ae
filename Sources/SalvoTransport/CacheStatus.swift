/// How an HTTP cache answered a request: from what it keeps, from the origin, or both. Read
/// it as `response.cacheStatus` (nil when no cache took part); with the cache configured to,
/// it is also sent on as an RFC 9211 `Cache-Status` header field (``headerValue(cacheName:ttl:)``).
///
/// ```swift
/// let response = try await client.send(GetUser(id: 7))
/// if response.cacheStatus == .hit { print("no network used") }
/// ```
public enum CacheStatus: Sendable, Hashable, CustomStringConvertible {
    /// A fresh stored response answered; the origin was not asked.
    case hit
    /// Nothing usable was stored: the origin answered. `stored`: the cache keeps the answer
    /// (a streamed body is kept once it is read to its end).
    case miss(stored: Bool)
    /// A stored response was stale (or had to be validated); the origin confirmed it with a
    /// `304`, and the stored response, its header fields updated, answered. For a caller's
    /// own conditional request (`If-None-Match`…), the origin's `304` itself is the answer,
    /// after it updated the stored response.
    case revalidated
    /// A stored response was validated, and the origin sent a new response instead of a
    /// `304`; `stored`: the cache keeps it in place of the old one.
    case replaced(stored: Bool)
    /// A stale stored response answered, and why that was allowed.
    case stale(StaleReason)
    /// The cache was not consulted (an unsafe method, a `no-store` or reload policy, a
    /// request that cannot be answered from a cache); `stored`: it kept the answer anyway
    /// (a reload).
    case bypassed(stored: Bool)

    /// Why a stale response was served.
    public enum StaleReason: String, Sendable, Hashable {
        /// Within the response's `stale-while-revalidate` window: served at once, and
        /// revalidated in the background.
        case whileRevalidating = "stale-while-revalidate"
        /// The origin failed or answered 500, 502, 503 or 504, within `stale-if-error`.
        case originFailed = "stale-if-error"
        /// The request allowed it (`Cache-Control: max-stale`).
        case requestAllowed = "max-stale"
        /// The call's policy asked for stored data whatever its age (`.returnCacheDataElseLoad`,
        /// `.returnCacheDataDontLoad`).
        case policy = "policy"
    }

    /// Whether the caller's response came from the cache without a new body from the
    /// origin (a hit, a revalidation, a stale answer).
    public var isFromCache: Bool {
        switch self {
        case .hit, .revalidated, .stale: true
        case .miss, .replaced, .bypassed: false
        }
    }

    public var description: String { self.headerValue(cacheName: "cache") }

    /// The RFC 9211 `Cache-Status` member for this outcome: `Salvo; hit`,
    /// `Salvo; fwd=miss; stored`, `Salvo; fwd=stale; fwd-status=304`, …
    public func headerValue(cacheName: String, ttl: Int? = nil) -> String {
        var parameters: [String]
        switch self {
        case .hit: parameters = ["hit"]
        case .miss(let stored): parameters = ["fwd=miss"] + (stored ? ["stored"] : [])
        case .revalidated: parameters = ["fwd=stale", "fwd-status=304"]
        case .replaced(let stored): parameters = ["fwd=stale"] + (stored ? ["stored"] : [])
        case .stale(.originFailed): parameters = ["fwd=stale", "detail=stale-if-error"]
        case .stale(let reason): parameters = ["hit", "detail=\(reason.rawValue)"]
        case .bypassed(let stored): parameters = ["fwd=bypass"] + (stored ? ["stored"] : [])
        }
        if let ttl { parameters.append("ttl=\(ttl)") }
        return ([cacheName] + parameters).joined(separator: "; ")
    }
}
