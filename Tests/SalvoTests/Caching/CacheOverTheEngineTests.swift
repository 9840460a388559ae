import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// The cache over Salvo's engine against a real nginx, which sends `ETag` and
/// `Last-Modified` for its static files and answers conditional requests with `304`.
@Suite struct CacheOverTheEngineTests {
    static let nginx = SharedFixture { try NginxServer.launch() }

    /// The wall clock, plus an offset the test moves instead of sleeping.
    final class ShiftedClock: Sendable {
        let offset = Mutex(0.0)
        var cacheClock: CacheClock { CacheClock { Date().timeIntervalSince1970 + self.offset.withLock { $0 } } }
    }

    /// The engine follows redirects below the cache: what the last URL answered is not
    /// stored under the first URL's key (nginx's /redirect goes to /small, which has
    /// validators and would be kept by heuristic freshness).
    @Test func anAnswerReachedThroughRedirectsIsNotStoredUnderTheFirstURL() async throws {
        let nginx = try await Self.nginx.get()
        let client = try Client(baseURL: "http://127.0.0.1:\(nginx.port)", configuration: .init(cache: HTTPCache()))
        let first = try await client.send(Endpoint<Void>.get("/redirect"))
        #expect(first.status == .ok && first.redirectChain.count >= 1)
        #expect(first.cacheStatus == .miss(stored: false))
        #expect(try await client.send(Endpoint<Void>.get("/redirect")).cacheStatus == .miss(stored: false))
    }

    @Test func nginxFilesAreStoredRevalidatedWith304AndServedWhole() async throws {
        let nginx = try await Self.nginx.get()
        let clock = ShiftedClock()
        let cache = HTTPCache(options: .init(statusHeaderName: "Salvo"), clock: clock.cacheClock)
        let client = try Client(baseURL: "http://127.0.0.1:\(nginx.port)", configuration: .init(cache: cache))
        let endpoint = Endpoint<Void>.get("/64k")

        let first = try await client.send(endpoint)
        #expect(first.status == .ok && first.body.count == 65_536)
        #expect(first.cacheStatus == .miss(stored: true))
        #expect(first.headerFields[.eTag] != nil && first.headerFields[.lastModified] != nil)

        // An hour on, the heuristic freshness (a tenth of the file's age, seconds) is long gone.
        clock.offset.withLock { $0 = 3600 }
        let second = try await client.send(endpoint)
        #expect(second.cacheStatus == .revalidated, "nginx answered the conditional request with 304")
        #expect(second.status == .ok && second.body == first.body)
        #expect(second.headerFields[.cacheStatus]?.hasPrefix("Salvo; fwd=stale; fwd-status=304") == true)

        // Streamed: stored as it is read, then answered from the store.
        let streamed = try await client.stream(Endpoint<Void>.get("/1k"))
        var bytes: [UInt8] = []
        for try await chunk in streamed.body { bytes += chunk }
        #expect(streamed.cacheStatus == .miss(stored: true) && bytes.count == 1024)
        let again = try await client.send(Endpoint<Void>.get("/1k"), options: .init(cachePolicy: .returnCacheDataDontLoad))
        #expect(again.body == bytes && again.cacheStatus?.isFromCache == true)
    }
}
