import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// Calls cancelled by id, limited in number, queued by priority.
@Suite struct RequestControlTests {
    /// A mock whose replies take `delay`, counting how many are answered at once.
    final class Busy: Sendable {
        let mock = MockTransport()
        let now = Mutex(0)
        let most = Mutex(0)
        let order = Mutex<[String]>([])
        let nowPerHost = Mutex<[String: Int]>([:])
        let mostPerHost = Mutex(0)
        /// A request for /gate waits until this is set (at most 10 s).
        let gateOpen = Mutex(false)

        init(delay: Duration) {
            self.mock.fallback { [self] request in
                let current = self.now.withLock { value in value += 1; return value }
                self.most.withLock { $0 = Swift.max($0, current) }
                self.order.withLock { $0.append(request.path) }
                let host = request.head.authority ?? ""
                let onHost = self.nowPerHost.withLock { counts in counts[host, default: 0] += 1; return counts[host]! }
                self.mostPerHost.withLock { $0 = Swift.max($0, onHost) }
                defer {
                    self.now.withLock { $0 -= 1 }
                    self.nowPerHost.withLock { $0[host, default: 1] -= 1 }
                }
                if request.path == "/gate" {
                    for _ in 0..<5000 where !self.gateOpen.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(2)) }
                }
                try await Task.sleep(for: delay)
                return .text("ok")
            }
        }
    }

    @Test func limitsInAllAndPerHost() async throws {
        let busy = Busy(delay: .milliseconds(30))
        let control = RequestControl(maxConcurrent: 2)
        let client = try Client(baseURL: "http://api.test", transport: busy.mock, configuration: .init(middleware: [control]))
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<8 { group.addTask { _ = try? await client.value(Endpoint<String>.get("/\(index)")) } }
        }
        #expect(busy.most.withLock { $0 } <= 2)
        #expect(busy.mock.requests.count == 8)

        let perHost = Busy(delay: .milliseconds(30))
        let shared = RequestControl(maxPerHost: 1)
        let a = try Client(baseURL: "http://a.test", transport: perHost.mock, configuration: .init(middleware: [shared]))
        let b = try Client(baseURL: "http://b.test", transport: perHost.mock, configuration: .init(middleware: [shared]))
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<4 {
                group.addTask { _ = try? await a.value(Endpoint<String>.get("/a\(index)")) }
                group.addTask { _ = try? await b.value(Endpoint<String>.get("/b\(index)")) }
            }
        }
        #expect(perHost.mostPerHost.withLock { $0 } == 1, "one per host at most")
        #expect(perHost.mock.requests.count == 8)
    }

    /// Starts `path` on `client` and waits until `control` has it (running or waiting).
    func start(_ client: Client, _ path: String, _ control: RequestControl, priority: RequestPriority = .normal,
               id: RequestID = RequestID()) async throws -> Task<ClientError?, Never> {
        let before = control.inFlight.count
        let task = Task { await client.outcome(Endpoint<String>.get(path).with(RequestPriority.self, priority), options: .init(id: id)).error }
        while control.inFlight.count == before { try await Task.sleep(for: .milliseconds(2)) }
        return task
    }

    @Test func aSerialQueueRunsInOrderOfPriorityThenArrival() async throws {
        let busy = Busy(delay: .milliseconds(20))
        let control = RequestControl.serialQueue()
        let client = try Client(baseURL: "http://api.test", transport: busy.mock, configuration: .init(middleware: [control]))
        // The first call holds the queue until every other one waits.
        var calls = [try await self.start(client, "/gate", control)]
        for (path, priority) in [("/low", RequestPriority.low), ("/normal-1", .normal), ("/high", .high), ("/normal-2", .normal)] {
            calls.append(try await self.start(client, path, control, priority: priority))
        }
        busy.gateOpen.withLock { $0 = true }
        for call in calls { #expect(await call.value == nil) }
        #expect(busy.order.withLock { $0 } == ["/gate", "/high", "/normal-1", "/normal-2", "/low"])
        #expect(busy.most.withLock { $0 } == 1)
    }

    @Test func cancelByIdRunningOrWaitingAndAll() async throws {
        let busy = Busy(delay: .seconds(30))
        let control = RequestControl.serialQueue()
        let client = try Client(baseURL: "http://api.test", transport: busy.mock, configuration: .init(middleware: [control]))
        let runningID = RequestID(), waitingID = RequestID()
        let running = try await self.start(client, "/running", control, id: runningID)
        let waiting = try await self.start(client, "/waiting", control, id: waitingID)
        let other = try await self.start(client, "/other", control)
        control.cancel(waitingID)
        #expect(await waiting.value?.code == .cancelled)
        control.cancel(runningID)
        #expect(await running.value?.code == .cancelled)
        // The next one took the freed place; cancelAll ends it.
        while busy.order.withLock({ $0.count }) < 2 { try await Task.sleep(for: .milliseconds(2)) }
        control.cancelAll()
        #expect(await other.value?.code == .cancelled)
        #expect(control.inFlight.isEmpty)
        #expect(busy.order.withLock { $0 } == ["/running", "/other"], "the cancelled waiter never ran")
    }

    /// Waiting for a place spends the call's own time: a queued call with a timeout ends
    /// with it, and the place it never took is not lost.
    @Test func aWaitingCallEndsAtItsDeadline() async throws {
        let busy = Busy(delay: .milliseconds(1))
        let control = RequestControl.serialQueue()
        let client = try Client(baseURL: "http://api.test", transport: busy.mock, configuration: .init(middleware: [control]))
        let holder = try await self.start(client, "/gate", control)
        let hurried = await client.outcome(Endpoint<String>.get("/hurried"), options: .init(timeout: .milliseconds(100)))
        #expect(hurried.error?.transportError?.code == .totalTimeout, "\(String(describing: hurried.error))")
        busy.gateOpen.withLock { $0 = true }
        #expect(await holder.value == nil)
        #expect(try await client.value(Endpoint<String>.get("/after")) == "ok", "the queue still moves")
        #expect(busy.order.withLock { $0 } == ["/gate", "/after"], "the call that timed out never ran")
    }

    @Test func idsAreOneCallEachAndCanBeCancelledBeforeArriving() async throws {
        let busy = Busy(delay: .milliseconds(200))
        let control = RequestControl()
        let client = try Client(baseURL: "http://api.test", transport: busy.mock, configuration: .init(middleware: [control]))
        let shared = RequestID()
        // Held until the gate opens, so that it is surely still in flight when the id is reused.
        let first = try await self.start(client, "/gate", control, id: shared)
        #expect(await client.outcome(Endpoint<String>.get("/two"), options: .init(id: shared)).error?.code == .invalidRequest)
        busy.gateOpen.withLock { $0 = true }
        #expect(await first.value == nil)
        let early = RequestID()
        control.cancel(early)
        #expect(await client.outcome(Endpoint<String>.get("/three"), options: .init(id: early)).error?.code == .cancelled)
        #expect(busy.order.withLock { $0 } == ["/gate"])
    }

    /// A serial queue in front of token authorization whose refresh uses the same client:
    /// the refresh's request does not wait behind the call that waits for it.
    @Test func aRefreshThroughTheSameQueuedClientDoesNotDeadlock() async throws {
        let mock = MockTransport()
        mock.on(.post, "/refresh", reply: .text("fresh"))
        mock.fallback { request in request.headerFields[.authorization] == "Bearer fresh" ? .text("ok") : .status(.unauthorized) }
        let box = Mutex<Client?>(nil)
        let auth = TokenAuthorization { _ in AuthToken(accessToken: try await box.withLock { $0 }!.value(Endpoint<String>.post("/refresh"))) }
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [RequestControl.serialQueue(), auth]))
        box.withLock { $0 = client }
        #expect(try await client.value(Endpoint<String>.get("/data")) == "ok")
    }

    /// Over the engine: the server counts the requests it holds at once.
    @Test func theServerSeesTheLimit() async throws {
        let control = RequestControl(maxConcurrent: 2)
        let client = try await SharedAPI.client(.init(middleware: [control]))
        let key = UUID().uuidString
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<6 {
                group.addTask { _ = try? await client.value(Endpoint<JSONValue>.get("/concurrent", query: [QueryItem("key", key), QueryItem("ms", "100")])) }
            }
        }
        let stats = try await client.value(Endpoint<JSONValue>.get("/concurrent", query: [QueryItem("key", key), QueryItem("stats", "1")]))
        #expect(stats["most"] == .number(2) || stats["most"] == .number(1), "\(stats)")
        #expect(stats["now"] == .number(0))
        let unlimited = try await SharedAPI.client()
        let free = UUID().uuidString
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<6 {
                group.addTask { _ = try? await unlimited.value(Endpoint<JSONValue>.get("/concurrent", query: [QueryItem("key", free), QueryItem("ms", "2000")])) }
            }
        }
        let freeStats = try await unlimited.value(Endpoint<JSONValue>.get("/concurrent", query: [QueryItem("key", free), QueryItem("stats", "1")]))
        #expect((freeStats["most"]?.doubleValue ?? 0) > 2, "without the control more run at once: \(freeStats)")
    }

    /// Over the engine: a slow call cancelled by id ends at once; the client goes on.
    @Test func overTheEngine() async throws {
        let control = RequestControl()
        let client = try await SharedAPI.client(.init(middleware: [control]))
        let id = RequestID()
        let slow = Task { await client.outcome(Endpoint<JSONValue>.get("/slow", query: [QueryItem("ms", "20000")]), options: .init(id: id)).error }
        while control.inFlight.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
        try await Task.sleep(for: .milliseconds(50))
        control.cancel(id)
        #expect(await slow.value?.code == .cancelled)
        #expect(try await client.value(Endpoint<JSONValue>.get("/users/1"))["id"] == .number(1))
    }
}
