import HTTPTypes
@testable import Salvo
import Synchronization
import Testing

/// What a review of the cache found, each a test that failed before its fix: one user's
/// answer or cookie never reaches another, a 304 is never handed to a caller who did not ask
/// for one, an invalidation is not undone by a request already under way, and the rest.
@Suite struct CacheSafetyTests {
    let clock = TestClock()
    let mock = MockTransport()

    func client(_ options: HTTPCache.Options = .init()) throws -> Client {
        try Client(baseURL: "http://api.test", transport: self.mock,
                   configuration: .init(cache: HTTPCache(options: options, clock: self.clock.cacheClock)))
    }

    func get(_ path: String, _ fields: HTTPFields = [:]) -> Endpoint<String> {
        Endpoint<String>(method: .get, path: path, headers: fields)
    }

    func requests(_ path: String) -> Int { self.mock.requests.filter { $0.path == path }.count }

    /// Alice's revalidation, answered 304 with a field of her own, leaves Bob's copy alone.
    @Test func aRevalidationForOneUserDoesNotTouchAnothersCopy() async throws {
        let marker = HTTPField.Name("X-For")!
        self.mock.on(.get, "/shared") { request in
            let user = request.headerFields[.authorization] ?? "nobody"
            if request.headerFields[.ifNoneMatch] == "\"same\"" {
                return .init(status: .notModified, headerFields: [.eTag: "\"same\"", .cacheControl: "max-age=100", marker: user])
            }
            return .init(headerFields: [.eTag: "\"same\"", .cacheControl: "max-age=10", marker: "first " + user], body: Array("body".utf8))
        }
        let client = try self.client()
        _ = try await client.send(self.get("/shared", [.authorization: "alice"]))
        _ = try await client.send(self.get("/shared", [.authorization: "bob"]))
        self.clock.advance(20)
        let alice = try await client.send(self.get("/shared", [.authorization: "alice"]))
        #expect(alice.cacheStatus == .revalidated && alice.headerFields[marker] == "alice")
        // Bob's copy is stale and his own: it is revalidated for him, never Alice's merge.
        let bob = try await client.send(self.get("/shared", [.authorization: "bob"]))
        #expect(bob.headerFields[marker] == "bob", "\(bob.headerFields)")
    }

    /// A cookie the origin set reaches only the user it was set for: what answered one
    /// user (or a request without credentials) is served only to the same.
    @Test func setCookieReachesOnlyItsUser() async throws {
        self.mock.on(.get, "/cookie", reply: .init(headerFields: [.cacheControl: "max-age=100", .setCookie: "sid=secret"], body: Array("x".utf8)))
        let client = try self.client()
        _ = try await client.send(self.get("/cookie"))
        let other = try await client.send(self.get("/cookie", [.authorization: "Bearer other"]))
        #expect(other.cacheStatus == .miss(stored: true))
        #expect(try await client.send(self.get("/cookie")).cacheStatus == .hit, "the same (anonymous) requester")
    }

    /// A 304 that matches nothing stored (a new validator) is no answer to a plain GET: the
    /// cache asks again, unconditionally, and the caller gets the 200.
    @Test func aPlainRequestNeverGetsABare304() async throws {
        let calls = Mutex(0)
        self.mock.on(.get, "/moved") { request in
            let call = calls.withLock { $0 += 1; return $0 }
            if call == 2 {
                #expect(request.headerFields[.ifModifiedSince] != nil)
                return .init(status: .notModified, headerFields: [.eTag: "\"new\""])
            }
            return .init(headerFields: [.lastModified: "Mon, 01 Jan 2024 00:00:00 GMT", .cacheControl: "no-cache"],
                         body: Array("v\(call)".utf8))
        }
        let client = try self.client()
        _ = try await client.send(self.get("/moved"))
        let second = try await client.send(self.get("/moved"))
        #expect(second.status == .ok && second.text == "v3")
        #expect(calls.withLock { $0 } == 3)
    }

    /// A GET already under way when a POST invalidates its URL does not bring the old
    /// answer back.
    @Test func anInvalidationIsNotUndoneByARequestUnderWay() async throws {
        // The GET's answer comes two seconds on: long after the POST, however busy the machine.
        self.mock.on(.get, "/item", reply: .init(headerFields: [.cacheControl: "max-age=100"], body: Array("old".utf8),
                                                 delay: .seconds(2)))
        self.mock.on(.post, "/item", reply: .init(status: .noContent))
        let client = try self.client()
        let slow = Task { try await client.send(self.get("/item")) }
        while self.requests("/item") == 0 { try await Task.sleep(for: .milliseconds(2)) }
        _ = try await client.send(Endpoint<Void>(method: .post, path: "/item"))
        #expect(try await slow.value.cacheStatus == .miss(stored: false))
        _ = try await client.send(self.get("/item"))
        #expect(self.mock.requests.filter { $0.method == .get }.count == 2, "the answer older than the POST was not kept")
    }

    /// A 304 without a Date restarts the entry's age (its old Date no longer describes it).
    @Test func a304WithoutDateRestartsTheAge() async throws {
        let hourAgo = self.clock.date(-3600)
        self.mock.on(.get, "/old") { request in
            if request.headerFields[.ifNoneMatch] != nil {
                return .init(status: .notModified, headerFields: [.eTag: "\"e\"", .cacheControl: "max-age=600"])
            }
            return .init(headerFields: [.eTag: "\"e\"", .cacheControl: "max-age=10", .date: hourAgo], body: Array("x".utf8))
        }
        let client = try self.client()
        _ = try await client.send(self.get("/old"))
        #expect(try await client.send(self.get("/old")).cacheStatus == .revalidated)
        self.clock.advance(5)
        #expect(try await client.send(self.get("/old")).cacheStatus == .hit)
        #expect(self.requests("/old") == 2)
    }

    /// A follower of a collapsed miss waits no longer than its own deadline: it ends before
    /// the slow leader does.
    @Test func aFollowerKeepsItsOwnDeadline() async throws {
        // The leader's answer would take a minute: a follower that waited for it could not
        // end first, however slow the machine.
        self.mock.on(.get, "/slow", reply: .init(headerFields: [.cacheControl: "max-age=100"], body: Array("s".utf8), delay: .seconds(60)))
        let client = try self.client()
        let order = Mutex<[String]>([])
        let leader = Task {
            _ = try? await client.send(self.get("/slow"))
            order.withLock { $0.append("leader") }
        }
        while self.requests("/slow") == 0 { try await Task.sleep(for: .milliseconds(2)) }
        _ = try? await client.send(self.get("/slow"), options: Client.CallOptions(timeout: .milliseconds(200)))
        order.withLock { $0.append("follower") }
        leader.cancel()
        await leader.value
        #expect(order.withLock { $0 } == ["follower", "leader"])
    }

    /// A stored body larger than a call takes is not handed to it, with the cache alone in the
    /// client (answered before the chain) or behind another middleware.
    @Test func aStoredBodyKeepsToTheCallsLimit() async throws {
        self.mock.on(.get, "/big", reply: .init(headerFields: [.cacheControl: "max-age=100"], body: Array(repeating: 0x61, count: 100)))
        for middleware in [[], [PassOn()] as [any Middleware]] {
            let client = try Client(baseURL: "http://api.test", transport: self.mock,
                                    configuration: .init(middleware: middleware, cache: HTTPCache(clock: self.clock.cacheClock)))
            #expect(try await client.send(self.get("/big")).body.count == 100)
            #expect(try await client.send(self.get("/big")).cacheStatus == .hit)
            let small = Client.CallOptions(maxBodySize: 10)
            await #expect(throws: ClientError.self) { _ = try await client.send(self.get("/big"), options: small) }
        }
    }

    /// The hits of one second share the head they are served with; the next second's say
    /// their own age, and a revalidated entry never serves the old head.
    @Test func hitsSayTheirAgeToTheSecond() async throws {
        let etag = "\"e\""
        self.mock.on(.get, "/aged") { request in
            if request.headerFields[.ifNoneMatch] == etag {
                return .init(status: .notModified, headerFields: [.eTag: etag, .cacheControl: "max-age=100", HTTPField.Name("X-V")!: "2"])
            }
            return .init(headerFields: [.eTag: etag, .cacheControl: "max-age=100", .date: self.clock.date(), HTTPField.Name("X-V")!: "1"],
                         body: Array("a".utf8))
        }
        let client = try self.client(.init(statusHeaderName: "Salvo"))
        _ = try await client.send(self.get("/aged"))
        self.clock.advance(30)
        let first = try await client.send(self.get("/aged"))
        self.clock.advance(0.5)
        let second = try await client.send(self.get("/aged"))
        self.clock.advance(0.5)
        let third = try await client.send(self.get("/aged"))
        #expect(first.headerFields[.age] == "30" && second.headerFields[.age] == "30" && third.headerFields[.age] == "31")
        #expect(third.headerFields[.cacheStatus] == "Salvo; hit; ttl=69")
        self.clock.advance(100)
        #expect(try await client.send(self.get("/aged")).cacheStatus == .revalidated)
        let after = try await client.send(self.get("/aged"))
        #expect(after.cacheStatus == .hit && after.headerFields[HTTPField.Name("X-V")!] == "2" && after.headerFields[.age] == "0")
    }

    /// Credentials are kept as digests in what the store holds.
    @Test func storedVariantsHoldNoCredentials() async throws {
        self.mock.on(.get, "/me", reply: .init(headerFields: [.cacheControl: "max-age=100"], body: Array("me".utf8)))
        let store = MemoryCacheStore()
        let client = try Client(baseURL: "http://api.test", transport: self.mock,
                                configuration: .init(cache: HTTPCache(store: store, clock: self.clock.cacheClock)))
        _ = try await client.send(self.get("/me", [.authorization: "Bearer SECRET", .cookie: "sid=SECRET2"]))
        let entry = try #require(await store.entries(for: "http://api.test/me").first)
        let values = entry.varyValues.compactMap(\.value).joined()
        #expect(!values.contains("SECRET") && values.contains("sha256:"))
        #expect(try await client.send(self.get("/me", [.authorization: "Bearer SECRET", .cookie: "sid=SECRET2"])).cacheStatus == .hit)
    }

    /// `max-stale` with a value that is not delta-seconds allows no staleness.
    @Test func anInvalidMaxStaleAllowsNothing() {
        let rules = CacheRules()
        let entry = StoredResponse(id: "x", key: "http://a.test/x",
                                   head: HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=10", .date: HTTPDate.format(1000)]),
                                   requestTime: 1000, responseTime: 1000, bodySize: 0)
        func asking(_ value: String) -> HTTPRequest {
            HTTPRequest(method: .get, scheme: "http", authority: "a.test", path: "/x", headerFields: [.cacheControl: value])
        }
        #expect(rules.usability(of: entry, for: asking("max-stale=abc"), now: 2000) == .mustValidate)
        #expect(rules.usability(of: entry, for: asking("max-stale=-5"), now: 2000) == .mustValidate)
        #expect(rules.usability(of: entry, for: asking("max-stale"), now: 2000) == .staleAllowed(.requestAllowed))
        #expect(rules.usability(of: entry, for: asking("max-stale=5000"), now: 2000) == .staleAllowed(.requestAllowed))
    }
}

/// A middleware that only passes the request on.
private struct PassOn: Middleware {
    func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        try await next(request)
    }
}
