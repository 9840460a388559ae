import Foundation
@testable import Salvo
import Testing

/// RFC 9111's rules on plain header values, with the time passed in: no sockets, no clock.
@Suite struct CacheRulesTests {
    static let t0 = 1_700_000_000.0
    let rules = CacheRules()

    func entry(_ fields: HTTPFields, status: HTTPResponse.Status = .ok, requestTime: Double = t0, responseTime: Double = t0,
               vary: [StoredResponse.VaryValue] = []) -> StoredResponse {
        // An id of its own, as the cache gives every response it stores.
        StoredResponse(id: UUID().uuidString, key: "http://a.test/x", head: HTTPResponse(status: status, headerFields: fields), varyValues: vary,
                       requestTime: requestTime, responseTime: responseTime, bodySize: 0)
    }

    func get(_ fields: HTTPFields = [:], path: String = "/x") -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "http", authority: "a.test", path: path, headerFields: fields)
    }

    static func date(_ offset: Double) -> String { HTTPDate.format(t0 + offset) }

    // MARK: Parsing

    @Test func directivesAreCaseInsensitiveFirstWinsAndQuotesHoldCommas() {
        let directives = CacheControl(["No-StOrE, max-age=10, Max-Age=20", "ext=\"max-age=3600, x\", private"])
        #expect(directives.has("no-store") && directives.has("private"))
        #expect(directives.seconds("max-age") == .value(10))
        #expect(directives.value("ext") == "max-age=3600, x")
        #expect(CacheControl(["max-age=\"3600\""]).seconds("max-age") == .value(3600))
        #expect(CacheControl(["max-age='3600'"]).seconds("max-age") == .invalid)
        #expect(CacheControl(["max-age=-1"]).seconds("max-age") == .invalid)
        #expect(CacheControl(["max-age=003600"]).seconds("max-age") == .value(3600))
        #expect(CacheControl(["max-age =3600"]).seconds("max-age") == .absent, "white space before = makes no directive")
        #expect(CacheControl(["max-age=99999999999999"]).seconds("max-age") == .value(2_147_483_648))
        #expect(CacheControl(["max-stale"]).optionalSeconds("max-stale") == (true, nil))
    }

    @Test func httpDatesParseStrictlyInTheThreeForms() {
        let imf = HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(imf == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == imf)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == imf)
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.parse("SUN, 06 nov 1994 08:49:37 gMT") == imf, "letter case is not layout")
        #expect(HTTPDate.parse("Thursday, 18-Aug-50 02:01:18 GMT") == HTTPDate.parse("Thu, 18 Aug 2050 02:01:18 GMT"))
        for bad in ["Thu, 18 Aug 2050 02:01:18 UTC", "Thu, 18 Aug 50 02:01:18 GMT", "Thu 18 Aug 2050 02:01:18 GMT",
                    "Thu, 18  Aug 2050 02:01:18 GMT", "Thu, 18-Aug-2050 02:01:18 GMT", "Thu, 18 Aug 2050 02.01.18 GMT",
                    "Thu, 18 Aug 2050 2:01:18 GMT", "0", ""] {
            #expect(HTTPDate.parse(bad) == nil, "\(bad)")
        }
        for offset in [0.0, 86_399, 1e9, -3e8] { #expect(HTTPDate.parse(HTTPDate.format(Self.t0 + offset)) == Self.t0 + offset) }
    }

    @Test func ageTakesTheFirstDeltaSecondsAndIgnoresTheRest() {
        #expect(CacheRules.ageValue([.age: "0, 7200"]) == 0)
        #expect(CacheRules.ageValue([.age: "7200, 0"]) == 7200)
        #expect(CacheRules.ageValue([.age: "abc"]) == 0)
        #expect(CacheRules.ageValue([.age: "-7200"]) == 0)
        #expect(CacheRules.ageValue([.age: "7200.0"]) == 0)
        #expect(CacheRules.ageValue([.age: "2147483649"]) == 2_147_483_648)
        var twoLines = HTTPFields()
        twoLines.append(HTTPField(name: .age, value: "7200"))
        twoLines.append(HTTPField(name: .age, value: "0"))
        #expect(CacheRules.ageValue(twoLines) == 7200)
    }

    // MARK: Freshness and age

    @Test func freshnessComesFromMaxAgeThenExpiresThenHeuristics() {
        #expect(self.rules.freshnessLifetime(self.entry([.cacheControl: "max-age=60", .expires: Self.date(3600)])) == 60)
        #expect(self.rules.freshnessLifetime(self.entry([.cacheControl: "max-age=-1", .expires: Self.date(3600)])) == 0)
        #expect(self.rules.freshnessLifetime(self.entry([.cacheControl: "s-maxage=600"])) == 0, "s-maxage is for shared caches")
        #expect(self.rules.freshnessLifetime(self.entry([.expires: Self.date(3600), .date: Self.date(0)])) == 3600)
        #expect(self.rules.freshnessLifetime(self.entry([.expires: Self.date(300), .date: Self.date(400)])) == 0)
        #expect(self.rules.freshnessLifetime(self.entry([.expires: "0", .date: Self.date(0)])) == 0, "an invalid Expires has expired")
        #expect(self.rules.freshnessLifetime(self.entry([.expires: Self.date(100)])) == 100, "no Date: the response time")
        var two = HTTPFields([HTTPField(name: .expires, value: Self.date(100))])
        two.append(HTTPField(name: .expires, value: Self.date(200)))
        #expect(self.rules.freshnessLifetime(self.entry(two)) == 0)
        // Heuristic: 10% of Date − Last-Modified, capped, only for heuristically cacheable statuses or `public`.
        let modified: HTTPFields = [.date: Self.date(0), .lastModified: Self.date(-10_000)]
        #expect(self.rules.freshnessLifetime(self.entry(modified)) == 1000)
        #expect(self.rules.freshnessLifetime(self.entry(modified, status: .notFound)) == 1000)
        #expect(self.rules.freshnessLifetime(self.entry(modified, status: .init(code: 599))) == 0)
        var publicFields = modified
        publicFields[.cacheControl] = "public"
        #expect(self.rules.freshnessLifetime(self.entry(publicFields, status: .init(code: 599))) == 1000)
        #expect(self.rules.freshnessLifetime(self.entry([.date: Self.date(0), .lastModified: Self.date(-30 * 86_400)])) == 86_400)
        #expect(self.rules.freshnessLifetime(self.entry([.date: Self.date(0)])) == 0)
    }

    @Test func currentAgeCountsAgeDelayClockSkewAndResidence() {
        // Sent at t0, received 2 s later with Age 10 and a Date 5 s behind our clock.
        let stored = self.entry([.age: "10", .date: Self.date(-3)], requestTime: Self.t0, responseTime: Self.t0 + 2)
        // apparent age 5, corrected Age 12 → initial 12; 100 s resident.
        #expect(self.rules.currentAge(stored, now: Self.t0 + 102) == 112)
        // A server clock ahead of ours makes no response younger than its Age says.
        let ahead = self.entry([.date: Self.date(3600)])
        #expect(self.rules.currentAge(ahead, now: Self.t0 + 30) == 30)
        let slowDate = self.entry([.date: Self.date(-10), .expires: Self.date(10), .age: "25"])
        #expect(self.rules.usability(of: slowDate, for: self.get(), now: Self.t0) == .mustValidate)
    }

    @Test func usabilityFollowsRequestAndResponseDirectives() {
        let fresh = self.entry([.cacheControl: "max-age=100"])
        let now = Self.t0 + 50
        #expect(self.rules.usability(of: fresh, for: self.get(), now: now) == .fresh)
        #expect(self.rules.usability(of: fresh, for: self.get(), now: Self.t0 + 100) == .mustValidate)
        #expect(self.rules.usability(of: fresh, for: self.get([.cacheControl: "no-cache"]), now: now) == .mustValidate)
        #expect(self.rules.usability(of: fresh, for: self.get([.pragma: "no-cache"]), now: now) == .mustValidate)
        #expect(self.rules.usability(of: fresh, for: self.get([.pragma: "no-cache", .cacheControl: "max-age=100"]), now: now) == .fresh,
                "Pragma counts only without Cache-Control")
        #expect(self.rules.usability(of: fresh, for: self.get([.cacheControl: "max-age=10"]), now: now) == .mustValidate)
        #expect(self.rules.usability(of: fresh, for: self.get([.cacheControl: "min-fresh=60"]), now: now) == .mustValidate)
        #expect(self.rules.usability(of: fresh, for: self.get([.cacheControl: "min-fresh=40"]), now: now) == .fresh)
        let stale = Self.t0 + 130
        #expect(self.rules.usability(of: fresh, for: self.get([.cacheControl: "max-stale"]), now: stale) == .staleAllowed(.requestAllowed))
        #expect(self.rules.usability(of: fresh, for: self.get([.cacheControl: "max-stale=40"]), now: stale) == .staleAllowed(.requestAllowed))
        #expect(self.rules.usability(of: fresh, for: self.get([.cacheControl: "max-stale=20"]), now: stale) == .mustValidate)
        let mustRevalidate = self.entry([.cacheControl: "max-age=100, must-revalidate"])
        #expect(self.rules.usability(of: mustRevalidate, for: self.get([.cacheControl: "max-stale"]), now: stale) == .mustValidate)
        #expect(self.rules.usability(of: self.entry([.cacheControl: "max-age=100, no-cache"]), for: self.get(), now: now) == .mustValidate)
        #expect(self.rules.usability(of: self.entry([.cacheControl: "max-age=100, no-cache=\"Set-Cookie\""]), for: self.get(), now: now)
                == .mustValidate, "no-cache with field names is read as plain no-cache")
        let swr = self.entry([.cacheControl: "max-age=100, stale-while-revalidate=60"])
        #expect(self.rules.usability(of: swr, for: self.get(), now: stale) == .staleWhileRevalidate)
        #expect(self.rules.usability(of: swr, for: self.get(), now: Self.t0 + 170) == .mustValidate)
        let sie = self.entry([.cacheControl: "max-age=100, stale-if-error=60"])
        #expect(self.rules.mayServeOnError(sie, for: self.get(), now: stale))
        #expect(!self.rules.mayServeOnError(sie, for: self.get(), now: Self.t0 + 170))
        #expect(self.rules.mayServeOnError(fresh, for: self.get([.cacheControl: "stale-if-error=60"]), now: stale))
        #expect(!self.rules.mayServeOnError(fresh, for: self.get(), now: stale))
        #expect(self.rules.mayServeOnError(fresh, for: self.get(), now: stale + 1e6, unreachable: true), "a disconnected cache may serve stale")
        #expect(!self.rules.mayServeOnError(mustRevalidate, for: self.get(), now: stale, unreachable: true))
        #expect(!self.rules.mayServeOnError(fresh, for: self.get([.cacheControl: "no-cache"]), now: stale, unreachable: true))
    }

    // MARK: Storing

    @Test func storabilityNeedsGETAFinalStatusAndNoNoStore() {
        let get = self.get()
        func response(_ fields: HTTPFields, _ code: Int = 200) -> HTTPResponse { HTTPResponse(status: .init(code: code), headerFields: fields) }
        #expect(self.rules.isStorable(get, response([.cacheControl: "max-age=60"])))
        #expect(self.rules.isStorable(get, response([.cacheControl: "private, max-age=60"])))
        #expect(self.rules.isStorable(get, response([:])), "200 is heuristically cacheable")
        #expect(self.rules.isStorable(get, response([.cacheControl: "max-age=60"], 599)))
        #expect(!self.rules.isStorable(get, response([:], 599)))
        #expect(self.rules.isStorable(get, response([.eTag: "\"a\""], 599)), "a validator makes it worth keeping")
        #expect(!self.rules.isStorable(get, response([.cacheControl: "No-Store, max-age=60"])))
        #expect(!self.rules.isStorable(self.get([.cacheControl: "no-store"]), response([.cacheControl: "max-age=60"])))
        #expect(!self.rules.isStorable(get, response([.cacheControl: "max-age=60"], 206)))
        #expect(!self.rules.isStorable(get, response([.cacheControl: "max-age=60"], 304)))
        #expect(!self.rules.isStorable(HTTPRequest(method: .post, scheme: "http", authority: "a.test", path: "/x"), response([.cacheControl: "max-age=60"])))
        #expect(self.rules.isStorable(get, response([.cacheControl: "max-age=60, no-store, must-understand"])))
        #expect(!self.rules.isStorable(get, response([.cacheControl: "max-age=60, no-store, must-understand"], 599)))
    }

    @Test func storedHeadsLoseHopByHopFieldsAndADecodedCoding() {
        let head = HTTPResponse(status: .ok, headerFields: [.connection: "a, b", HTTPField.Name("a")!: "1", HTTPField.Name("b")!: "2",
                                                              HTTPField.Name("c")!: "3", .contentEncoding: "gzip", .contentLength: "10"])
        let stored = CacheRules.storableHead(head, decodedContentEncoding: true).headerFields
        #expect(stored.map(\.name.canonicalName) == ["c"])
    }

    // MARK: Vary

    @Test func variantsMatchOnNormalizedValuesAndStarNeverMatches() {
        let response = HTTPResponse(status: .ok, headerFields: [.vary: "Foo, Bar"])
        let values = CacheRules.varyValues(of: self.get([HTTPField.Name("Foo")!: "1,  2"]), for: response)
        #expect(values == [.init(name: "foo", value: "1,2"), .init(name: "bar", value: nil)])
        let stored = self.entry([:], vary: values)
        #expect(CacheRules.matches(self.get([HTTPField.Name("foo")!: "1, 2"]), stored))
        #expect(!CacheRules.matches(self.get([HTTPField.Name("foo")!: "1, 2", HTTPField.Name("bar")!: "x"]), stored))
        #expect(!CacheRules.matches(self.get(), stored))
        let star = CacheRules.varyValues(of: self.get(), for: HTTPResponse(status: .ok, headerFields: [.vary: "Foo, *"]))
        #expect(!CacheRules.matches(self.get(), self.entry([:], vary: star)))
    }

    // MARK: Validation

    @Test func conditionalRequestsCarryTheSelectedTagAndLastModified() {
        let a = self.entry([.eTag: "\"a\"", .lastModified: Self.date(-100), .date: Self.date(0)])
        let request = CacheRules.conditionalRequest(self.get(), selected: a)
        #expect(request.headerFields[.ifNoneMatch] == "\"a\"")
        #expect(request.headerFields[.ifModifiedSince] == Self.date(-100))
        let dateOnly = CacheRules.conditionalRequest(self.get(), selected: self.entry([.date: Self.date(0)]))
        #expect(dateOnly.headerFields[.ifModifiedSince] == nil && dateOnly.headerFields[.ifNoneMatch] == nil,
                "Date is never used as a validator")
    }

    @Test func a304UpdatesFieldsButNotFramingAndKeepsTheBody() {
        let stored = self.entry([.eTag: "\"a\"", .contentLength: "5", HTTPField.Name("Foo")!: "old", .age: "50", .contentType: "text/plain"])
        let notModified = HTTPResponse(status: .notModified, headerFields: [.eTag: "\"a\"", .contentLength: "0", HTTPField.Name("Foo")!: "new",
                                                                             .cacheControl: "max-age=10"])
        let targets = CacheRules.notModifiedTargets(notModified, request: self.get(), selected: stored, entries: [stored])
        #expect(targets.map(\.id) == [stored.id])
        let merged = CacheRules.merged(stored, with: notModified, requestTime: Self.t0 + 100, responseTime: Self.t0 + 101)
        let fields = merged.head.headerFields
        #expect(fields[HTTPField.Name("Foo")!] == "new" && fields[.contentLength] == "5" && fields[.age] == nil)
        #expect(fields[.cacheControl] == "max-age=10" && fields[.contentType] == "text/plain")
        #expect(merged.head.status == .ok && merged.responseTime == Self.t0 + 101)
        let other = HTTPResponse(status: .notModified, headerFields: [.eTag: "\"z\""])
        #expect(CacheRules.notModifiedTargets(other, request: self.get(), selected: stored, entries: [stored]).isEmpty, "a 304 for nothing stored")
    }

    @Test func callersOwnPreconditionsAreJudgedAgainstTheStoredResponse() {
        let stored = self.entry([.eTag: "\"abc\"", .lastModified: Self.date(-100)])
        #expect(CacheRules.satisfiesPrecondition(self.get([.ifNoneMatch: "\"x\", W/\"abc\""]), stored))
        #expect(CacheRules.satisfiesPrecondition(self.get([.ifNoneMatch: "*"]), stored))
        #expect(!CacheRules.satisfiesPrecondition(self.get([.ifNoneMatch: "\"x\"", .ifModifiedSince: Self.date(0)]), stored),
                "If-None-Match takes precedence")
        #expect(CacheRules.satisfiesPrecondition(self.get([.ifModifiedSince: Self.date(0)]), stored))
        #expect(!CacheRules.satisfiesPrecondition(self.get([.ifModifiedSince: Self.date(-200)]), stored))
    }

    // MARK: Invalidation

    @Test func unsafeMethodsInvalidateTheTargetAndSameOriginLocations() {
        let post = HTTPRequest(method: .post, scheme: "http", authority: "a.test", path: "/items/1")
        let response = HTTPResponse(status: .created, headerFields: [.location: "/items/2?x=1", .contentLocation: "http://elsewhere.test/y"])
        #expect(CacheRules.invalidatedKeys(post, response) == ["http://a.test/items/1", "http://a.test/items/2?x=1"])
        #expect(CacheRules.invalidatedKeys(post, HTTPResponse(status: .internalServerError)).isEmpty)
        #expect(CacheRules.invalidatedKeys(self.get(), HTTPResponse(status: .ok)).isEmpty)
        let unknown = HTTPRequest(method: HTTPRequest.Method("FOO")!, scheme: "http", authority: "a.test", path: "/x")
        #expect(CacheRules.invalidatedKeys(unknown, HTTPResponse(status: .ok)) == ["http://a.test/x"])
    }

    // MARK: Cache-Status

    @Test func cacheStatusHeaderValuesFollowRFC9211() {
        #expect(CacheStatus.hit.headerValue(cacheName: "Salvo", ttl: 30) == "Salvo; hit; ttl=30")
        #expect(CacheStatus.miss(stored: true).headerValue(cacheName: "Salvo") == "Salvo; fwd=miss; stored")
        #expect(CacheStatus.revalidated.headerValue(cacheName: "Salvo") == "Salvo; fwd=stale; fwd-status=304")
        #expect(CacheStatus.stale(.originFailed).headerValue(cacheName: "Salvo") == "Salvo; fwd=stale; detail=stale-if-error")
        #expect(CacheStatus.stale(.whileRevalidating).headerValue(cacheName: "Salvo") == "Salvo; hit; detail=stale-while-revalidate")
        #expect(CacheStatus.bypassed(stored: false).headerValue(cacheName: "Salvo") == "Salvo; fwd=bypass")
        #expect(CacheStatus.hit.isFromCache && !CacheStatus.miss(stored: true).isFromCache)
    }
}
