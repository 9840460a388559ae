import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore

/// HTTP/1.1 pipelining against the fault server (which answers pipelined requests in order
/// and says on which connection and in which place each came): answers go to the right
/// requests, a connection that closes mid-pipeline leaves nobody unanswered, a cancelled
/// request in line costs the others nothing, and requests that are not idempotent stay out.
@Suite(.serialized) struct PipeliningTests {
    func pipeliningClient(depth: Int = 8) throws -> HTTPClient {
        try makeClient {
            $0.threads = 1
            $0.maxConnectionsPerHost = 1
            $0.pipeliningDepth = depth
            $0.requestTimeout = .seconds(30)
        }
    }

    static func echo(_ response: CollectedResponse) throws -> FaultServerLog.Request {
        try JSONDecoder().decode(FaultServerLog.Request.self, from: Data(response.body))
    }

    /// Starts `slow` (which holds the only connection for a while), then `count` echo requests
    /// that queue behind it; returns their answers by index.
    func burstBehind(_ slow: String, count: Int, client: HTTPClient, server: FaultServer,
                     path: @escaping @Sendable (Int) -> String = { "/echo?i=\($0)" }) async throws -> [Int: CollectedResponse] {
        try await withThrowingTaskGroup(of: (Int, CollectedResponse).self) { group in
            group.addTask { (-1, try await client.execute(try get(server.url(slow)))) }
            try await Task.sleep(for: .milliseconds(100))
            for index in 0..<count {
                group.addTask { (index, try await client.execute(try get(server.url(path(index))))) }
            }
            var answers: [Int: CollectedResponse] = [:]
            for try await (index, response) in group { answers[index] = response }
            return answers
        }
    }

    @Test func answersReachTheirRequestsInOrder() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        let client = try self.pipeliningClient()
        defer { client.shutdown() }
        // A connection is pipelined on only once it has kept a response alive.
        _ = try await client.execute(try get(server.url("/ok")))
        let answers = try await self.burstBehind("/slow-head?ms=1500", count: 20, client: client, server: server)
        for index in 0..<20 {
            let answer = try Self.echo(try #require(answers[index]))
            #expect(answer.path == "/echo?i=\(index)")
        }
        let statistics = await client.poolStatistics()
        let host = try #require(statistics.hosts.values.first)
        #expect(host.opened == 1)
        #expect(host.pipelined > 0, "\(host)")
        #expect(host.requestsCompleted == 22 && host.requestsFailed == 0)
        // The server saw them on one connection, several in flight at once.
        let log = try server.log()
        #expect(log.connections == 1)
    }

    @Test func aConnectionClosingMidPipelineLeavesNobodyUnanswered() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        let client = try self.pipeliningClient()
        defer { client.shutdown() }
        _ = try await client.execute(try get(server.url("/ok")))
        // The first request in line is answered and then the connection closed silently, with
        // the others in line behind it: they go again, on a fresh connection.
        let answers = try await withThrowingTaskGroup(of: (Int, CollectedResponse).self) { group in
            group.addTask { (-1, try await client.execute(try get(server.url("/slow-head?ms=1500")))) }
            try await Task.sleep(for: .milliseconds(100))
            group.addTask { (3, try await client.execute(try get(server.url("/close-after?n=1")))) }
            try await Task.sleep(for: .milliseconds(50))
            for index in 0..<12 where index != 3 {
                group.addTask { (index, try await client.execute(try get(server.url("/echo?i=\(index)")))) }
            }
            var answers: [Int: CollectedResponse] = [:]
            for try await (index, response) in group { answers[index] = response }
            return answers
        }
        for index in 0..<12 where index != 3 {
            #expect(try Self.echo(try #require(answers[index])).path == "/echo?i=\(index)")
        }
        #expect(answers[3]?.text == "ok")
        let host = try #require(await client.poolStatistics().hosts.values.first)
        let seen = try server.log().requests.map { "\($0.connection)/\($0.sequence) \($0.path)" }
        #expect(host.opened >= 2 && host.requestsFailed == 0 && host.pipelined > 0, "\(host) \(seen)")
        // Some requests went out on the first connection and were sent again on another.
        #expect(try server.log().connections >= 2)
    }

    @Test func aCancelledRequestInLineCostsTheOthersNothing() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        let client = try self.pipeliningClient()
        defer { client.shutdown() }
        _ = try await client.execute(try get(server.url("/ok")))
        let results = try await withThrowingTaskGroup(of: (Int, Result<CollectedResponse, TransportError>).self) { group in
            func run(_ index: Int, _ path: String) {
                group.addTask {
                    do { return (index, .success(try await client.execute(try get(server.url(path))))) } catch let error as TransportError {
                        return (index, .failure(error))
                    }
                }
            }
            // Slow enough that the line is still waiting when the cancel comes, however busy
            // the machine: each step waits for the pool to say the line has grown.
            run(-1, "/slow-head?ms=3000")
            try await Task.sleep(for: .milliseconds(100))
            for index in 0..<3 { run(index, "/echo?i=\(index)") }
            try await Self.waitForPipelined(3, client)
            // The one to cancel: in line behind the slow one.
            let victim = Task { try await client.execute(try get(server.url("/echo?i=victim"))) }
            try await Self.waitForPipelined(4, client)
            victim.cancel()
            let cancelled = await victim.result
            #expect((try? cancelled.get()) == nil)
            for index in 3..<6 { run(index, "/echo?i=\(index)") }
            var results: [Int: Result<CollectedResponse, TransportError>] = [:]
            for try await (index, result) in group { results[index] = result }
            return results
        }
        for index in 0..<6 {
            let response = try #require(try results[index]?.get())
            #expect(try Self.echo(response).path == "/echo?i=\(index)")
        }
        #expect(try results[-1]?.get().text == "ok")
        let host = try #require(await client.poolStatistics().hosts.values.first)
        #expect(host.pipelined >= 4 && host.requestsFailed == 1, "\(host)")
    }

    /// Waits (up to 10 s) until `count` requests have gone into lines.
    static func waitForPipelined(_ count: Int, _ client: HTTPClient) async throws {
        for _ in 0..<1000 {
            if await client.poolStatistics().hosts.values.first.map({ $0.pipelined >= count }) == true { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("fewer than \(count) requests went into a line")
    }

    @Test func requestsThatAreNotIdempotentStayOutOfPipelines() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        let client = try self.pipeliningClient()
        defer { client.shutdown() }
        _ = try await client.execute(try get(server.url("/ok")))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await client.execute(try get(server.url("/slow-head?ms=200"))) }
            try await Task.sleep(for: .milliseconds(50))
            for index in 0..<6 {
                group.addTask {
                    let request = try HTTPRequest(method: .post, url: server.url("/echo?i=\(index)"))
                    let response = try await client.execute(request, body: .bytes(Array("payload \(index)".utf8)))
                    #expect(try Self.echo(response).path == "/echo?i=\(index)")
                }
            }
            try await group.waitForAll()
        }
        let host = try #require(await client.poolStatistics().hosts.values.first)
        #expect(host.pipelined == 0)
        #expect(host.requestsCompleted == 8)
    }

    /// Runs `behind` (its requests queue in line) while a 1.5 s request holds the only
    /// connection, which must still answer "ok".
    func whileSlow(_ client: HTTPClient, _ server: FaultServer,
                   _ behind: @escaping @Sendable (inout ThrowingTaskGroup<Void, any Error>) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                let response = try await client.execute(try get(server.url("/slow-head?ms=10000")))
                #expect(response.text == "ok")
            }
            try await Task.sleep(for: .milliseconds(100))
            try await behind(&group)
            try await group.waitForAll()
        }
    }

    @Test func aPipelinedRequestKeepsItsOwnTimeout() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        let client = try self.pipeliningClient()
        defer { client.shutdown() }
        _ = try await client.execute(try get(server.url("/ok")))
        try await self.whileSlow(client, server) { group in
            group.addTask {
                let response = try await client.execute(try get(server.url("/echo?i=patient")))
                #expect(try Self.echo(response).path == "/echo?i=patient")
            }
            group.addTask {
                let start = ContinuousClock.now
                let code = await errorCode {
                    _ = try await client.execute(try get(server.url("/echo?i=hurried")), options: .init(timeout: .milliseconds(300)))
                }
                #expect(code == .totalTimeout)
                #expect(ContinuousClock.now - start < .seconds(7), "it waited for the slow answer")
            }
        }
        let host = try #require(await client.poolStatistics().hosts.values.first)
        #expect(host.pipelined >= 2, "\(host)")
    }

    /// Without any request timeout, a request in line waits no longer than it could have
    /// waited in the pool.
    @Test func waitingInLineIsBoundedByThePoolWait() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        let client = try makeClient {
            $0.threads = 1
            $0.maxConnectionsPerHost = 1
            $0.pipeliningDepth = 4
            $0.poolWaitTimeout = .milliseconds(300)
        }
        defer { client.shutdown() }
        _ = try await client.execute(try get(server.url("/ok")))
        try await self.whileSlow(client, server) { group in
            group.addTask {
                let start = ContinuousClock.now
                let code = await errorCode { _ = try await client.execute(try get(server.url("/echo?i=inline"))) }
                #expect(code == .poolWaitTimeout)
                #expect(ContinuousClock.now - start < .seconds(7), "it waited for the slow answer")
            }
        }
        let host = try #require(await client.poolStatistics().hosts.values.first)
        #expect(host.pipelined == 1)
    }

    /// A POST waiting for the busy connection is not overtaken by GETs that arrive after it:
    /// they queue behind it rather than join the line, and it runs once the line is answered.
    @Test func aWaitingPostIsNotOvertaken() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        let client = try self.pipeliningClient()
        defer { client.shutdown() }
        _ = try await client.execute(try get(server.url("/ok")))
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Each step waits for the state the next one needs, not for a time: the slow
            // request on the connection, the early GET in its line, the POST queued.
            group.addTask { _ = try await client.execute(try get(server.url("/slow-head?ms=3000"))) }
            try await waitForHost(client) { $0.leased == 1 }
            group.addTask { _ = try await client.execute(try get(server.url("/echo?i=early"))) }
            try await Self.waitForPipelined(1, client)
            group.addTask {
                let post = try HTTPRequest(method: .post, url: server.url("/echo?i=post"))
                _ = try await client.execute(post, body: .bytes(Array("x".utf8)))
            }
            try await waitForHost(client) { $0.queued >= 1 }
            for index in 0..<3 {
                group.addTask { _ = try await client.execute(try get(server.url("/echo?i=late\(index)"))) }
            }
            try await group.waitForAll()
        }
        let order = try server.log().requests.map(\.path)
        let post = try #require(order.firstIndex(of: "/echo?i=post"))
        for index in 0..<3 {
            #expect(try #require(order.firstIndex(of: "/echo?i=late\(index)")) > post, "\(order)")
        }
        #expect(try #require(order.firstIndex(of: "/echo?i=early")) < post)
    }
}
