import SalvoTestSupport
import HTTPTypes
import Testing
@testable import SalvoCore

/// A host's connection limit is shared by all of a client's loops: a request never waits on
/// one loop while another loop's connection to the host sits idle.
@Suite(.serialized) struct PoolSharingTests {
    @Test func aLoopBorrowsThePlaceOfAnotherLoopsIdleConnection() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let group = try EventLoopGroup(numberOfThreads: 2)
        defer { group.shutdown() }
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = 2
        configuration.poolWaitTimeout = .seconds(2)
        let client = try HTTPClient(configuration: configuration, eventLoopGroup: group)
        defer { client.shutdown() }
        try await withWatchdog {
            // Loop 0's connection is busy for longer than the pool wait timeout.
            let long = Task(executorPreference: group.loops[0]) {
                try await client.execute(try get(server.url("/slow-head?ms=4000")))
            }
            try await Task.sleep(for: .milliseconds(200))
            // Loop 1 makes the second connection, which then sits idle there.
            let onLoop1 = Task(executorPreference: group.loops[1]) { try await client.execute(try get(server.url("/ok"))) }
            #expect(try await onLoop1.value.status == .ok)
            // A request made on loop 0 itself: the budget is spent, so it moves to loop 1's idle
            // connection (before, loop 0 owned half the limit and the request waited out the
            // pool timeout).
            let onLoop0 = Task(executorPreference: group.loops[0]) { try await client.execute(try get(server.url("/ok"))) }
            #expect(try await onLoop0.value.status == .ok)
            // From outside the loops: placed where the idle connection is, and reused.
            for _ in 0..<4 {
                #expect(try await client.execute(try get(server.url("/ok"))).status == .ok)
            }
            #expect(try await long.value.status == .ok)
        }
        #expect(try server.log().connections == 2, "the long one, and loop 1's, which served the rest")
    }

    /// Many requests from outside the loops against a small limit: all served, never more
    /// connections than the limit, and no request times out while connections are free.
    @Test func theLimitHoldsAcrossLoops() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.threads = 2
        configuration.maxConnectionsPerHost = 3
        configuration.poolWaitTimeout = .seconds(10)
        let client = try HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        try await withWatchdog {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<60 {
                    group.addTask {
                        let path = index % 10 == 0 ? "/slow-head?ms=150" : "/ok"
                        let response = try await client.execute(try get(server.url(path)))
                        #expect(response.status == .ok)
                    }
                }
                try await group.waitForAll()
            }
        }
        // Requests waiting on one loop move to another loop's idle connections rather than
        // closing them and connecting anew.
        #expect(try server.log().connections <= 4)
        #expect(await client.poolStatistics().openConnections <= 3)
    }

    /// Loops flooded with requests hold every place of the limit; a request on another loop
    /// still gets a connection instead of waiting for the flood to end — with a limit below the
    /// number of busy loops too.
    @Test(arguments: [(loops: 2, limit: 2), (loops: 2, limit: 1), (loops: 3, limit: 2)])
    func busyLoopsLetAWaitingLoopIn(loops: Int, limit: Int) async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let group = try EventLoopGroup(numberOfThreads: loops)
        defer { group.shutdown() }
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = limit
        // Far shorter than the flood: a request that waited for the flood to end would fail.
        configuration.poolWaitTimeout = .seconds(5)
        let client = try HTTPClient(configuration: configuration, eventLoopGroup: group)
        defer { client.shutdown() }
        let flooding = ContinuousClock.now + .seconds(15)
        let flood = (0..<6).map { index in
            Task(executorPreference: group.loops[1 + index % (loops - 1)]) {
                while ContinuousClock.now < flooding && !Task.isCancelled {
                    _ = try await client.execute(try get(server.url("/slow-head?ms=30")))
                }
            }
        }
        // Until the flood holds every place of the limit.
        let settled = ContinuousClock.now + .seconds(10)
        while await client.poolStatistics().hosts.values.reduce(0, { $0 + $1.leased }) < limit, ContinuousClock.now < settled {
            try await Task.sleep(for: .milliseconds(10))
        }
        let onLoop0 = Task(executorPreference: group.loops[0]) { try await client.execute(try get(server.url("/ok"))) }
        let result = await onLoop0.result
        // Counted before the flood is cancelled: a cancelled request closes its connection,
        // and the flood's next request on another task opens a new one.
        let opened = await client.poolStatistics().connectionsOpened
        for task in flood { task.cancel() }
        for task in flood { _ = await task.result }
        #expect((try? result.get())?.status == .ok, "\(result)")
        // Requests moved to where the connections were: no new connection per hand-over.
        #expect(opened <= limit + 2, "\(opened) connections for a limit of \(limit)")
    }

    /// A request that moved to another loop's idle connection can still be cancelled there.
    @Test func aMovedRequestCanBeCancelled() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let group = try EventLoopGroup(numberOfThreads: 2)
        defer { group.shutdown() }
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = 2
        let client = try HTTPClient(configuration: configuration, eventLoopGroup: group)
        defer { client.shutdown() }
        try await withWatchdog {
            let long = Task(executorPreference: group.loops[0]) { try await client.execute(try get(server.url("/slow-head?ms=3000"))) }
            try await Task.sleep(for: .milliseconds(200))
            _ = try await Task(executorPreference: group.loops[1]) { try await client.execute(try get(server.url("/ok"))) }.value
            // Made on loop 0, run on loop 1's idle connection, against a server that never answers.
            let moved = Task(executorPreference: group.loops[0]) { try await client.execute(try get(server.url("/stall"))) }
            try await Task.sleep(for: .milliseconds(300))
            moved.cancel()
            let code = await errorCode { _ = try await moved.value }
            #expect(code == .cancelled)
            _ = try await long.value
        }
    }
}
