import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// Retries the server asks for with `Retry-After`: a status that is a retry signal only with
/// the field (GitHub's 403 rate limit), any method on a 429 or 503 when the policy allows it,
/// and a budget that bounds blind retries without starving the asked ones.
@Suite struct RetryWhenAskedTests {
    /// A mock that answers each path's first `failures` requests with `status` (and `headers`),
    /// then 200 "ok".
    func flaky(_ failures: Int, status: HTTPResponse.Status, headers: HTTPFields = [:]) -> MockTransport {
        let mock = MockTransport()
        let counts = Mutex([String: Int]())
        mock.fallback { request in
            let seen = counts.withLock { counts in counts[request.path, default: 0] += 1; return counts[request.path]! }
            return seen <= failures ? MockTransport.Reply(status: status, headerFields: headers, body: Array("later".utf8)) : .text("ok")
        }
        return mock
    }

    func client(_ mock: MockTransport, _ policy: RetryPolicy, timeout: Duration? = nil) throws -> Client {
        try Client(baseURL: "http://api.test", transport: mock, configuration: .init(timeout: timeout, middleware: [RetryMiddleware(policy)]))
    }

    static let quick = RetryPolicy(baseDelay: .milliseconds(1), budget: nil)
    static let now: HTTPFields = [.retryAfter: "0"]
    /// Asked for later: what does not spend the retry budget.
    static let later: HTTPFields = [.retryAfter: "1"]

    // MARK: A status retried only with Retry-After

    /// GitHub's secondary rate limit is a 403 with Retry-After: retried. A plain 403 is a
    /// permission error: returned after one attempt.
    @Test func a403IsRetriedOnlyWhenItCarriesRetryAfter() async throws {
        let limited = self.flaky(1, status: .forbidden, headers: Self.now)
        #expect(try await self.client(limited, RetryPolicy()).value(Endpoint<String>.get("/repos")) == "ok")
        #expect(limited.requests.count == 2)

        let denied = self.flaky(1, status: .forbidden)
        let error = try await self.client(denied, Self.quick).outcome(Endpoint<String>.get("/repos")).error
        #expect(error?.status?.code == 403 && error?.responseBody == Array("later".utf8))
        #expect(denied.requests.count == 1, "a plain 403 is not retried")

        for value in ["soon", "", "3600"] {
            let mock = self.flaky(1, status: .forbidden, headers: [.retryAfter: value])
            #expect(try await self.client(mock, Self.quick).outcome(Endpoint<String>.get("/repos")).error?.status?.code == 403)
            #expect(mock.requests.count == 1, "Retry-After \"\(value)\": not valid, or past the longest wait")
        }
    }

    /// The rule is a setting: it wins over `statuses`, and other statuses can follow it.
    @Test func retryAfterStatusesIsASetting() async throws {
        var both = Self.quick
        both.statuses.insert(403)
        let plain = self.flaky(1, status: .forbidden)
        #expect(try await self.client(plain, both).outcome(Endpoint<String>.get("/x")).error?.status?.code == 403)
        #expect(plain.requests.count == 1, "listed in both: only with Retry-After")

        var onlyWhenAsked = Self.quick
        onlyWhenAsked.retryAfterStatuses = [403, 503]
        let unavailable = self.flaky(1, status: .serviceUnavailable)
        #expect(try await self.client(unavailable, onlyWhenAsked).outcome(Endpoint<String>.get("/x")).error?.status?.code == 503)
        #expect(unavailable.requests.count == 1)
        let asked = self.flaky(1, status: .serviceUnavailable, headers: Self.now)
        #expect(try await self.client(asked, onlyWhenAsked).value(Endpoint<String>.get("/x")) == "ok")

        var none = Self.quick
        none.retryAfterStatuses = []
        let limited = self.flaky(1, status: .forbidden, headers: Self.now)
        #expect(try await self.client(limited, none).outcome(Endpoint<String>.get("/x")).error?.status?.code == 403)
        #expect(limited.requests.count == 1)
    }

    // MARK: Any method, when the server asks

    /// Off by default: a POST answered 429 with Retry-After is returned.
    @Test func aPostIsNotRetriedByDefault() async throws {
        let mock = self.flaky(1, status: .tooManyRequests, headers: Self.now)
        #expect(try await self.client(mock, Self.quick).outcome(Endpoint<String>.post("/orders", body: ["item": 1])).error?.status?.code == 429)
        #expect(mock.requests.count == 1)
    }

    /// Turned on: POST and PATCH go again on a 429, a 503 or a 403 rate limit that carry
    /// Retry-After — with no Idempotency-Key unless asked for.
    @Test func anyMethodIsRetriedWhenTheServerAsks() async throws {
        var policy = Self.quick
        policy.retriesAnyMethodWhenAsked = true
        for (status, method) in [(HTTPResponse.Status.tooManyRequests, HTTPRequest.Method.post), (.serviceUnavailable, .patch),
                                 (.forbidden, .post)] {
            let mock = self.flaky(1, status: status, headers: Self.now)
            let endpoint = method == .post ? Endpoint<String>.post("/orders", body: ["item": 1])
                                           : Endpoint<String>.patch("/orders/1", body: ["item": 2])
            #expect(try await self.client(mock, policy).value(endpoint) == "ok", "\(method) on \(status.code)")
            #expect(mock.requests.map(\.method) == [method, method])
            #expect(mock.requests.map(\.text) == Array(repeating: mock.requests[0].text, count: 2), "the same body again")
            #expect(mock.requests.allSatisfy { $0.headerFields[HTTPField.Name("Idempotency-Key")!] == nil })
        }
    }

    /// Only the server's own request to call again counts: no Retry-After, a status that
    /// does not say "refused", a status the policy does not retry, or a wait past the
    /// longest — each is one attempt.
    @Test func anyMethodNeedsTheServerToAsk() async throws {
        var policy = Self.quick
        policy.retriesAnyMethodWhenAsked = true
        var without429 = policy
        without429.statuses.remove(429)
        let cases: [(HTTPResponse.Status, HTTPFields, RetryPolicy, String)] = [
            (.tooManyRequests, [:], policy, "no Retry-After"),
            (.internalServerError, Self.now, policy, "a 500 may have acted on it"),
            (.badGateway, Self.now, policy, "a 502 may have acted on it"),
            (.tooManyRequests, Self.now, without429, "429 not retried by this policy"),
            (.serviceUnavailable, [.retryAfter: "3600"], policy, "longer than maxRetryAfter"),
        ]
        for (status, headers, policy, reason) in cases {
            let mock = self.flaky(1, status: status, headers: headers)
            let error = try await self.client(mock, policy).outcome(Endpoint<String>.post("/orders", body: ["item": 1])).error
            #expect(error?.status == status, "\(reason)")
            #expect(mock.requests.count == 1, "\(reason)")
        }
    }

    /// A one-shot streamed body cannot be sent again: the server's answer is returned.
    @Test func aStreamedBodyIsSentOnceEvenWhenAsked() async throws {
        var policy = Self.quick
        policy.retriesAnyMethodWhenAsked = true
        let mock = self.flaky(1, status: .tooManyRequests, headers: Self.now)
        let stream = HTTPBody.stream(AsyncStream<[UInt8]> { $0.yield(Array("row".utf8)); $0.finish() })
        let error = try await self.client(mock, policy).outcome(Endpoint<String>.post("/upload", body: stream)).error
        #expect(error?.status?.code == 429)
        #expect(mock.requests.count == 1)
    }

    // MARK: The budget

    /// A burst of five 429s with Retry-After under the default budget (which allows about 3
    /// blind retries a second at first): every one is retried.
    @Test func aBurstOfAskedRetriesIsNotStarvedByTheBudget() async throws {
        let mock = self.flaky(1, status: .tooManyRequests, headers: Self.later)
        let client = try self.client(mock, RetryPolicy())
        let answers = await withTaskGroup(of: String?.self) { group in
            for call in 0..<5 {
                group.addTask { try? await client.value(Endpoint<String>.get("/burst/\(call)")) }
            }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(answers == Array(repeating: "ok", count: 5), "\(answers)")
        #expect(mock.requests.count == 10)
    }

    /// With an empty budget, blind retries stop while asked ones go on — still within
    /// `maxAttempts`.
    @Test func theBudgetBoundsOnlyBlindRetries() async throws {
        let empty = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), budget: RetryBudget(ratio: 0, minimumPerSecond: 0))
        let blind = self.flaky(1, status: .serviceUnavailable)
        #expect(try await self.client(blind, empty).outcome(Endpoint<String>.get("/x")).error?.status?.code == 503)
        #expect(blind.requests.count == 1, "a 503 without Retry-After spends the budget")

        let refused = MockTransport(always: .text("ok"))
        refused.fail(nil, "/x", times: 1, with: TransportError(.connectionRefused))
        #expect(try await self.client(refused, empty).outcome(Endpoint<String>.get("/x")).error?.code == .transportFailed)
        #expect(refused.requests.count == 1, "so does a transport failure")

        let asked = self.flaky(1, status: .serviceUnavailable, headers: Self.later)
        #expect(try await self.client(asked, empty).value(Endpoint<String>.get("/x")) == "ok")

        // "Again at once" is a blind retry all the same: a proxy that adds Retry-After: 0 to
        // every 503 of an outage must not lift the budget.
        let atOnce = self.flaky(1, status: .serviceUnavailable, headers: Self.now)
        #expect(try await self.client(atOnce, empty).outcome(Endpoint<String>.get("/x")).error?.status?.code == 503)
        #expect(atOnce.requests.count == 1)

        let forever = self.flaky(.max, status: .tooManyRequests, headers: Self.later)
        #expect(try await self.client(forever, empty).outcome(Endpoint<String>.get("/x")).error?.status?.code == 429)
        #expect(forever.requests.count == 3, "maxAttempts bounds what the server asks for")
    }

    /// A Retry-After that would outlive the call's deadline is not waited for.
    @Test func anAskedWaitPastTheDeadlineReturnsTheAnswer() async throws {
        // Within maxRetryAfter (60 s), but past the call's 30 s: without the deadline rule the
        // call would wait 59 s and then end in a timeout.
        let mock = self.flaky(1, status: .tooManyRequests, headers: [.retryAfter: "59"])
        let started = ContinuousClock.now
        let error = try await self.client(mock, Self.quick, timeout: .seconds(30)).outcome(Endpoint<String>.get("/x")).error
        #expect(error?.status?.code == 429)
        #expect(mock.requests.count == 1)
        #expect(ContinuousClock.now - started < .seconds(30), "returned at once, not after a wait")
    }

    /// Cancelling the call ends a wait the server asked for, for a POST too.
    @Test func cancellingEndsAnAskedWait() async throws {
        var policy = Self.quick
        policy.retriesAnyMethodWhenAsked = true
        policy.maxRetryAfter = .seconds(3600)
        let mock = self.flaky(1, status: .tooManyRequests, headers: [.retryAfter: "600"])
        let client = try self.client(mock, policy)
        let call = Task { await client.outcome(Endpoint<String>.post("/orders", body: ["item": 1])) }
        while mock.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        let cancelled = ContinuousClock.now
        call.cancel()
        #expect(await call.value.error?.code == .cancelled)
        // Far short of the ten minutes asked for, with room for a loaded machine.
        #expect(ContinuousClock.now - cancelled < .seconds(60))
        #expect(mock.requests.count == 1)
    }

    /// Over the engine against the test API: a 403 with Retry-After is retried and a plain
    /// one is not; a POST refused with a 429 and Retry-After is sent again, with no key.
    @Test func overTheEngine() async throws {
        struct Done: Decodable { var attempts: Int; var idempotencyKey: String? }
        var policy = RetryPolicy(baseDelay: .milliseconds(1), budget: nil)
        policy.retriesAnyMethodWhenAsked = true
        let client = try await SharedAPI.client(.init(coders: .json(keys: .snakeCase), middleware: [RetryMiddleware(policy)]))
        let key = UUID().uuidString
        func flaky(_ key: String, _ status: String, after: String = "0") -> [QueryItem] {
            [QueryItem("key", key), QueryItem("fail", "1"), QueryItem("status", status), QueryItem("after", after)]
        }
        let limited = try await client.value(Endpoint<Done>.get("/flaky", query: flaky(key + "-limited", "403")))
        #expect(limited.attempts == 2)

        let denied = Endpoint<Done>.get("/flaky", query: flaky(key + "-denied", "403", after: "none"))
        #expect(await client.outcome(denied).error?.status?.code == 403)
        #expect(try await client.value(denied).attempts == 2, "the server saw one request before this one")

        let posted = try await client.value(Endpoint<Done>.post("/flaky", body: ["n": 1], query: flaky(key + "-post", "429")))
        #expect(posted.attempts == 2)
        #expect(posted.idempotencyKey == nil)
    }

    // MARK: The decision alone

    /// The policy's decision as a table: status, Retry-After, method in; a wait (asked or
    /// backoff) or nothing out.
    @Test func theDecision() {
        var policy = RetryPolicy(baseDelay: .zero, budget: nil)
        let table: [(Int, String?, HTTPRequest.Method, RetryPolicy.Wait?)] = [
            (503, nil, .get, .init(duration: .zero, asked: false)),
            (503, "2", .get, .init(duration: .seconds(2), asked: true)),
            (429, "0", .get, .init(duration: .zero, asked: true)),
            (403, nil, .get, nil),
            (403, "garbage", .get, nil),
            (403, "1", .get, .init(duration: .seconds(1), asked: true)),
            (403, "61", .get, nil),
            (404, "1", .get, nil),
            (429, "1", .post, nil),
            (503, nil, .post, nil),
        ]
        for (status, retryAfter, method, expected) in table {
            #expect(policy.wait(afterStatus: status, retryAfter: retryAfter, method: method, attempt: 1) == expected,
                    "\(status) \(retryAfter ?? "-") \(method)")
        }
        policy.retriesAnyMethodWhenAsked = true
        let anyMethod: [(Int, String?, HTTPRequest.Method, RetryPolicy.Wait?)] = [
            (429, "1", .post, .init(duration: .seconds(1), asked: true)),
            (503, "0", .patch, .init(duration: .zero, asked: true)),
            (403, "0", .post, .init(duration: .zero, asked: true)),
            (429, nil, .post, nil),
            (500, "0", .post, nil),
            (408, "0", .post, nil),
            (403, nil, .post, nil),
        ]
        for (status, retryAfter, method, expected) in anyMethod {
            #expect(policy.wait(afterStatus: status, retryAfter: retryAfter, method: method, attempt: 1) == expected,
                    "\(status) \(retryAfter ?? "-") \(method)")
        }
    }
}
