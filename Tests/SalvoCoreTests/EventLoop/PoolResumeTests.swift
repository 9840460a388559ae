import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore
import SalvoTransport

/// Callers awaiting on Swift's global executor are resumed, at the end of a loop's turn, by
/// one job of the pool's rather than one by one from the loop (see
/// `EventLoop.resume(fromPool:priority:)`): each gets its own result, none is lost.
@Suite(.timeLimit(.minutes(1))) struct PoolResumeTests {
    typealias Waiter = UnsafeContinuation<Result<CollectedResponse, TransportError>, Never>

    /// Defers one caller's resume to the end of the loop's turn, as a collected request does.
    final class Resumer: EndOfTurnWork, @unchecked Sendable {
        // @unchecked Sendable: made on the test's task, then used on the loop only.
        let loop: EventLoop
        let waiter: Waiter
        let code: Int
        init(loop: EventLoop, waiter: Waiter, code: Int) {
            self.loop = loop
            self.waiter = waiter
            self.code = code
        }
        func endOfTurn() {
            self.loop.resume(fromPool: .collected(self.waiter, .success(CollectedResponse(head: HTTPResponse(status: .init(code: self.code)), body: []))),
                             priority: .medium)
        }
    }

    /// Starts `count` tasks on the global executor awaiting a result, and hands their
    /// continuations to `resumeAll` on the loop once every one is waiting.
    final class Waiting: Sendable {
        let waiters = Mutex<[Int: Waiter]>([:])
    }

    func awaitAll(_ count: Int, on loop: EventLoop, resumeAll: @escaping @Sendable ([Waiter]) -> Void) async -> [Int] {
        let waiting = Waiting()
        return await withTaskGroup(of: (Int, Int).self) { group in
            for index in 0..<count {
                group.addTask {
                    let result = await withUnsafeContinuation { (waiter: Waiter) in
                        let all = waiting.waiters.withLock { waiting -> [Waiter]? in
                            waiting[index] = waiter
                            return waiting.count == count ? (0..<count).map { waiting[$0]! } : nil
                        }
                        if let all { loop.execute { resumeAll(all) } }
                    }
                    return (index, (try? result.get())?.status.code ?? -1)
                }
            }
            var codes = [Int](repeating: 0, count: count)
            for await (index, code) in group { codes[index] = code }
            return codes
        }
    }

    @Test func callersOfOneTurnAreResumedByOneJob() async throws {
        let group = try EventLoopGroup(numberOfThreads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let codes = await self.awaitAll(50, on: loop) { waiters in
            for (index, waiter) in waiters.enumerated() {
                loop.deferToEndOfTurn(Resumer(loop: loop, waiter: waiter, code: 200 + index))
            }
        }
        #expect(codes == (0..<50).map { 200 + $0 }, "each caller gets its own result")
        #expect(await self.batches(on: loop) == 1, "all fifty in one job")
    }

    @Test func aCallerOutsideTheEndOfATurnIsResumedAtOnce() async throws {
        let group = try EventLoopGroup(numberOfThreads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let codes = await self.awaitAll(3, on: loop) { waiters in
            for (index, waiter) in waiters.enumerated() {
                loop.resume(fromPool: .collected(waiter, .success(CollectedResponse(head: HTTPResponse(status: .init(code: 300 + index)), body: []))),
                                 priority: .medium)
            }
        }
        #expect(codes == [300, 301, 302])
        #expect(await self.batches(on: loop) == 0)
    }

    /// Many requests at once from the global executor: every caller gets its own response.
    @Test func concurrentCallersGetTheirOwnResponses() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 16 }
        defer { client.shutdown() }
        let statuses = try await withThrowingTaskGroup(of: (Int, Int, Int).self) { group in
            for index in 0..<64 {
                group.addTask {
                    let code = 200 + index % 7
                    if index.isMultiple(of: 2) {
                        let response = try await client.execute(try get(server.url("/status?code=\(code)")))
                        return (index, code, response.status.code)
                    }
                    let response = try await client.stream(try get(server.url("/status?code=\(code)")))
                    _ = try await response.body.collect(upTo: 1 << 16)
                    return (index, code, response.status.code)
                }
            }
            var mismatches = 0
            for try await (_, expected, got) in group where expected != got { mismatches += 1 }
            return mismatches
        }
        #expect(statuses == 0)
    }

    /// The same for prepared calls, whose awaiting callers are resumed the same way: from the
    /// global executor, from an actor, and from a loop as their executor.
    @Test func concurrentPreparedCallersGetTheirOwnResults() async throws {
        let server = try await Shared.faults.get()
        let group = try EventLoopGroup(numberOfThreads: 1)
        defer { group.shutdown() }
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = 16
        let client = try HTTPClient(configuration: configuration, eventLoopGroup: group)
        defer { client.shutdown() }
        let call = try client.prepare(RequestTemplate(.get, server.url("/status?code={code}")))
        actor Asker {
            func status(_ call: PreparedCall, _ code: Int) async throws -> Int {
                try await call.send([String(code)]) { $0.status.code }
            }
        }
        let asker = Asker()
        let mismatches = try await withThrowingTaskGroup(of: Bool.self) { tasks in
            for index in 0..<96 {
                let code = 200 + index % 7
                switch index % 3 {
                case 0: tasks.addTask { try await call.send([String(code)]) { $0.status.code } == code }
                case 1: tasks.addTask { try await asker.status(call, code) == code }
                default: tasks.addTask(executorPreference: group.loops[0]) { try await call.send([String(code)]) { $0.status.code } == code }
                }
            }
            var mismatches = 0
            for try await matched in tasks where !matched { mismatches += 1 }
            return mismatches
        }
        #expect(mismatches == 0)
    }

    actor Caller {
        func status(_ client: HTTPClient, _ request: HTTPRequest) async throws -> Int {
            try await client.execute(request).status.code
        }
    }

    /// Callers on an actor, or on a loop as their task executor, are resumed from the loop:
    /// a job of the pool's would only add a hop before the actor's or the loop's own.
    @Test func callersOnAnActorOrALoopAreResumedFromTheLoop() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 8 }
        defer { client.shutdown() }
        let loop = client.group.loops[0]
        let request = try get(server.url("/status?code=204"))
        let caller = Caller()
        let codes = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<48 {
                if index.isMultiple(of: 2) {
                    group.addTask { try await caller.status(client, request) }
                } else {
                    group.addTask(executorPreference: loop) { try await client.execute(request).status.code }
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(codes == [Int](repeating: 204, count: 48))
        #expect(await self.batches(on: loop) == 0)
    }

    /// A client shutting down fails the requests in flight and resumes their callers before
    /// it returns — at once, not by a job of the pool's.
    @Test func aShutdownResumesItsCallersAtOnce() async throws {
        let server = try await Shared.faults.get()
        let group = try EventLoopGroup(numberOfThreads: 1)
        defer { group.shutdown() }
        var configuration = HTTPClient.Configuration()
        configuration.maxConnectionsPerHost = 12
        let client = try HTTPClient(configuration: configuration, eventLoopGroup: group)
        let request = try get(server.url("/stall"))
        let stalled = (0..<12).map { _ in
            Task { () -> TransportError.Code? in
                do throws(TransportError) {
                    _ = try await client.execute(request)
                    return nil
                } catch {
                    return error.code
                }
            }
        }
        // Until every request waits on its connection (or give up after 10 s and fail below).
        for _ in 0..<200 where await client.poolStatistics().hosts.values.reduce(0, { $0 + $1.leased }) < 12 {
            try await Task.sleep(for: .milliseconds(50))
        }
        client.shutdown()
        for task in stalled { #expect(await task.value == TransportError.Code.shutdown) }
        #expect(await self.batches(on: group.loops[0]) == 0)
    }

    @Test func theResumingJobRunsAtTheCallersHighestPriority() {
        #expect(PoolResumes.quality(of: .high) == .userInitiated)
        #expect(PoolResumes.quality(of: .userInitiated) == .userInitiated)
        #expect(PoolResumes.quality(of: .medium) == .default)
        #expect(PoolResumes.quality(of: .low) == .utility)
        #expect(PoolResumes.quality(of: .utility) == .utility)
        #expect(PoolResumes.quality(of: .background) == .background)
    }

    func batches(on loop: EventLoop) async -> Int {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Int, Never>) in
            loop.execute { continuation.resume(returning: loop.poolResumes.batches) }
        }
    }
}
