#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HTTPTypes
import SalvoTransport

/// What preparing a request computes that the next request from the same thread may reuse:
/// the last few heads it encoded, and the connection key of the last authority it split.
///
/// Heads, by request: a caller that sends the same request again — a load test, a poller, a
/// backend calling one endpoint — gets the bytes already encoded and checked, shared rather
/// than copied (no buffer per request). The key (``rememberedKey(scheme:authority:)``): a host
/// name over 15 bytes would otherwise cost a string allocation and a pass over its bytes on
/// every request to it.
///
/// One cache per thread, reached through a thread-specific key: no lock, and nothing shared.
/// The heads it hands out are plain arrays, safe to read from any thread.
///
/// A request matches an entry when it is the same request byte for byte: the same method,
/// scheme, authority, path and protocol, and the same fields in the same order, their names
/// spelled alike and their values the same bytes — with the same fields added by the client
/// and the same body framing. Neither `HTTPRequest`'s `==` nor `String`'s will do: the first
/// lets fields of different names change places, the second calls different bytes equal when
/// they are the same Unicode text (a path spelled with "é" or with "e" and a combining
/// accent), and either way the head sent would not be the one asked for.
///
/// What it keeps: up to four requests per thread — their fields too, credentials included —
/// until they are replaced or the thread ends, whichever client sent them; and the scheme,
/// authority and key of the last plain `host[:port]` (never one with userinfo). A thread whose
/// requests keep missing (each one new) stops keeping most of them, so that it does not
/// hold on to, and make its caller copy, requests that never come back.
final class PreparationCache {
    private struct Entry {
        var request: HTTPRequest
        var added: RequestEncoder.AddedFields
        var body: RequestBodyLength
        var head: [UInt8]
    }

    /// Heads kept per thread; a caller alternating between more requests than this encodes.
    static let capacity = 4
    /// A larger head (a huge cookie, say) is encoded each time rather than kept.
    static let maxCachedHeadSize = 8 << 10
    /// After this many misses in a row, only every this-many-th missed head is kept.
    static let missesBeforeSampling = 8

    // Thread-confined (one cache per thread): exclusivity checks would buy nothing.
    @exclusivity(unchecked) private var entries: [Entry] = []
    /// The entry the next new head replaces once the cache is full.
    @exclusivity(unchecked) private var nextVictim = 0
    @exclusivity(unchecked) private var consecutiveMisses = 0

    /// The head of `request`, from the cache or freshly encoded (and then kept).
    /// - Throws: what ``RequestEncoder`` refuses; a refused head is never kept.
    func head(for request: HTTPRequest, body: RequestBodyLength,
              adding added: RequestEncoder.AddedFields) throws(TransportError) -> [UInt8] {
        // Compared in place, through the buffer: an entry is not copied out to be looked at.
        let hit = self.entries.withUnsafeBufferPointer { entries -> [UInt8]? in
            for index in entries.indices where entries[index].body == body && entries[index].added.sameBytes(as: added)
                && (Self.sameBits(entries[index].request, request) || Self.sameFields(entries[index].request, request)) {
                return entries[index].head
            }
            return nil
        }
        if let hit {
            self.consecutiveMisses = 0
            return hit
        }
        var head: [UInt8] = []
        head.reserveCapacity(256)
        try RequestEncoder.encodeHead(request, body: body, adding: added, into: &head)
        self.consecutiveMisses &+= 1
        let keeps = self.consecutiveMisses <= Self.missesBeforeSampling
            || self.consecutiveMisses % Self.missesBeforeSampling == 0
        guard keeps, head.count <= Self.maxCachedHeadSize else { return head }
        let entry = Entry(request: request, added: added, body: body, head: head)
        if self.entries.count < Self.capacity {
            self.entries.append(entry)
        } else {
            self.entries[self.nextVictim] = entry
            self.nextVictim = (self.nextVictim + 1) % Self.capacity
        }
        return head
    }

    /// Whether `a` and `b` would be encoded alike (see the type's comment).
    static func same(_ a: HTTPRequest, _ b: HTTPRequest) -> Bool {
        // The same bits: the two share their storage (copy-on-write), so they hold the same
        // request — the usual case of a caller sending one value again.
        Self.sameBits(a, b) || Self.sameFields(a, b)
    }

    /// Whether `a` and `b` hold the same method, scheme, authority, path, protocol and fields,
    /// compared as bytes.
    private static func sameFields(_ a: HTTPRequest, _ b: HTTPRequest) -> Bool {
        guard sameBytes(a.method.rawValue, b.method.rawValue), sameBytes(a.scheme, b.scheme),
              sameBytes(a.authority, b.authority), sameBytes(a.path, b.path),
              sameBytes(a.extendedConnectProtocol, b.extendedConnectProtocol),
              a.headerFields.count == b.headerFields.count else {
            return false
        }
        for (left, right) in zip(a.headerFields, b.headerFields) {
            guard sameBytes(left.name.rawName, right.name.rawName) else { return false }
            // Raw bytes: two values that are not UTF-8 can read as the same repaired String.
            let sameValue = left.withUnsafeBytesOfValue { leftValue in
                right.withUnsafeBytesOfValue { rightValue in leftValue.elementsEqual(rightValue) }
            }
            guard sameValue else { return false }
        }
        return true
    }

    /// Whether `a` and `b` are the same bits. Read as two words where that is what a request
    /// is (two references to its storage), with no copy and no reference counted; as bytes
    /// otherwise.
    @inline(__always)
    static func sameBits(_ a: HTTPRequest, _ b: HTTPRequest) -> Bool {
        typealias Words = (UInt, UInt)
        if MemoryLayout<HTTPRequest>.size == MemoryLayout<Words>.size {
            let left = unsafeBitCast(a, to: Words.self), right = unsafeBitCast(b, to: Words.self)
            return left == right
        }
        return withUnsafeBytes(of: a) { left in
            withUnsafeBytes(of: b) { right in
                guard let l = left.baseAddress, let r = right.baseAddress else { return false }
                return memcmp(l, r, left.count) == 0
            }
        }
    }

    // MARK: One per thread

    /// Nil if the system had no thread-specific key to give: then nothing is cached.
    private static let key: pthread_key_t? = {
        var key = pthread_key_t()
        // The thread's cache is released when the thread ends.
        let created = pthread_key_create(&key) { raw in
            guard let raw else { return }
            Unmanaged<PreparationCache>.fromOpaque(raw).release()
        }
        return created == 0 ? key : nil
    }()

    /// This thread's cache; nil when none can be had.
    static var current: PreparationCache? {
        guard let key = Self.key else { return nil }
        if let raw = pthread_getspecific(key) {
            return Unmanaged<PreparationCache>.fromOpaque(raw).takeUnretainedValue()
        }
        let cache = Unmanaged.passRetained(PreparationCache())
        guard pthread_setspecific(key, cache.toOpaque()) == 0 else {
            cache.release()
            return nil
        }
        return cache.takeUnretainedValue()
    }

    // MARK: The last connection key

    /// The last plain `host[:port]` authority this thread split into a connection key, with
    /// its scheme: most callers send request after request to one host, and splitting it
    /// again costs a pass over its bytes and, for a host name longer than 15 bytes, a string
    /// allocated per request.
    private struct ResolvedKey {
        var scheme: String
        var authority: String
        var key: ConnectionKey
    }
    @exclusivity(unchecked) private var lastKey: ResolvedKey?

    /// The key split from `authority` under `scheme` last time, if these are the same bytes.
    func rememberedKey(scheme: String, authority: String) -> ConnectionKey? {
        guard let last = self.lastKey, sameBytes(last.authority, authority),
              sameBytes(last.scheme, scheme) else { return nil }
        return last.key
    }

    func remember(_ key: ConnectionKey, scheme: String, authority: String) {
        self.lastKey = ResolvedKey(scheme: scheme, authority: authority, key: key)
    }

    /// Runs `body` with this thread's cache, used without counting a reference (the thread's
    /// key keeps it alive until the thread ends); nil without one.
    @inline(__always)
    static func withCurrent<T>(_ body: (PreparationCache) -> T) -> T? {
        guard let key = Self.key else { return nil }
        if let raw = pthread_getspecific(key) {
            return Unmanaged<PreparationCache>.fromOpaque(raw)._withUnsafeGuaranteedRef(body)
        }
        return Self.current.map(body)
    }

    /// The head of `request`, through this thread's cache when there is one.
    static func head(for request: HTTPRequest, body: RequestBodyLength,
                     adding added: RequestEncoder.AddedFields) throws(TransportError) -> [UInt8] {
        let cached = Self.withCurrent { cache in
            Result { () throws(TransportError) in try cache.head(for: request, body: body, adding: added) }
        }
        if let cached { return try cached.get() }
        var head: [UInt8] = []
        try RequestEncoder.encodeHead(request, body: body, adding: added, into: &head)
        return head
    }
}

/// Whether two strings are the same bytes (not merely the same Unicode text): at once when
/// they are the same bits (one string passed again, or the same string of up to 15 bytes,
/// held inline), else byte by byte.
@inline(__always)
func sameBytes(_ a: String?, _ b: String?) -> Bool {
    switch (a, b) {
    case (nil, nil): return true
    case (let a?, let b?):
        typealias Words = (UInt, UInt)
        if MemoryLayout<String>.size == MemoryLayout<Words>.size,
           unsafeBitCast(a, to: Words.self) == unsafeBitCast(b, to: Words.self) {
            return true
        }
        return a.utf8.elementsEqual(b.utf8)
    default: return false
    }
}

extension RequestEncoder.AddedFields {
    /// Whether `other` adds the same bytes (see ``sameBytes(_:_:)``).
    func sameBytes(as other: Self) -> Bool {
        self.acceptEncoding == other.acceptEncoding && self.expectContinue == other.expectContinue
            && self.omitsHost == other.omitsHost
            && SalvoCore.sameBytes(self.userAgent, other.userAgent)
            && SalvoCore.sameBytes(self.contentType, other.contentType)
            && SalvoCore.sameBytes(self.contentEncoding, other.contentEncoding)
            && SalvoCore.sameBytes(self.absoluteFormPrefix, other.absoluteFormPrefix)
            && SalvoCore.sameBytes(self.proxyAuthorization, other.proxyAuthorization)
    }
}
