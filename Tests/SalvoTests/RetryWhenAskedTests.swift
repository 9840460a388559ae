import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// Retries the server asks for with `Retry-After`: a status that is a retry signal only with
/// the field (GitHub's 403 rate limit).
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

    /// Over the engine against the test API: a 403 with Retry-After is retried and a plain
    /// one is not.
    @Test func overTheEngine() async throws {
        struct Done: Decodable { var attempts: Int; var idempotencyKey: String? }
        let policy = RetryPolicy(baseDelay: .milliseconds(1), budget: nil)
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
    }

    // MARK: The decision alone

    /// The policy's decision as a table: status, Retry-After, method in; a wait (asked or
    /// backoff) or nothing out.
    @Test func theDecision() {
        let policy = RetryPolicy(baseDelay: .zero, budget: nil)
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
    }
}
