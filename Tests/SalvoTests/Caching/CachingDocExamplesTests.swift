import Foundation
import Salvo
import Synchronization
import Testing

// The examples of docs/typed-layer.md's "Caching" section, compiled and run against a mock.

private struct Subscriptions: Codable, Sendable, Equatable {
    var names: [String]
}

private struct GetSubscriptions: Request {
    typealias SuccessResponseBody = Subscriptions
    var path: String { "/subscriptions" }
}

@Suite struct CachingDocExamplesTests {
    @Test func policiesManualControlAndPlacementAsTheGuideShowsThem() async throws {
        let mock = MockTransport()
        mock.on(.get, "/subscriptions", reply: try .json(Subscriptions(names: ["origin"])))
        let now = Mutex(1_700_000_000.0)
        let cache = HTTPCache(clock: CacheClock { now.withLock { $0 } })
        let client = try Client(baseURL: "https://api.example.com", transport: mock, configuration: .init(cache: cache))

        let subscriptions = Subscriptions(names: ["news"])
        try await client.setCachedResponse(subscriptions, for: GetSubscriptions())
        #expect(try await client.cachedResponse(for: GetSubscriptions()) == subscriptions)
        let feed = try await client.value(GetSubscriptions(), options: .init(cachePolicy: .returnCacheDataElseLoad))
        #expect(feed == subscriptions && mock.requests.isEmpty)
        #expect(try await client.value(GetSubscriptions()) == Subscriptions(names: ["origin"]),
                "set without maxAge: the protocol's rules go to the origin")
        try await client.setCachedResponse(subscriptions, for: GetSubscriptions(), maxAge: .seconds(60))
        #expect(try await client.value(GetSubscriptions()) == subscriptions)
        now.withLock { $0 += 61 }
        #expect(try await client.send(GetSubscriptions()).cacheStatus == .replaced(stored: true), "stale: the origin answered anew")
        try await client.removeCachedResponse(for: GetSubscriptions())
        await client.clearNetworkCache()
        #expect(try await client.cachedResponse(for: GetSubscriptions()) == nil)

        let auth = RequestModifier { request in request.head.headerFields[.authorization] = "Bearer t" }
        let caching = CacheMiddleware(cache: HTTPCache())
        let placed = try Client(baseURL: "https://api.example.com", transport: mock, configuration: .init(middleware: [auth, caching]))
        _ = try await placed.send(GetSubscriptions())
        #expect(mock.requests.last?.headerFields[.authorization] == "Bearer t")
        #expect(await caching.cachedResponse(for: "https://api.example.com/subscriptions") != nil)
    }

    /// The guide's disk store, with a directory of the test's own.
    @Test func theDiskStoreAsTheGuideShowsIt() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-guide-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mock = MockTransport()
        mock.on(.get, "/subscriptions", reply: .init(headerFields: [.cacheControl: "max-age=60"], body: Array("{\"names\":[\"a\"]}".utf8)))
        let cache = HTTPCache(store: try DiskCacheStore(directory: directory, capacity: 512 << 20))
        let client = try Client(baseURL: "https://api.example.com", transport: mock, configuration: .init(cache: cache))
        _ = try await client.send(GetSubscriptions())
        #expect(try await client.send(GetSubscriptions()).cacheStatus == .hit)
        #expect(mock.requests.count == 1)
        // Removed, then stored by hand at once: it is there.
        try await client.removeCachedResponse(for: GetSubscriptions())
        try await client.setCachedResponse(Subscriptions(names: ["mine"]), for: GetSubscriptions(), maxAge: .seconds(60))
        #expect(try await client.cachedResponse(for: GetSubscriptions()) == Subscriptions(names: ["mine"]))
    }
}
