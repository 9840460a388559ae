#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HTTPTypes
import SalvoTransport

/// The last few request heads this thread encoded, by request: a caller that sends the same
/// request again — a load test, a poller, a backend calling one endpoint — gets the bytes
/// already encoded and checked, shared rather than copied (no buffer per request).
///
/// One cache per thread, reached through a thread-specific key: no lock, and nothing shared.
/// The heads it hands out are plain arrays, safe to read from any thread.
///
/// A request matches an entry when it is the same request byte for byte: the same method,
/// scheme, authority, path and protocol, and the same fields in the same order, their names
/// spelled alike and their values the same bytes — with the same fields added by the client
/// and the same body framing. Equality of `HTTPRequest` is not enough: it lets fields of
/// different names come in another order, and the head would then not be what was asked.
final class EncodedHeadCache {
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

    private var entries: [Entry] = []
    /// The entry the next new head replaces once the cache is full.
    private var nextVictim = 0

    /// The head of `request`, from the cache or freshly encoded (and then kept).
    /// - Throws: what ``RequestEncoder`` refuses; a refused head is never kept.
    func head(for request: HTTPRequest, body: RequestBodyLength,
              adding added: RequestEncoder.AddedFields) throws(HTTPClientError) -> [UInt8] {
        // Compared in place, through the buffer: an entry is not copied out to be looked at.
        let hit = self.entries.withUnsafeBufferPointer { entries -> [UInt8]? in
            for index in entries.indices where entries[index].body == body && entries[index].added == added
                && Self.same(entries[index].request, request) {
                return entries[index].head
            }
            return nil
        }
        if let hit { return hit }
        var head: [UInt8] = []
        head.reserveCapacity(256)
        try RequestEncoder.encodeHead(request, body: body, adding: added, into: &head)
        guard head.count <= Self.maxCachedHeadSize else { return head }
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
        let identical = withUnsafeBytes(of: a) { left in
            withUnsafeBytes(of: b) { right in
                guard let l = left.baseAddress, let r = right.baseAddress else { return false }
                return memcmp(l, r, left.count) == 0
            }
        }
        if identical { return true }
        guard a.method == b.method, a.scheme == b.scheme, a.authority == b.authority, a.path == b.path,
              a.extendedConnectProtocol == b.extendedConnectProtocol, a.headerFields.count == b.headerFields.count else {
            return false
        }
        for (left, right) in zip(a.headerFields, b.headerFields) {
            guard left.name.rawName == right.name.rawName else { return false }
            // Raw bytes: two values that are not UTF-8 can read as the same repaired String.
            let sameValue = left.withUnsafeBytesOfValue { leftValue in
                right.withUnsafeBytesOfValue { rightValue in leftValue.elementsEqual(rightValue) }
            }
            guard sameValue else { return false }
        }
        return true
    }

    // MARK: One per thread

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // The thread's cache is released when the thread ends.
        pthread_key_create(&key) { raw in
            guard let raw else { return }
            Unmanaged<EncodedHeadCache>.fromOpaque(raw).release()
        }
        return key
    }()

    /// This thread's cache.
    static var current: EncodedHeadCache {
        if let raw = pthread_getspecific(Self.key) {
            return Unmanaged<EncodedHeadCache>.fromOpaque(raw).takeUnretainedValue()
        }
        let cache = EncodedHeadCache()
        pthread_setspecific(Self.key, Unmanaged.passRetained(cache).toOpaque())
        return cache
    }
}
