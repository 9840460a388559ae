import SalvoTestSupport
import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore

/// Clients and loops coming and going: nothing hangs, nothing crashes, nothing is lost.
@Suite struct LifecycleTests {
    @Test(arguments: [262_144 + 100, 1 << 20])
    func connectionPausedByASlowStreamIsReusedAfterwards(size: Int) async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        for _ in 0..<3 {
            // Just over the stream's 256 KiB high-water mark: the read that pauses the
            // connection is the one that also ends the response.
            let response = try await client.stream(try get(server.url("/big?n=\(size)")))
            try await Task.sleep(for: .milliseconds(100))
            var total = 0
            for try await chunk in response.body { total += chunk.count }
            #expect(total == size)
            let next = try await client.execute(try get(server.url("/ok")), options: .init(timeout: .seconds(3)))
            #expect(next.text == "hello")
        }
        #expect(await client.poolStatistics().connectionsOpened == 1)
    }

    /// A request's owner is its cancellation handle: once the request is over — a plain
    /// response, a redirect chain, a failure — nothing keeps it alive but a handle the caller
    /// holds, and that handle does not hold the response.
    @Test func aFinishedRequestLeavesNothingBehind() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.redirects = .follow }
        defer { client.shutdown() }
        for path in ["/ok", "/redirect?to=/ok", "/reset"] {
            let finished = Mutex<Result<CollectedResponse, TransportError>?>(nil)
            let handle = client.execute(try get(server.url(path)), options: .init(timeout: .seconds(5))) { result in
                finished.withLock { $0 = result }
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while finished.withLock({ $0 == nil }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            // The owner cleared these before it called the completion handler; the lock orders the reads.
            weak let owner = handle.owner
            #expect(owner != nil, "\(path): the handle keeps its request's owner")
            #expect(owner?.collected.body.isEmpty == true, "\(path): the handle keeps the body")
            #expect(owner?.collected.head == nil, "\(path): the handle keeps the head")
            _ = consume handle
            // The loop lets go of it right after the completion handler returns.
            while owner != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(owner == nil, "\(path): the finished request's owner is still alive")
            #expect(finished.withLock { $0 } != nil)
        }
    }

    /// A handle kept after its request ended holds nothing of it: not the client (which can
    /// then go away), not the request's body, not the completion handler's captures.
    @Test func aKeptHandleKeepsNeitherClientNorBody() async throws {
        let server = try await Shared.faults.get()
        final class Captured: Sendable {}
        weak let weakClient: HTTPClient?
        weak let weakCaptured: Captured?
        let handle: RequestHandle
        do {
            let client = try makeClient()
            weakClient = client
            let captured = Captured()
            weakCaptured = captured
            let finished = Mutex(false)
            var request = try get(server.url("/ok"))
            request.method = .post
            handle = client.execute(request, body: .bytes(Array(repeating: 7, count: 100_000)), options: .init(timeout: .seconds(5))) { _ in
                _ = captured
                finished.withLock { $0 = true }
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while !finished.withLock({ $0 }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            let owner = try #require(handle.owner)
            let keptBytes = owner.prepared.body.count
            let keptBody = owner.prepared.requestBody != nil
            #expect(keptBytes == 0, "the handle keeps the request's bytes")
            #expect(!keptBody, "the handle keeps the request's body")
            client.shutdown()
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while weakClient != nil || weakCaptured != nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(weakClient == nil, "the handle keeps the client alive")
        #expect(weakCaptured == nil, "the handle keeps the completion handler's captures")
        withExtendedLifetime(handle) {}
    }

    @Test func clientOnASharedGroupCanGoAwayWithTimersPending() async throws {
        let nginx = try await Shared.nginx.get()
        let group = try EventLoopGroup(numberOfThreads: 2)
        defer { group.shutdown() }
        do {
            var configuration = HTTPClient.Configuration()
            configuration.poolWaitTimeout = .milliseconds(100)
            configuration.idleTimeout = .milliseconds(150)
            let client = try HTTPClient(configuration: configuration, eventLoopGroup: group)
            for _ in 0..<4 {
                _ = try await client.execute(try get(nginx.url("/small")))
            }
            client.shutdown()
        }
        // The timers the client armed fire now, on loops that outlive it.
        try await Task.sleep(for: .milliseconds(400))
        let other = try HTTPClient(eventLoopGroup: group)
        #expect(try await other.execute(try get(nginx.url("/small"))).status == .ok)
        other.shutdown()
    }

    @Test func clientOutlivingItsSharedGroupFailsInsteadOfHanging() async throws {
        let nginx = try await Shared.nginx.get()
        let group = try EventLoopGroup(numberOfThreads: 1)
        let client = try HTTPClient(eventLoopGroup: group)
        _ = try await client.execute(try get(nginx.url("/small")))
        group.shutdown()
        let code = await errorCode { _ = try await client.execute(try get(nginx.url("/small"))) }
        #expect(code == .shutdown)
        let streamed = await errorCode { _ = try await client.stream(try get(nginx.url("/small"))) }
        #expect(streamed == .shutdown)
        let completion = await withCheckedContinuation { (continuation: CheckedContinuation<TransportError.Code?, Never>) in
            client.execute(try! get(nginx.url("/small"))) { result in
                if case .failure(let error) = result { continuation.resume(returning: error.code) }
                else { continuation.resume(returning: nil) }
            }
        }
        #expect(completion == .shutdown)
        #expect(await client.poolStatistics() == PoolStatistics())
        client.shutdown()  // must return
    }

    @Test func completionAfterShutdownIsStillCalled() async throws {
        let client = try makeClient()
        client.shutdown()
        let code = await withCheckedContinuation { (continuation: CheckedContinuation<TransportError.Code?, Never>) in
            client.execute(try! get("http://127.0.0.1:1/")) { result in
                if case .failure(let error) = result { continuation.resume(returning: error.code) }
                else { continuation.resume(returning: nil) }
            }
        }
        #expect(code == .shutdown)
    }

    @Test func shutdownFromACompletionHandlerDoesNotDeadlock() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient()
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            client.execute(try! get(nginx.url("/small"))) { result in
                client.shutdown()
                continuation.resume(returning: (try? result.get())?.status.code ?? -1)
            }
        }
        #expect(status == 200)
    }

    @Test func invalidConfigurationIsAnError() {
        var configuration = HTTPClient.Configuration()
        configuration.threads = 0
        #expect(throws: TransportError.self) { try HTTPClient(configuration: configuration) }
        configuration.threads = 1
        configuration.maxConnectionsPerHost = 0
        #expect(throws: TransportError.self) { try HTTPClient(configuration: configuration) }
    }

    @Test func callersConnectionCloseIsHonoured() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        var request = try get(server.url("/ok"))
        request.headerFields[.connection] = "close"
        _ = try await client.execute(request)
        _ = try await client.execute(try get(server.url("/ok")))
        #expect(try server.log().connections == 2)
    }

    /// A shared group stopped under a client's feet: every request on its loops ends with an
    /// error — running, queued, half-read, or with a completion handler — and none hangs.
    @Test func requestsEndWhenTheirSharedGroupStops() async throws {
        let server = try await Shared.faults.get()
        let group = try EventLoopGroup(numberOfThreads: 2)
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = 2
        let client = try HTTPClient(configuration: configuration, eventLoopGroup: group)
        defer { client.shutdown() }
        try await withWatchdog {
            let streamed = try await client.stream(try get(server.url("/stall-body")))
            async let running = errorCode { _ = try await client.execute(try get(server.url("/stall"))) }
            async let queued = errorCode { _ = try await client.execute(try get(server.url("/stall"))) }
            let handled = await withCheckedContinuation { (continuation: CheckedContinuation<TransportError.Code?, Never>) in
                let handle = client.execute(try! get(server.url("/stall"))) { result in
                    if case .failure(let error) = result { continuation.resume(returning: error.code) }
                    else { continuation.resume(returning: nil) }
                }
                Task {
                    try? await Task.sleep(for: .milliseconds(300))
                    group.shutdown()
                    handle.cancel()  // after the loop stopped: nothing to do, and no hang
                }
            }
            #expect(handled == .shutdown)
            #expect(await running == .shutdown)
            #expect(await queued == .shutdown)
            let bodyCode = await errorCode { for try await _ in streamed.body {} }
            #expect(bodyCode == .shutdown)
            // Later requests fail at once.
            #expect(await errorCode { _ = try await client.execute(try get(server.url("/ok"))) } == .shutdown)
        }
    }

    /// A streamed body has one reader: a second iterator, or a second concurrent `next()` on
    /// a copy of the first, is told so at once, and the first reader is unharmed.
    @Test func aResponseBodyIsReadOnce() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        try await withWatchdog {
            let response = try await client.stream(try get(server.url("/chunked")))
            var first = response.body.makeAsyncIterator()
            var second = response.body.makeAsyncIterator()
            #expect(await errorCode { _ = try await second.next() } == .bodyAlreadyIterated)
            var text: [UInt8] = []
            while let chunk = try await first.next() { text += chunk }
            #expect(String(decoding: text, as: UTF8.self) == "hello world")
            #expect(await errorCode { _ = try await response.body.collect(upTo: 100) } == .bodyAlreadyIterated)

            // Two tasks on copies of one iterator while the body stalls.
            let stalled = try await client.stream(try get(server.url("/stall-body")))
            let iterator = stalled.body.makeAsyncIterator()
            let reader = Task {
                var copy = iterator
                var received: [UInt8] = []
                while let chunk = try await copy.next() { received += chunk }
                return received
            }
            try await Task.sleep(for: .milliseconds(200))
            var other = iterator
            #expect(await errorCode { _ = try await other.next() } == .bodyAlreadyIterated)
            reader.cancel()
            let outcome = await reader.result
            #expect((try? outcome.get()) == nil, "the first reader ends with its cancellation, not a hang")
        }
    }
}
