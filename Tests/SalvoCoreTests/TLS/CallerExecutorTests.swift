import Dispatch
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore

/// `execute` runs on its caller's executor, except for the one slow step, setting up TLS the
/// first time (the system trust store: tens of milliseconds), which must not hold the
/// caller's actor — the main actor, say. Seen from an actor whose executor counts the jobs
/// it is given: each time the caller's task comes back to it is one job.
@Suite struct CallerExecutorTests {
    /// A serial executor that counts what it runs.
    final class CountingExecutor: SerialExecutor, @unchecked Sendable {
        // @unchecked Sendable: the queue is serial and the count atomic.
        private let queue = DispatchQueue(label: "salvo.tests.counting-executor")
        let jobs = Atomic<Int>(0)

        func enqueue(_ job: consuming ExecutorJob) {
            self.jobs.add(1, ordering: .relaxed)
            let job = UnownedJob(job)
            self.queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
        }

        func asUnownedSerialExecutor() -> UnownedSerialExecutor {
            UnownedSerialExecutor(ordinary: self)
        }
    }

    actor Caller {
        let executor = CountingExecutor()
        nonisolated var unownedExecutor: UnownedSerialExecutor { self.executor.asUnownedSerialExecutor() }

        /// How many times the request's task came back to this actor's executor.
        func returns(_ client: HTTPClient, _ request: HTTPRequest) async -> Int {
            let before = self.executor.jobs.load(ordering: .relaxed)
            _ = try? await client.execute(request, options: .init(timeout: .seconds(5)))
            return self.executor.jobs.load(ordering: .relaxed) - before
        }
    }

    @Test func tlsSetUpLeavesTheCallersActorOnlyTheFirstTime() async {
        let client = try! HTTPClient()
        defer { client.shutdown() }
        #expect(client.tlsContexts.primary.defersTrust)
        let caller = Caller()
        // Refused (nothing listens on port 1): what counts is the way there and back.
        let https = HTTPRequest(method: .get, scheme: "https", authority: "127.0.0.1:1", path: "/")
        // The trust store is loaded elsewhere, then the task comes back; the result is the
        // second return.
        #expect(await caller.returns(client, https) == 2)
        #expect(!client.tlsContexts.primary.defersTrust)
        // Set up now: prepared where the caller is, only the result comes back.
        #expect(await caller.returns(client, https) == 1)
        let http = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:1", path: "/")
        #expect(await caller.returns(client, http) == 1)
    }
}
