import SalvoTestSupport
import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore

@Suite struct NginxTests {
    @Test func keepAliveRequestsReuseOneConnection() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        for _ in 0..<20 {
            let response = try await client.execute(try get(nginx.url("/small")))
            #expect(response.status == .ok)
            #expect(response.text == "hello, world\n")
        }
        let statistics = await client.poolStatistics()
        #expect(statistics.connectionsOpened == 1)
        #expect(statistics.connectionsReused == 19)
    }

    /// 500 callers, 10,000 requests, a pool of 4 connections: every request answered,
    /// never more than 4 connections open, the rest waiting in the pool's queue.
    @Test func aSmallPoolServesManyCallers() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient { $0.threads = 2; $0.maxConnectionsPerHost = 4; $0.poolWaitTimeout = .seconds(120) }
        defer { client.shutdown() }
        let request = try get(nginx.url("/small"))
        let mostOpen = Mutex(0)
        let mostQueued = Mutex(0)
        let watching = Mutex(true)
        let watcher = Task {
            while watching.withLock({ $0 }) {
                for host in await client.poolStatistics().hosts.values {
                    mostOpen.withLock { $0 = Swift.max($0, host.open) }
                    mostQueued.withLock { $0 = Swift.max($0, host.queued) }
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        let answered = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<500 {
                group.addTask {
                    var ok = 0
                    for _ in 0..<20 where (try? await client.execute(request))?.status == .ok { ok += 1 }
                    return ok
                }
            }
            return await group.reduce(0, +)
        }
        watching.withLock { $0 = false }
        await watcher.value
        #expect(answered == 10_000)
        #expect(mostOpen.withLock { $0 } <= 4, "at most the pool's 4 connections")
        #expect(mostQueued.withLock { $0 } <= 500, "at most one waiting request per caller")
    }

    @Test func largeBodyArrivesIntact() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let response = try await client.execute(try get(nginx.url("/1m")))
        #expect(response.status == .ok)
        #expect(response.body == (try nginx.contents(of: "1m")))
    }

    @Test func headThenGetOnTheSameConnection() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        let head = try await client.execute(try HTTPRequest(method: .head, url: nginx.url("/64k")))
        #expect(head.status == .ok)
        #expect(head.head.headerFields[.contentLength] == "65536")
        #expect(head.body.isEmpty)
        let body = try await client.execute(try get(nginx.url("/64k")))
        #expect(body.body == (try nginx.contents(of: "64k")))
        #expect(await client.poolStatistics().connectionsOpened == 1)
    }

    @Test func errorStatusIsAResponseNotAnError() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let response = try await client.execute(try get(nginx.url("/status/404")))
        #expect(response.status.code == 404)
    }

    @Test func thousandConcurrentRequestsThroughSixteenConnections() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient { $0.maxConnectionsPerHost = 16 }
        defer { client.shutdown() }
        let request = try get(nginx.url("/1k"))
        let expected = try nginx.contents(of: "1k")
        let correct = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<1000 {
                group.addTask {
                    guard let response = try? await client.execute(request) else { return false }
                    return response.status == .ok && response.body == expected
                }
            }
            var count = 0
            for await ok in group where ok { count += 1 }
            return count
        }
        #expect(correct == 1000)
        let statistics = await client.poolStatistics()
        let host = statistics.hosts.values.first ?? HostPoolStatistics()
        // Never more than 16 at once. More may be opened in all: a loop can hand an idle
        // connection's place to another loop whose callers wait (more often on a machine too
        // busy to run them all at once), closing it for the other to open one.
        #expect(try client.peakOpenConnections(to: request.connectionKey()).map { $0 <= 16 } == true, "\(host)")
        #expect(statistics.connectionsOpened <= 32, "\(host)")
        #expect(statistics.connectionsOpened + statistics.connectionsReused == 1000)
    }

    @Test func streamingWithASlowConsumer() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let response = try await client.stream(try get(nginx.url("/1m")))
        #expect(response.status == .ok)
        var received: [UInt8] = []
        var chunks = 0
        for try await chunk in response.body {
            received += chunk
            chunks += 1
            if chunks % 4 == 0 { try await Task.sleep(for: .milliseconds(2)) }
        }
        #expect(received == (try nginx.contents(of: "1m")))
    }

    @Test func completionHandlerRunsOnTheLoopThread() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let request = try get(nginx.url("/small"))
        let (status, onLoop) = await withCheckedContinuation { (continuation: CheckedContinuation<(Int, Bool), Never>) in
            client.execute(request) { result in
                let onLoop = EventLoop.current != nil
                continuation.resume(returning: ((try? result.get())?.status.code ?? -1, onLoop))
            }
        }
        #expect(status == 200)
        #expect(onLoop)
    }

    @Test func requestBodyIsSent() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient()
        defer { client.shutdown() }
        var request = try HTTPRequest(method: .post, url: nginx.url("/sink"))
        request.headerFields[.contentType] = "application/octet-stream"
        let response = try await client.execute(request, body: .bytes([UInt8](repeating: 7, count: 100_000)))
        #expect(response.status == .ok)
    }

    @Test func localhostResolvesThroughTheResolver() async throws {
        let nginx = try await Shared.nginx.get()
        let client = try makeClient()
        defer { client.shutdown() }
        // nginx listens on 127.0.0.1 only; "localhost" may resolve to ::1 first, which
        // refuses, and the connector must go on to the next address.
        let response = try await client.execute(try get("http://localhost:\(nginx.port)/small"))
        #expect(response.status == .ok)
    }
}
