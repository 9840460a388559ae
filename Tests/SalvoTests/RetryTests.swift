import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// The retry middleware over the mock: what is retried, how often, within which time.
@Suite struct RetryTests {
    /// A mock that answers `failures` times with `status` (and `headers`), then 200 "ok".
    func flaky(_ failures: Int, status: HTTPResponse.Status = .serviceUnavailable, headers: HTTPFields = [:]) -> MockTransport {
        let mock = MockTransport()
        let count = Mutex(0)
        mock.fallback { _ in
            let seen = count.withLock { value in value += 1; return value }
            return seen <= failures ? MockTransport.Reply(status: status, headerFields: headers, body: Array("busy".utf8)) : .text("ok")
        }
        return mock
    }

    func client(_ mock: MockTransport, _ policy: RetryPolicy, timeout: Duration? = nil) throws -> Client {
        try Client(baseURL: "http://api.test", transport: mock, configuration: .init(timeout: timeout, middleware: [RetryMiddleware(policy)]))
    }

    static let quick = RetryPolicy(baseDelay: .milliseconds(1), budget: nil)

    @Test func retryableStatusesAreRetriedUpToTheLimit() async throws {
        let twice = self.flaky(2)
        #expect(try await self.client(twice, Self.quick).value(Endpoint<String>.get("/x")) == "ok")
        #expect(twice.requests.count == 3)

        let thrice = self.flaky(3)
        let (_, error) = try await self.client(thrice, Self.quick).outcome(Endpoint<String>.get("/x"))
        #expect(error?.status?.code == 503 && error?.responseBody == Array("busy".utf8), "the last answer is the caller's")
        #expect(thrice.requests.count == 3)

        let notFound = self.flaky(1, status: .notFound)
        #expect(try await self.client(notFound, Self.quick).outcome(Endpoint<String>.get("/x")).error?.status?.code == 404)
        #expect(notFound.requests.count == 1, "a 404 is not retried")
    }

    @Test func postIsRetriedOnlyWithAnIdempotencyKey() async throws {
        let plain = self.flaky(1)
        #expect(try await self.client(plain, Self.quick).outcome(Endpoint<String>.post("/pay", body: ["cents": 100])).error?.status?.code == 503)
        #expect(plain.requests.count == 1)

        var keyed = Self.quick
        keyed.idempotencyKeys = true
        let withKeys = self.flaky(2)
        #expect(try await self.client(withKeys, keyed).value(Endpoint<String>.post("/pay", body: ["cents": 100])) == "ok")
        let keys = withKeys.requests.map { $0.headerFields[HTTPField.Name("Idempotency-Key")!] }
        #expect(keys.count == 3 && keys[0] != nil && Set(keys).count == 1, "one key for every attempt: \(keys)")
    }

    @Test func transportFailures() async throws {
        let refused = MockTransport(always: .text("ok"))
        refused.fail(nil, "/x", times: 2, with: TransportError(.connectionRefused))
        // Refused: nothing was sent, so even a POST goes again.
        #expect(try await self.client(refused, Self.quick).value(Endpoint<String>.post("/x", body: ["a": 1])) == "ok")
        let reset = MockTransport(always: .text("ok"))
        reset.fail(nil, "/x", times: 1, with: TransportError(.readFailed, phase: .readHead))
        // A POST that may have been processed is not sent again; a GET is.
        #expect(try await self.client(reset, Self.quick).outcome(Endpoint<String>.post("/x", body: ["a": 1])).error?.code == .transportFailed)
        reset.fail(nil, "/x", times: 1, with: TransportError(.readFailed, phase: .readHead))
        #expect(try await self.client(reset, Self.quick).value(Endpoint<String>.get("/x")) == "ok")
        // A streamed body that cannot be replayed is sent once.
        let once = MockTransport(always: .text("ok"))
        once.fail(nil, "/x", times: 1, with: TransportError(.connectionRefused))
        let stream = HTTPBody.stream(AsyncStream<[UInt8]> { $0.yield([1]); $0.finish() })
        #expect(try await self.client(once, Self.quick).outcome(Endpoint<String>.put("/x", body: stream)).error?.code == .transportFailed)
        #expect(once.requests.count == 1)
    }

    /// A failure that the same request would meet again is returned after one attempt, even
    /// when nothing was sent (a certificate that does not verify); a transient one is retried.
    @Test func onlyTransientTransportFailuresAreRetried() async throws {
        #expect(ClientError.transport(TransportError(.readFailed)).isTransient)
        #expect(!ClientError.transport(TransportError(.redirectLoop)).isTransient)
        #expect(!ClientError.transport(.cancelled(.caller)).isTransient)
        #expect(!ClientError(.unacceptableStatus).isTransient, "no transport error: not the transport's to judge")
        for code in [TransportError.Code.redirectLoop, .redirectRefused, .tooManyRedirects, .tlsCertificateInvalid,
                     .tlsPinMismatch, .invalidResponse, .proxyAuthenticationRequired] {
            let mock = MockTransport(always: .text("ok"))
            mock.fail(nil, "/x", times: 1, with: TransportError(code, phase: .connect))
            let error = try await self.client(mock, Self.quick).outcome(Endpoint<String>.get("/x")).error
            #expect(error?.transportError?.code == code)
            #expect(mock.requests.count == 1, "\(code): \(mock.requests.count) attempts")
        }
        for code in [TransportError.Code.connectTimeout, .readTimeout, .emptyResponse, .truncatedBody, .proxyTunnelFailed] {
            let mock = MockTransport(always: .text("ok"))
            mock.fail(nil, "/x", times: 2, with: TransportError(code, phase: .readHead))
            #expect(try await self.client(mock, Self.quick).value(Endpoint<String>.get("/x")) == "ok", "\(code)")
            #expect(mock.requests.count == 3, "\(code)")
        }
    }

    @Test func retryAfterIsReadInBothForms() {
        let now = Date(timeIntervalSince1970: 784_111_777)   // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter.delay("120", now: now) == .seconds(120))
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:50:37 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.delay("Sunday, 06-Nov-94 08:51:37 GMT", now: now) == .seconds(120))
        #expect(RetryAfter.delay("Sun Nov  6 08:49:47 1994", now: now) == .seconds(10))
        #expect(RetryAfter.delay("Sat, 05 Nov 1994 08:49:37 GMT", now: now) == .zero, "a date in the past: now")
        #expect(RetryAfter.delay("0000000005", now: now) == .seconds(5))
        #expect(RetryAfter.delay("Sunday, 06-Nov-1994 08:51:37 GMT", now: now) == .seconds(120))
        #expect(RetryAfter.delay("Tue, 31 Feb 1995 08:49:37 GMT", now: now) == nil)
        for garbage in ["", "soon", "-5", "1.5", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "99999999999999999999999"] {
            #expect(RetryAfter.delay(garbage, now: now) == (garbage.hasPrefix("9999") ? .seconds(999_999_999) : nil), "\(garbage)")
        }
    }

    /// Full jitter under the ceiling; settings far past any sense neither trap nor wait past a day.
    @Test func backoffStaysInItsBounds() {
        let policy = RetryPolicy(baseDelay: .milliseconds(100), maxDelay: .seconds(1))
        for retry in 1...40 {
            let delay = policy.backoff(before: retry)
            #expect(delay >= .zero && delay <= Swift.min(.seconds(1), .milliseconds(100) * (1 << Swift.min(retry - 1, 30))), "retry \(retry)")
        }
        let absurd = RetryPolicy(baseDelay: .seconds(Int64.max / 4), maxDelay: .seconds(Int64.max / 2))
        for retry in [1, 31, Int.max] { #expect(absurd.backoff(before: retry) <= .seconds(86_400)) }
        #expect(RetryPolicy(baseDelay: .seconds(-5)).backoff(before: 3) == .zero)
    }

    @Test func aRetryAfterBeyondTheCapReturnsTheAnswer() async throws {
        let later = self.flaky(1, headers: [.retryAfter: "3600"])
        #expect(try await self.client(later, Self.quick).outcome(Endpoint<String>.get("/x")).error?.status?.code == 503)
        #expect(later.requests.count == 1)
        let soon = self.flaky(1, headers: [.retryAfter: "0"])
        #expect(try await self.client(soon, Self.quick).value(Endpoint<String>.get("/x")) == "ok")
    }

    /// The call's timeout spans every attempt: with attempts that could go on for seconds,
    /// the call ends near its timeout, having sent only what fitted.
    @Test func theDeadlineSpansTheAttempts() async throws {
        let always = self.flaky(1000)
        let policy = RetryPolicy(maxAttempts: 100, baseDelay: .milliseconds(100), maxDelay: .milliseconds(100), budget: nil)
        let (_, error) = try await self.client(always, policy, timeout: .milliseconds(300)).outcome(Endpoint<String>.get("/x"))
        #expect(error?.status?.code == 503)
        #expect(always.requests.count < 20, "\(always.requests.count) attempts for 300 ms")
    }

    /// An outage: 200 calls that all get 503. Without a budget each would be tried 3 times;
    /// with one, retries stay near 10% of the calls (plus the floor).
    @Test func theBudgetKeepsAnOutageFromMultiplying() async throws {
        let down = MockTransport(always: MockTransport.Reply(status: .serviceUnavailable))
        // No floor here, so that the count does not depend on how long the loop takes.
        let policy = RetryPolicy(baseDelay: .microseconds(10), budget: RetryBudget(ratio: 0.1, minimumPerSecond: 0))
        let client = try self.client(down, policy)
        for _ in 0..<200 { _ = await client.outcome(Endpoint<Empty>.get("/x")) }
        let retries = down.requests.count - 200
        #expect(retries <= 20, "\(retries) retries for 200 calls")
        #expect(retries >= 15)
        // The floor: a few retries a second even with no tokens.
        let floor = RetryBudget(ratio: 0, minimumPerSecond: 2)
        #expect(floor.withdraw() && floor.withdraw())
        #expect((0..<5).filter { _ in floor.withdraw() }.count <= 2, "at most one more second's worth")
    }

    /// Over the engine against the test API: a 503 with Retry-After (as seconds, and as a
    /// date already past), then an answer; the POST's key is the same on every attempt.
    @Test func overTheEngine() async throws {
        struct Done: Decodable { var attempts: Int; var idempotencyKey: String? }
        var policy = RetryPolicy(idempotencyKeys: true, budget: nil)
        policy.baseDelay = .milliseconds(1)
        let client = try await SharedAPI.client(.init(coders: .json(keys: .snakeCase), middleware: [RetryMiddleware(policy)]))
        let key = UUID().uuidString
        let done = try await client.value(Endpoint<Done>.get("/flaky", query: [QueryItem("key", key), QueryItem("fail", "2")]))
        #expect(done.attempts == 3)
        let past = "Sun, 06 Nov 1994 08:49:37 GMT"
        let posted = try await client.value(Endpoint<Done>.post("/flaky", body: ["n": 1], query: [
            QueryItem("key", key + "-post"), QueryItem("fail", "1"), QueryItem("after", past)]))
        #expect(posted.attempts == 2)
        #expect(posted.idempotencyKey?.isEmpty == false)
    }

    /// A call's own timeout, longer than the client's, holds for every attempt.
    @Test func aLongerCallTimeoutHolds() async throws {
        let mock = MockTransport(always: MockTransport.Reply.text("late").delayed(by: .milliseconds(150)))
        let client = try self.client(mock, Self.quick, timeout: .milliseconds(50))
        #expect(try await client.value(Endpoint<String>.get("/x"), options: .init(timeout: .seconds(5))) == "late")
        #expect(await client.outcome(Endpoint<String>.get("/x")).error?.transportError?.code == .totalTimeout)
    }

    @Test func cancellingEndsTheWait() async throws {
        let later = self.flaky(1, headers: [.retryAfter: "30"])
        let client = try self.client(later, RetryPolicy(budget: nil))
        let call = Task { await client.outcome(Endpoint<String>.get("/x")) }
        while later.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        call.cancel()
        #expect(await call.value.error?.code == .cancelled)
    }
}
