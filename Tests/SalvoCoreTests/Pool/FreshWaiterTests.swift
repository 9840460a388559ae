import SalvoTestSupport
import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore

/// Over sockets: a POST answered 307 is sent again on a new connection, but its own connection
/// went back to the pool first, to the next waiter. With the host at its connection limit and
/// other requests keeping the queue busy, the POST must still get its new connection in turn,
/// not wait behind every later GET until its pool wait times out.
@Suite(.serialized) struct FreshWaiterTests {
    @Test func aRedirectedPostIsNotStarvedByLaterRequests() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient {
            $0.threads = 1
            $0.maxConnectionsPerHost = 1
            // A starved POST waits all of it (the GETs never stop); a served one far less,
            // however busy the machine.
            $0.poolWaitTimeout = .seconds(10)
        }
        defer { client.shutdown() }
        final class Flags: Sendable {
            let stop = Atomic<Bool>(false)
            let served = Atomic<Int>(0)
        }
        let flags = Flags()
        // Steady load on the same host: three callers, one GET after another.
        let load = (0..<3).map { _ in
            Task {
                while !flags.stop.load(ordering: .relaxed) {
                    _ = try? await client.execute(try get(server.url("/slow-head?ms=50")))
                    flags.served.add(1, ordering: .relaxed)
                }
            }
        }
        // Until the load runs: three GETs served.
        let loaded = ContinuousClock.now + .seconds(10)
        while flags.served.load(ordering: .relaxed) < 3, ContinuousClock.now < loaded {
            try await Task.sleep(for: .milliseconds(10))
        }
        let started = ContinuousClock.now
        let code = await errorCode {
            let response = try await client.execute(try HTTPRequest(method: .post, url: server.url("/redirect?code=307&to=%2Fecho-body")),
                                                    body: .string("order #1"), options: .init(timeout: .seconds(30)))
            #expect(response.status == .ok && response.text == "order #1")
        }
        let waited = ContinuousClock.now - started
        flags.stop.store(true, ordering: .relaxed)
        for task in load { _ = await task.result }
        #expect(code == nil, "the redirected POST failed with \(String(describing: code)) after \(waited), while \(flags.served.load(ordering: .relaxed)) GETs were served")
    }
}
