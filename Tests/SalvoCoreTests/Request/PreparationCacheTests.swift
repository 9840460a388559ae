import HTTPTypes
import Testing
@testable import SalvoCore
import SalvoTransport

@Suite struct PreparationCacheTests {
    func fresh(_ request: HTTPRequest, _ body: RequestBodyLength = .none,
               _ added: RequestEncoder.AddedFields = .none) throws -> [UInt8] {
        var buffer: [UInt8] = []
        try RequestEncoder.encodeHead(request, body: body, adding: added, into: &buffer)
        return buffer
    }

    /// Whether two arrays share one buffer (a head handed out again, not encoded again).
    func shared(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in x.baseAddress == y.baseAddress } }
    }

    func request(_ path: String = "/items", fields: [(String, String)] = [("Accept", "application/json")]) -> HTTPRequest {
        var request = HTTPRequest(method: .get, scheme: "http", authority: "api.test", path: path)
        for (name, value) in fields { request.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return request
    }

    @Test func theSameRequestGetsTheSameBytesWithoutEncodingAgain() throws {
        let cache = PreparationCache()
        let request = self.request()
        let first = try cache.head(for: request, body: .none, adding: .none)
        let second = try cache.head(for: request, body: .none, adding: .none)
        #expect(first == (try self.fresh(request)))
        #expect(self.shared(first, second))
        // Built again from scratch (no storage shared): still the same request.
        let rebuilt = try cache.head(for: self.request(), body: .none, adding: .none)
        #expect(self.shared(first, rebuilt))
    }

    @Test func fieldsInAnotherOrderAreAnotherHead() throws {
        // HTTPRequest's == lets fields of different names come in any order; the bytes must not.
        let cache = PreparationCache()
        let ab = self.request(fields: [("A", "1"), ("B", "2")])
        let ba = self.request(fields: [("B", "2"), ("A", "1")])
        #expect(ab == ba)
        #expect(try cache.head(for: ab, body: .none, adding: .none) == (try self.fresh(ab)))
        #expect(try cache.head(for: ba, body: .none, adding: .none) == (try self.fresh(ba)))
        #expect(try self.fresh(ab) != (try self.fresh(ba)))
    }

    @Test func aNameSpelledInAnotherCaseIsAnotherHead() throws {
        let cache = PreparationCache()
        let upper = self.request(fields: [("X-Trace", "1")])
        let lower = self.request(fields: [("x-trace", "1")])
        #expect(String(decoding: try cache.head(for: upper, body: .none, adding: .none), as: UTF8.self).contains("X-Trace: 1"))
        #expect(String(decoding: try cache.head(for: lower, body: .none, adding: .none), as: UTF8.self).contains("x-trace: 1"))
    }

    @Test func valuesAreComparedAsBytes() throws {
        // Two values that are not UTF-8 read as the same repaired String ("\u{FFFD}").
        let cache = PreparationCache()
        func withValue(_ byte: UInt8) -> HTTPRequest {
            var request = self.request(fields: [])
            request.headerFields.append(HTTPField(name: HTTPField.Name("X-Raw")!, lenientValue: [0x61, byte] as [UInt8]))
            return request
        }
        let ff = withValue(0xFF), fe = withValue(0xFE)
        #expect(ff.headerFields[0].value == fe.headerFields[0].value)
        #expect(try cache.head(for: ff, body: .none, adding: .none) == (try self.fresh(ff)))
        #expect(try cache.head(for: fe, body: .none, adding: .none) == (try self.fresh(fe)))
    }

    @Test func addedFieldsAndFramingAreOfTheKey() throws {
        let cache = PreparationCache()
        var post = self.request()
        post.method = .post
        var agent = RequestEncoder.AddedFields()
        agent.userAgent = "probe/1"
        var compressed = agent
        compressed.acceptEncoding = true
        for (body, added) in [(RequestBodyLength.none, RequestEncoder.AddedFields.none), (.known(3), .none), (.unknown, .none),
                              (.known(3), agent), (.known(3), compressed), (.known(4), compressed)] {
            #expect(try cache.head(for: post, body: body, adding: added) == (try self.fresh(post, body, added)), "\(body)")
        }
    }

    @Test func theOldestHeadMakesRoomAndEveryHeadStaysRight() throws {
        let cache = PreparationCache()
        let requests = (0...PreparationCache.capacity).map { self.request("/item/\($0)") }
        let first = try cache.head(for: requests[0], body: .none, adding: .none)
        for request in requests.dropFirst() {
            #expect(try cache.head(for: request, body: .none, adding: .none) == (try self.fresh(request)))
        }
        // The first was replaced by the last: encoded again, the same bytes.
        let again = try cache.head(for: requests[0], body: .none, adding: .none)
        #expect(again == first)
        #expect(!self.shared(again, first))
        let last = try cache.head(for: requests[PreparationCache.capacity], body: .none, adding: .none)
        #expect(self.shared(last, try cache.head(for: requests[PreparationCache.capacity], body: .none, adding: .none)))
    }

    @Test func aRefusedHeadIsRefusedEveryTime() throws {
        let cache = PreparationCache()
        var request = self.request()
        request.path = "/a b"
        for _ in 0..<2 {
            #expect(throws: TransportError.self) { try cache.head(for: request, body: .none, adding: .none) }
        }
    }

    @Test func aHugeHeadIsNotKept() throws {
        let cache = PreparationCache()
        let request = self.request(fields: [("Cookie", String(repeating: "c", count: PreparationCache.maxCachedHeadSize))])
        let first = try cache.head(for: request, body: .none, adding: .none)
        let second = try cache.head(for: request, body: .none, adding: .none)
        #expect(first == second)
        #expect(!self.shared(first, second))
    }

    @Test func eachThreadHasItsOwn() async throws {
        let here = ObjectIdentifier(try #require(PreparationCache.current))
        #expect(ObjectIdentifier(try #require(PreparationCache.current)) == here)
        let group = try EventLoopGroup(numberOfThreads: 1)
        defer { group.shutdown() }
        let there = await withCheckedContinuation { continuation in
            group.next().execute { continuation.resume(returning: PreparationCache.current.map(ObjectIdentifier.init)) }
        }
        #expect(there != nil && there != here)
    }

    /// Strings are compared as bytes: the same Unicode text in other bytes is another head
    /// (the encoder percent-encodes a path's bytes, and writes the added fields as they are).
    @Test func theSameTextInOtherBytesIsAnotherHead() throws {
        let cache = PreparationCache()
        for (first, second) in [("/caf\u{E9}", "/cafe\u{301}"), ("/a;b", "/a\u{37E}b"), ("/K", "/\u{212A}")] {
            #expect(first == second)
            let a = self.request(first), b = self.request(second)
            #expect(try cache.head(for: a, body: .none, adding: .none) == (try self.fresh(a)))
            #expect(try cache.head(for: b, body: .none, adding: .none) == (try self.fresh(b)), "\(second)")
        }
        var composed = RequestEncoder.AddedFields(), decomposed = RequestEncoder.AddedFields()
        composed.userAgent = "caf\u{E9}"
        decomposed.userAgent = "cafe\u{301}"
        let plain = self.request()
        #expect(try cache.head(for: plain, body: .none, adding: composed) == (try self.fresh(plain, .none, composed)))
        #expect(try cache.head(for: plain, body: .none, adding: decomposed) == (try self.fresh(plain, .none, decomposed)))
    }

    @Test func methodAndAuthorityAreOfTheKey() throws {
        // (The scheme is too, but an http and an https request have the same head: it shows
        // only through a forwarding proxy's absolute form, an added field.)
        let cache = PreparationCache()
        var variants = [self.request()]
        var delete = self.request(); delete.method = .delete; variants.append(delete)
        var other = self.request(); other.authority = "api.test:8080"; variants.append(other)
        for request in variants + variants {
            #expect(try cache.head(for: request, body: .none, adding: .none) == (try self.fresh(request)))
        }
    }

    /// `AddedFields.sameBytes(as:)` lists the fields it compares by hand: one added to the
    /// struct and left out there would let a head with other added fields be reused.
    @Test func everyAddedFieldIsCompared() {
        #expect(Mirror(reflecting: RequestEncoder.AddedFields()).children.count == 8,
                "a field was added to AddedFields: compare it in sameBytes(as:), then update this count")
        var base = RequestEncoder.AddedFields()
        base.userAgent = "a"
        var changes: [(inout RequestEncoder.AddedFields) -> Void] = [
            { $0.userAgent = "b" }, { $0.acceptEncoding = true }, { $0.contentType = "t" }, { $0.contentEncoding = "gzip" },
            { $0.expectContinue = true }, { $0.omitsHost = true }, { $0.absoluteFormPrefix = "http://h" },
            { $0.proxyAuthorization = "Basic x" },
        ]
        #expect(base.sameBytes(as: base))
        for index in changes.indices {
            var changed = base
            changes[index](&changed)
            #expect(!base.sameBytes(as: changed) && !changed.sameBytes(as: base), "field \(index)")
        }
        changes.removeAll()
    }

    /// A thread whose requests never come back keeps few of them; a hit makes it keep again.
    @Test func aThreadThatKeepsMissingKeepsFewHeads() throws {
        let cache = PreparationCache()
        let requests = (0...PreparationCache.missesBeforeSampling + 1).map { self.request("/once/\($0)") }
        var heads: [[UInt8]] = []
        for request in requests.prefix(PreparationCache.missesBeforeSampling) {
            heads.append(try cache.head(for: request, body: .none, adding: .none))
        }
        // Past the misses allowed in a row, a new head is encoded but not kept.
        let past = requests[PreparationCache.missesBeforeSampling]
        let once = try cache.head(for: past, body: .none, adding: .none)
        let twice = try cache.head(for: past, body: .none, adding: .none)
        #expect(once == twice && !self.shared(once, twice))
        // The last one kept is still there; the hit makes the cache keep new heads again.
        let kept = requests[PreparationCache.missesBeforeSampling - 1]
        #expect(self.shared(try cache.head(for: kept, body: .none, adding: .none), heads[heads.count - 1]))
        let next = requests[PreparationCache.missesBeforeSampling + 1]
        let first = try cache.head(for: next, body: .none, adding: .none)
        #expect(self.shared(first, try cache.head(for: next, body: .none, adding: .none)))
    }
}
