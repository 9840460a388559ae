@testable import Salvo
import Testing

/// The in-memory store: whole-or-nothing entries, its limits, least recently used out first.
@Suite struct MemoryCacheStoreTests {
    func entry(_ id: String, key: String = "GET http://a.test/x", size: Int = 0) -> StoredResponse {
        StoredResponse(id: id, key: key, head: HTTPResponse(status: .ok), requestTime: 0, responseTime: 0, bodySize: size)
    }

    func put(_ store: MemoryCacheStore, _ entry: StoredResponse, _ body: [UInt8], replacing: [String] = []) async throws {
        let writer = try #require(await store.makeWriter(for: entry))
        try await writer.write(body)
        try await writer.commit(replacing: replacing)
    }

    @Test func anEntryIsVisibleOnlyOnceCommittedAndAnAbortedOneNever() async throws {
        let store = MemoryCacheStore()
        let writer = try #require(await store.makeWriter(for: self.entry("1")))
        try await writer.write([1, 2])
        #expect(await store.entries(for: "GET http://a.test/x").isEmpty)
        try await writer.write([3])
        try await writer.commit(replacing: [])
        let stored = await store.entries(for: "GET http://a.test/x")
        #expect(stored.map(\.id) == ["1"] && stored[0].bodySize == 3)
        #expect(try await store.body(of: stored[0])?.collect(upTo: 10) == [1, 2, 3])
        let aborted = try #require(await store.makeWriter(for: self.entry("2")))
        try await aborted.write([9])
        await aborted.abort()
        #expect(await store.entries(for: "GET http://a.test/x").map(\.id) == ["1"])
    }

    @Test func commitsReplaceUpdatesKeepTheBodyAndNewestComesFirst() async throws {
        let store = MemoryCacheStore()
        try await self.put(store, self.entry("1"), [1])
        try await self.put(store, self.entry("2"), [2])
        #expect(await store.entries(for: "GET http://a.test/x").map(\.id) == ["2", "1"])
        try await self.put(store, self.entry("3"), [3], replacing: ["1"])
        #expect(await store.entries(for: "GET http://a.test/x").map(\.id) == ["3", "2"])
        var updated = self.entry("3")
        updated.head.headerFields[.eTag] = "\"new\""
        await store.update(updated)
        let three = try #require(await store.entries(for: "GET http://a.test/x").first)
        #expect(three.head.headerFields[.eTag] == "\"new\"" && store.bytes(of: three) == [3])
        await store.remove(id: "2", key: "GET http://a.test/x")
        await store.removeAll(key: "GET http://a.test/y")
        #expect(await store.entries(for: "GET http://a.test/x").map(\.id) == ["3"])
        await store.removeAll()
        #expect(await store.entries(for: "GET http://a.test/x").isEmpty && store.size == 0)
    }

    @Test func limitsRefuseLargeBodiesAndEvictTheLeastRecentlyUsed() async throws {
        // Each entry costs its body plus 512 bytes: three of 1000 fit in 4600, a fourth does not.
        let store = MemoryCacheStore(capacity: 4600, entryLimit: 1000)
        #expect(await store.makeWriter(for: self.entry("big", size: 1001)) == nil, "a declared size past the limit")
        let writer = try #require(await store.makeWriter(for: self.entry("grows")))
        await #expect(throws: TransportError.self) { try await writer.write(Array(repeating: 0, count: 1001)) }
        let body = [UInt8](repeating: 1, count: 1000)
        for key in ["a", "b", "c"] { try await self.put(store, self.entry(key, key: key), body) }
        _ = store.bytes(of: self.entry("a", key: "a"))   // a is used: b is now the least recent
        try await self.put(store, self.entry("d", key: "d"), body)
        #expect(await store.entries(for: "b").isEmpty)
        for key in ["a", "c", "d"] { #expect(await store.entries(for: key).count == 1, "\(key)") }
        #expect(store.size == 3 * 1512)
    }

    /// Bodies being written count against the capacity too: many at once cannot hold more
    /// than the store keeps; what an abort or a commit held is given back.
    @Test func bodiesBeingWrittenAreBoundedByTheCapacity() async throws {
        let store = MemoryCacheStore(capacity: 2000, entryLimit: 1000)
        let first = try #require(await store.makeWriter(for: self.entry("one", key: "one")))
        let second = try #require(await store.makeWriter(for: self.entry("two", key: "two")))
        try await first.write(Array(repeating: 1, count: 1000))
        try await second.write(Array(repeating: 2, count: 1000))
        let third = try #require(await store.makeWriter(for: self.entry("three", key: "three")))
        await #expect(throws: TransportError.self) { try await third.write([3]) }
        await first.abort()
        let fourth = try #require(await store.makeWriter(for: self.entry("four", key: "four")))
        try await fourth.write(Array(repeating: 4, count: 500))
        try await fourth.commit(replacing: [])
        #expect(await store.entries(for: "four").count == 1)
        try await second.commit(replacing: [])
        #expect(await store.entries(for: "two").count == 1)
    }
}
