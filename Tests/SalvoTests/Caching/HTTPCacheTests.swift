@testable import Salvo
import Synchronization
import Testing

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let seconds = Mutex(1_700_000_000.0)
    var now: Double { self.seconds.withLock { $0 } }
    func advance(_ by: Double) { self.seconds.withLock { $0 += by } }
    var cacheClock: CacheClock { CacheClock { self.now } }
    func date(_ offset: Double = 0) -> String { HTTPDate.format(self.now + offset) }
}

/// The cache through a client and `MockTransport`, counting what reaches the origin.
@Suite struct HTTPCacheTests {
    let clock = TestClock()
    let mock = MockTransport()

    func client(policy: CachePolicy = .useProtocolCachePolicy, header: Bool = true, store: any HTTPCacheStore = MemoryCacheStore(),
                middleware: [any Middleware] = []) throws -> (Client, HTTPCache) {
        let cache = HTTPCache(store: store, options: .init(statusHeaderName: header ? "Salvo" : nil), clock: self.clock.cacheClock)
        let client = try Client(baseURL: "http://api.test", transport: self.mock,
                                configuration: .init(middleware: middleware, cache: cache, cachePolicy: policy))
        return (client, cache)
    }

    func get(_ path: String = "/r", _ fields: HTTPFields = [:]) -> Endpoint<String> {
        Endpoint<String>(method: .get, path: path, headers: fields)
    }

    func requests(_ path: String = "/r") -> Int { self.mock.requests.filter { $0.path == path }.count }

    @Test func aFreshResponseIsServedWithoutTheOriginAndWithAnAge() async throws {
        self.mock.on(.get, "/r", reply: .init(headerFields: [.cacheControl: "max-age=100", .date: self.clock.date()], body: Array("one".utf8)))
        let (client, _) = try self.client()
        let first = try await client.send(self.get())
        #expect(first.cacheStatus == .miss(stored: true) && first.text == "one")
        #expect(first.headerFields[.cacheStatus] == "Salvo; fwd=miss; stored; ttl=100")
        self.clock.advance(30)
        let second = try await client.send(self.get())
        #expect(second.cacheStatus == .hit && second.text == "one" && second.headerFields[.age] == "30")
        #expect(second.headerFields[.cacheStatus] == "Salvo; hit; ttl=70")
        #expect(self.requests() == 1)
        self.clock.advance(80)
        _ = try await client.send(self.get())
        #expect(self.requests() == 2, "stale without a validator: fetched again")
    }

    @Test func aStaleResponseIsRevalidatedAndThe304ReachesTheCallerAsTheStored200() async throws {
        let etag = "\"v1\""
        self.mock.on(.get, "/r") { request in
            if request.headerFields[.ifNoneMatch] == etag {
                return .init(status: .notModified, headerFields: [.eTag: etag, .cacheControl: "max-age=50", HTTPField.Name("X-New")!: "yes"])
            }
            return .init(headerFields: [.eTag: etag, .cacheControl: "max-age=10", .contentType: "text/plain", .contentLength: "4"],
                         body: Array("body".utf8))
        }
        let (client, _) = try self.client()
        _ = try await client.send(self.get())
        self.clock.advance(20)
        let revalidated = try await client.send(self.get())
        #expect(revalidated.status == .ok && revalidated.text == "body" && revalidated.cacheStatus == .revalidated)
        #expect(revalidated.headerFields[HTTPField.Name("X-New")!] == "yes" && revalidated.headerFields[.contentLength] == "4")
        #expect(self.mock.requests.last?.headerFields[.ifNoneMatch] == etag)
        self.clock.advance(40)
        #expect(try await client.send(self.get()).cacheStatus == .hit, "the 304's max-age now applies")
        #expect(self.requests() == 2)
    }

    @Test func aNewResponseToAValidationReplacesTheStoredOne() async throws {
        let version = Mutex(1)
        self.mock.on(.get, "/r") { _ in
            let v = version.withLock { $0 }
            return .init(headerFields: [.eTag: "\"\(v)\"", .cacheControl: "max-age=10"], body: Array("v\(v)".utf8))
        }
        let (client, cache) = try self.client()
        _ = try await client.send(self.get())
        version.withLock { $0 = 2 }
        self.clock.advance(20)
        let replaced = try await client.send(self.get())
        #expect(replaced.text == "v2" && replaced.cacheStatus == .replaced(stored: true))
        #expect(await cache.store.entries(for: "http://api.test/r").count == 1)
        #expect(try await client.send(self.get()).text == "v2")
    }

    @Test func varyKeepsOneVariantPerValueAndStarIsNeverReused() async throws {
        self.mock.on(.get, "/r") { request in
            .init(headerFields: [.cacheControl: "max-age=100", .vary: "Accept-Language"],
                  body: Array((request.headerFields[.acceptLanguage] ?? "none").utf8))
        }
        self.mock.on(.get, "/star", reply: .init(headerFields: [.cacheControl: "max-age=100", .vary: "*"]))
        let (client, _) = try self.client()
        for language in ["en", "fr", "en", "fr"] {
            #expect(try await client.send(self.get("/r", [.acceptLanguage: language])).text == language)
        }
        #expect(self.requests() == 2)
        _ = try await client.send(self.get("/star"))
        _ = try await client.send(self.get("/star"))
        #expect(self.requests("/star") == 2)
    }

    /// One client calling for several users: a response is served only to requests with the
    /// same credentials, unless the cache is told every request speaks for one user.
    @Test func credentialsSeparateWhatIsServed() async throws {
        self.mock.on(.get, "/me") { request in
            .init(headerFields: [.cacheControl: "private, max-age=100"],
                  body: Array((request.headerFields[.authorization] ?? request.headerFields[.cookie] ?? "anonymous").utf8))
        }
        let (client, _) = try self.client()
        for (token, expected) in [("Bearer alice", "Bearer alice"), ("Bearer bob", "Bearer bob"), ("Bearer alice", "Bearer alice")] {
            #expect(try await client.send(self.get("/me", [.authorization: token])).text == expected)
        }
        #expect(try await client.send(self.get("/me", [.cookie: "session=carol"])).text == "session=carol")
        #expect(try await client.send(self.get("/me")).text == "anonymous")
        #expect(self.requests("/me") == 4, "alice once, bob, carol, and no credentials each their own")
        // What answered a request without credentials is for requests without them: a user
        // who signs in gets their own answer, not the signed-out one.
        self.mock.on(.get, "/public", reply: .init(headerFields: [.cacheControl: "max-age=100"], body: Array("hi".utf8)))
        _ = try await client.send(self.get("/public"))
        #expect(try await client.send(self.get("/public")).cacheStatus == .hit)
        #expect(try await client.send(self.get("/public", [.authorization: "Bearer alice"])).cacheStatus == .miss(stored: true))

        let shared = HTTPCache(options: .init(separatesCredentials: false), clock: self.clock.cacheClock)
        let oneUser = try Client(baseURL: "http://api.test", transport: self.mock, configuration: .init(cache: shared))
        _ = try await oneUser.send(self.get("/me", [.authorization: "Bearer alice"]))
        #expect(try await oneUser.send(self.get("/me", [.authorization: "Bearer renewed"])).text == "Bearer alice")
        #expect(self.requests("/me") == 5)
    }

    @Test func unsafeMethodsInvalidateAndNoStoreIsNeverStored() async throws {
        self.mock.on(.get, "/r", reply: .init(headerFields: [.cacheControl: "max-age=100"]))
        self.mock.on(.post, "/r", reply: .init(status: .created, headerFields: [.location: "/other"]))
        self.mock.on(.get, "/secret", reply: .init(headerFields: [.cacheControl: "max-age=100, no-store", .eTag: "\"s\""]))
        let (client, _) = try self.client()
        _ = try await client.send(self.get())
        _ = try await client.send(self.get())
        #expect(self.requests() == 1)
        let post = try await client.send(Endpoint<String>(method: .post, path: "/r"))
        #expect(post.cacheStatus == .bypassed(stored: false))
        _ = try await client.send(self.get())
        #expect(self.requests() == 3, "the POST made the stored GET go")
        _ = try await client.send(self.get("/secret"))
        _ = try await client.send(self.get("/secret"))
        #expect(self.requests("/secret") == 2)
    }

    @Test func policiesChooseBetweenStoreAndNetwork() async throws {
        self.mock.on(.get, "/r", reply: .init(headerFields: [.cacheControl: "max-age=10"], body: Array("x".utf8)))
        let (client, _) = try self.client()
        do {
            _ = try await client.send(self.get(), options: .init(cachePolicy: .returnCacheDataDontLoad))
            Issue.record("an offline miss must fail")
        } catch {
            #expect(error.code == .notCached)
        }
        #expect(self.requests() == 0)
        _ = try await client.send(self.get())
        self.clock.advance(1000)
        let forced = try await client.send(self.get(), options: .init(cachePolicy: .returnCacheDataElseLoad))
        #expect(forced.cacheStatus == .stale(.policy) && forced.text == "x")
        #expect(try await client.send(self.get(), options: .init(cachePolicy: .onlyIfCached)).cacheStatus == .stale(.policy))
        #expect(self.requests() == 1)
        let reload = try await client.send(self.get(), options: .init(cachePolicy: .reloadIgnoringLocalCacheData))
        #expect(reload.cacheStatus == .bypassed(stored: true) && self.requests() == 2)
        #expect(try await client.send(self.get()).cacheStatus == .hit, "the reload was stored")
        _ = try await client.send(self.get(), options: .init(cachePolicy: .noStore))
        _ = try await client.send(self.get(), options: .init(cachePolicy: .noCache))
        #expect(self.requests() == 4)
    }

    @Test func onlyIfCachedWithNothingStoredIs504() async throws {
        let (client, _) = try self.client()
        let response = try await client.send(self.get("/r", [.cacheControl: "only-if-cached"]))
        #expect(response.status == .gatewayTimeout && self.requests() == 0)
    }

    @Test func staleIfErrorServesTheStoredResponseWhenTheOriginFails() async throws {
        let failing = Mutex(false)
        self.mock.on(.get, "/r") { _ in
            if failing.withLock({ $0 }) { return .status(.serviceUnavailable) }
            return .init(headerFields: [.cacheControl: "max-age=10, stale-if-error=60"], body: Array("good".utf8))
        }
        self.mock.on(.get, "/down") { _ in
            if failing.withLock({ $0 }) { return .error(TransportError(.connectionRefused)) }
            return .init(headerFields: [.cacheControl: "max-age=10, stale-if-error=60"], body: Array("up".utf8))
        }
        let (client, _) = try self.client()
        _ = try await client.send(self.get())
        _ = try await client.send(self.get("/down"))
        failing.withLock { $0 = true }
        self.clock.advance(30)
        let served = try await client.send(self.get())
        #expect(served.text == "good" && served.cacheStatus == .stale(.originFailed))
        #expect(try await client.send(self.get("/down")).text == "up")
        self.clock.advance(60)
        #expect(try await client.send(self.get()).status == .serviceUnavailable, "past the window the error goes through")
    }

    @Test func staleWhileRevalidateAnswersAtOnceAndRevalidatesOnceInTheBackground() async throws {
        let version = Mutex(1)
        self.mock.on(.get, "/r") { _ in
            let v = version.withLock { $0 }
            return .init(headerFields: [.cacheControl: "max-age=10, stale-while-revalidate=60"], body: Array("v\(v)".utf8))
        }
        let (client, cache) = try self.client()
        _ = try await client.send(self.get())
        version.withLock { $0 = 2 }
        self.clock.advance(20)
        let stale = try await client.send(self.get())
        #expect(stale.text == "v1" && stale.cacheStatus == .stale(.whileRevalidating))
        await cache.waitForBackgroundRevalidations()
        #expect(self.requests() == 2)
        let fresh = try await client.send(self.get())
        #expect(fresh.text == "v2" && fresh.cacheStatus == .hit)
    }

    @Test func concurrentMissesForOneKeyShareOneRequest() async throws {
        // Two seconds for the other four callers to join the first one's miss, however busy
        // the machine.
        self.mock.on(.get, "/r", reply: MockTransport.Reply(headerFields: [.cacheControl: "max-age=100"], body: Array("x".utf8))
            .delayed(by: .seconds(2)))
        let (client, _) = try self.client()
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<5 { group.addTask { try await client.send(self.get()).text } }
            for try await text in group { #expect(text == "x") }
        }
        #expect(self.requests() == 1)
    }

    @Test func aCallersOwnConditionalRequestGetsA304FromAFreshEntry() async throws {
        self.mock.on(.get, "/r", reply: .init(headerFields: [.cacheControl: "max-age=100", .eTag: "\"abc\""], body: Array("x".utf8)))
        let (client, _) = try self.client()
        _ = try await client.send(self.get())
        let conditional = try await client.send(self.get("/r", [.ifNoneMatch: "\"abc\""]))
        #expect(conditional.status == .notModified && conditional.body.isEmpty && self.requests() == 1)
        let other = try await client.send(self.get("/r", [.ifNoneMatch: "\"zzz\""]))
        #expect(other.status == .ok && other.text == "x")
    }

    @Test func aCallersOwnConditionalRequestGoesOnAsItIsAndItsOwn304ComesBack() async throws {
        self.mock.fallback { request in
            if request.headerFields[.ifNoneMatch] == "\"v\"" {
                return .init(status: .notModified, headerFields: [.eTag: "\"v\"", .cacheControl: "max-age=10"])
            }
            return .init(headerFields: [.eTag: "\"v\"", .cacheControl: "max-age=10"], body: Array("x".utf8))
        }
        let (client, _) = try self.client()
        let unknown = try await client.send(self.get("/new", [.ifNoneMatch: "\"v\""]))
        #expect(unknown.status == .notModified && unknown.cacheStatus == .miss(stored: false), "nothing stored: passed through")
        _ = try await client.send(self.get())
        self.clock.advance(20)
        let conditional = try await client.send(self.get("/r", [.ifNoneMatch: "\"v\""]))
        #expect(conditional.status == .notModified && conditional.cacheStatus == .revalidated)
        #expect(self.mock.requests.last?.headerFields[.ifNoneMatch] == "\"v\"" && self.requests() == 2)
        let plain = try await client.send(self.get())
        #expect(plain.status == .ok && plain.text == "x" && plain.cacheStatus == .hit, "the caller's 304 freshened the stored response")
    }

    @Test func streamedBodiesAreStoredAsTheyAreReadToTheEnd() async throws {
        self.mock.on(.get, "/r", reply: .init(headerFields: [.cacheControl: "max-age=100"], body: Array(repeating: 7, count: 10_000)))
        let (client, _) = try self.client()
        let streamed = try await client.stream(self.get())
        #expect(streamed.cacheStatus == .miss(stored: true))
        var read = 0
        for try await chunk in streamed.body { read += chunk.count }
        #expect(read == 10_000)
        let hit = try await client.send(self.get())
        #expect(hit.cacheStatus == .hit && hit.body.count == 10_000 && self.requests() == 1)
    }

    @Test func aBodyLargerThanTheStoreTakesIsNotStored() async throws {
        self.mock.on(.get, "/r", reply: .init(headerFields: [.cacheControl: "max-age=100"], body: Array(repeating: 1, count: 5000)))
        let (client, _) = try self.client(store: MemoryCacheStore(capacity: 10_000, entryLimit: 1000))
        #expect(try await client.send(self.get()).cacheStatus == .miss(stored: false))
        let streamed = try await client.stream(self.get())
        for try await _ in streamed.body {}
        #expect(try await client.send(self.get()).cacheStatus == .miss(stored: false))
        #expect(self.requests() == 3)
    }

    @Test func manualControlByRequestAndByURL() async throws {
        struct User: Codable, Equatable { var id: Int }
        let (client, cache) = try self.client()
        let endpoint = Endpoint<User>.get("/users/7")
        try await client.setCachedResponse(User(id: 7), for: endpoint)
        #expect(try await client.cachedResponse(for: endpoint) == User(id: 7))
        #expect(try await client.value(endpoint, options: .init(cachePolicy: .returnCacheDataElseLoad)) == User(id: 7))
        try await client.removeCachedResponse(for: endpoint)
        #expect(try await client.cachedResponse(for: endpoint) == nil)
        let middleware = CacheMiddleware(cache: cache)
        #expect(await middleware.store(Array("hi".utf8), headerFields: [.cacheControl: "max-age=60"], for: "http://api.test/r"))
        #expect(try await client.send(self.get()).text == "hi")
        #expect(await middleware.cachedResponse(for: "http://api.test/r")?.body == Array("hi".utf8))
        await client.clearNetworkCache()
        #expect(await middleware.cachedResponse(for: "http://api.test/r") == nil)
        #expect(self.requests() == 0 && self.requests("/users/7") == 0)
    }

    @Test func theCacheSeesRequestsAfterTheUsersMiddleware() async throws {
        self.mock.on(.get, "/r") { request in
            .init(headerFields: [.cacheControl: "max-age=100", .vary: "Authorization"], body: Array((request.headerFields[.authorization] ?? "").utf8))
        }
        let token = Mutex("a")
        let auth = RequestModifier { request in request.head.headerFields[.authorization] = token.withLock { $0 } }
        let (client, _) = try self.client(middleware: [auth])
        #expect(try await client.send(self.get()).text == "a")
        token.withLock { $0 = "b" }
        #expect(try await client.send(self.get()).text == "b", "another Authorization: another variant")
        #expect(self.requests() == 2)
    }

    @Test func aClientWithoutACacheHasNoStatus() async throws {
        self.mock.on(.get, "/r", reply: .init(headerFields: [.cacheControl: "max-age=100"]))
        let client = try Client(baseURL: "http://api.test", transport: self.mock)
        #expect(try await client.send(self.get()).cacheStatus == nil)
    }
}
