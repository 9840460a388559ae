import SalvoTestSupport
import CSalvo
import Dispatch
import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore
import SalvoTransport

/// Load through one pool while the server misbehaves at random: resets, stalls, truncations,
/// idle closes, garbage, floods of interim responses — and the caller cancels some requests
/// itself. Every request must end exactly once, within its deadline, in the answer the server
/// really sent or a typed error; the pool must serve plain requests afterwards; and a client's
/// whole life under that load must leave no descriptor and no heap behind.
///
/// Descriptors and heap are counted for the whole process, so this suite runs with the
/// isolated ones (SALVO_ISOLATED=1, run on their own by `make test`).
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["SALVO_ISOLATED"] == "1"))
struct ChaosTests {
    /// What a scenario's request may end in.
    enum Expected: Sendable {
        /// The exact body (status 200), unless the caller cancelled it first.
        case body(String)
        /// A 200 whose body is this many bytes of `byte`.
        case filled(count: Int, byte: UInt8)
        /// A typed error, never a response.
        case failure
    }

    struct Scenario: Sendable {
        let path: String
        let weight: Int
        let expected: Expected
        /// The request's whole deadline.
        var timeout: Duration = .seconds(8)
    }

    static func raw(_ text: String, then: String) -> String {
        let b64 = Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "/raw?b=\(b64)&then=\(then)"
    }

    static let scenarios: [Scenario] = {
        let early = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        let final = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        return [
            Scenario(path: "/ok", weight: 30, expected: .body("hello")),
            Scenario(path: "/chunked", weight: 5, expected: .body("hello world")),
            Scenario(path: "/one-byte", weight: 2, expected: .body("hello world")),
            Scenario(path: "/slow-head?ms=20", weight: 3, expected: .body("ok")),
            Scenario(path: "/close-after?n=2", weight: 5, expected: .body("ok")),
            Scenario(path: "/drop-next", weight: 5, expected: .body("ok")),
            Scenario(path: "/idle-close?ms=3", weight: 5, expected: .body("ok")),
            Scenario(path: "/big?n=200000", weight: 3, expected: .filled(count: 200_000, byte: UInt8(ascii: "x"))),
            Scenario(path: "/coded?n=5000", weight: 3, expected: .filled(count: 5000, byte: 0)),
            Scenario(path: raw(String(repeating: early, count: 5) + final, then: "keep"), weight: 3, expected: .body("ok")),
            // Past the decoder's bound on interim responses: refused, not waited out.
            Scenario(path: raw(String(repeating: early, count: 40) + final, then: "keep"), weight: 3, expected: .failure),
            Scenario(path: "/truncated", weight: 4, expected: .failure),
            Scenario(path: "/truncated-chunked", weight: 3, expected: .failure),
            Scenario(path: "/reset", weight: 4, expected: .failure),
            Scenario(path: "/garbage", weight: 3, expected: .failure),
            Scenario(path: "/empty", weight: 3, expected: .failure),
            Scenario(path: "/coded?n=5000&corrupt=1", weight: 2, expected: .failure),
            Scenario(path: "/stall", weight: 3, expected: .failure, timeout: .milliseconds(300)),
            Scenario(path: "/stall-body", weight: 3, expected: .failure, timeout: .milliseconds(300)),
        ]
    }()

    /// What the storm's tasks share: the next request to send, how each ended.
    final class StormState: Sendable {
        let next = Atomic(0)
        let endings: Mutex<[Ending]>
        init(count: Int) { endings = Mutex([Ending](repeating: Ending(), count: count)) }
    }

    /// How one request ended.
    struct Ending: Sendable {
        var calls = 0
        var result: Result<CollectedResponse, TransportError>?
        var elapsed: Duration = .zero
    }

    /// Sends `count` requests drawn from the scenarios by `seed`, `inFlight` at a time, about
    /// one in twenty cancelled by the caller after a few milliseconds; checks every ending.
    func storm(_ client: HTTPClient, _ server: FaultServer, count: Int, inFlight: Int, seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let total = Self.scenarios.reduce(0) { $0 + $1.weight }
        let plan: [(scenario: Scenario, cancelAfter: Int?)] = (0..<count).map { _ in
            var pick = Int(random.next() % UInt64(total))
            let scenario = Self.scenarios.first { pick -= $0.weight; return pick < 0 }!
            let cancel = random.next() % 20 == 0 ? Int(random.next() % 15) : nil
            return (scenario, cancel)
        }
        let shared = StormState(count: count)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<inFlight {
                group.addTask {
                    while true {
                        let index = shared.next.add(1, ordering: .relaxed).oldValue
                        guard index < count else { return }
                        let (scenario, cancelAfter) = plan[index]
                        let request = try! get(server.url(scenario.path))
                        let started = ContinuousClock.now
                        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                            let handle = client.execute(request, options: .init(timeout: scenario.timeout)) { result in
                                let first = shared.endings.withLock { endings in
                                    endings[index].calls += 1
                                    guard endings[index].calls == 1 else { return false }
                                    endings[index].result = result
                                    endings[index].elapsed = ContinuousClock.now - started
                                    return true
                                }
                                // A second call is recorded above and fails the test below;
                                // the continuation is resumed once either way.
                                if first { done.resume() }
                            }
                            if let cancelAfter {
                                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(cancelAfter)) { handle.cancel() }
                            }
                        }
                    }
                }
            }
        }
        // Late second calls would land now.
        try await Task.sleep(for: .milliseconds(300))
        let ended = shared.endings.withLock { $0 }
        for (index, ending) in ended.enumerated() {
            let (scenario, cancelAfter) = plan[index]
            let what = "seed \(seed), request \(index) \(scenario.path)"
            #expect(ending.calls == 1, "\(what): completion called \(ending.calls) times")
            // Slack for a loaded machine: the deadline bounds the request, the check bounds a hang.
            #expect(ending.elapsed < scenario.timeout + .seconds(3), "\(what): took \(ending.elapsed)")
            guard let result = ending.result else { continue }
            switch (scenario.expected, result) {
            case (_, .failure(let error)) where cancelAfter != nil && error.code == .cancelled:
                break
            case (.failure, .failure):
                break
            case (.failure, .success(let response)):
                Issue.record("\(what): a broken answer reached the caller as status \(response.status.code), \(response.body.count) bytes")
            case (.body(let text), .success(let response)):
                #expect(response.status.code == 200 && response.text == text, "\(what): \(response.status.code) \(response.text.debugDescription)")
            case (.filled(let size, let byte), .success(let response)):
                #expect(response.status.code == 200 && response.body.count == size, "\(what): \(response.body.count) bytes")
                if byte != 0 { #expect(response.body.allSatisfy { $0 == byte }, "\(what): body is not all \(byte)") }
            case (_, .failure(let error)):
                Issue.record("\(what): expected an answer, got \(error)")
            }
        }
    }

    /// After the storm, the pool serves plain requests on fresh and reused connections.
    func recovers(_ client: HTTPClient, _ server: FaultServer) async throws {
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<64 {
                group.addTask { try await client.execute(try get(server.url("/ok")), options: .init(timeout: .seconds(10))).text }
            }
            for try await text in group { #expect(text == "hello") }
        }
    }

    @Test func everyRequestEndsOnceUnderAHostileServer() async throws {
        let server = try await Shared.faults.get()
        func life(count: Int, seed: UInt64) async throws {
            let client = try makeClient { $0.maxConnectionsPerHost = 8; $0.idleTimeout = .seconds(2) }
            try await storm(client, server, count: count, inFlight: 48, seed: seed)
            try await recovers(client, server)
            client.shutdown()
        }
        // The first life warms up what the process opens and caches once.
        try await life(count: 300, seed: 1)
        let descriptors = try FDAccountingTests.openDescriptors()
        let heap = salvo_heap_in_use()
        try await life(count: 1500, seed: 2)
        try await life(count: 1500, seed: 3)
        let after = try FDAccountingTests.openDescriptors()
        let heapAfter = salvo_heap_in_use()
        let extra = Set(after).subtracting(descriptors).sorted().map { fd in
            "\(fd) → " + ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "?")
        }
        #expect(after == descriptors, "descriptors before: \(descriptors.count), after: \(after.count), new: \(extra)")
        // Two more lives of 1,500 requests each; what a leak of a few hundred bytes per
        // request would show, and well above the allocator's own drift.
        #expect(heapAfter < heap + 512 * 1024, "heap went from \(heap) to \(heapAfter) bytes")
    }
}
