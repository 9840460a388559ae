import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// A call made with an id is cancelled by the client itself, no middleware installed.
@Suite struct CancelByIDTests {
    /// A mock whose replies wait until the call is cancelled (at most 60 s: far longer than a
    /// cancellation takes even on a machine whose threads are all busy).
    static func slowMock() -> MockTransport {
        let mock = MockTransport()
        mock.fallback { _ in
            try await Task.sleep(for: .seconds(60))
            return .text("late")
        }
        return mock
    }

    static func waitUntil(_ client: Client, runs count: Int) async throws {
        let end = ContinuousClock.now + .seconds(10)
        while client.callsInFlight.count < count, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(2)) }
        try #require(client.callsInFlight.count == count)
    }

    @Test func aRunningCallIsCancelledByItsID() async throws {
        let client = try Client(baseURL: "http://api.test", transport: Self.slowMock())
        let id = RequestID()
        let call = Task { await client.outcome(Endpoint<String>.get("/slow"), options: .init(id: id)) }
        try await Self.waitUntil(client, runs: 1)
        let started = ContinuousClock.now
        client.cancel(id)
        #expect(await call.value.error?.code == .cancelled)
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(client.callsInFlight.isEmpty)
    }

    @Test func anIDCancelledBeforeItsCallRefusesIt() async throws {
        let mock = MockTransport()
        mock.fallback { _ in .text("ok") }
        let client = try Client(baseURL: "http://api.test", transport: mock)
        let id = RequestID()
        client.cancel(id)
        let (value, error) = await client.outcome(Endpoint<String>.get("/never"), options: .init(id: id))
        #expect(value == nil)
        #expect(error?.code == .cancelled)
        #expect(mock.requests.isEmpty, "a call cancelled before it came is not sent")
        // Only once: the id is forgotten after refusing its call.
        #expect(await client.outcome(Endpoint<String>.get("/now"), options: .init(id: id)).value == "ok")
    }

    @Test func cancelAllEndsEveryCallWithAnID() async throws {
        let client = try Client(baseURL: "http://api.test", transport: Self.slowMock(),
                                configuration: .init(middleware: [CallHooks()]))
        let calls = (0..<3).map { index in
            Task { await client.outcome(Endpoint<String>.get("/\(index)"), options: .init(id: RequestID())) }
        }
        try await Self.waitUntil(client, runs: 3)
        client.cancelAll()
        for call in calls { #expect(await call.value.error?.code == .cancelled) }
    }

    @Test func anIDInFlightIsNotTakenTwice() async throws {
        let client = try Client(baseURL: "http://api.test", transport: Self.slowMock())
        let id = RequestID()
        let first = Task { await client.outcome(Endpoint<String>.get("/first"), options: .init(id: id)) }
        try await Self.waitUntil(client, runs: 1)
        #expect(await client.outcome(Endpoint<String>.get("/second"), options: .init(id: id)).error?.code == .invalidRequest)
        client.cancel(id)
        #expect(await first.value.error?.code == .cancelled)
    }

    @Test func aDownloadIsCancelledByIDWhileItsBodyComes() async throws {
        let transport = CancelledBodyTests.HeldBody()
        let client = try Client(baseURL: "http://api.test", transport: transport)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-cancel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("file.txt").path
        let id = RequestID()
        let download = Task { () async -> ClientError? in
            do throws(ClientError) {
                _ = try await client.download(Endpoint<Empty>.get("/file"), to: path, options: .init(id: id))
                return nil
            } catch {
                return error
            }
        }
        transport.feed.yield(Array("first part\n".utf8))
        await transport.readerAsked(times: 2)
        client.cancel(id)
        #expect(await download.value?.code == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: path), "a cancelled download is not moved into place")
    }

    /// A cancel that comes after its call ended is not kept for the next call with that id
    /// (a retry loop, a poll, a reconnect reusing it).
    @Test func aLateCancelDoesNotRefuseTheNextCall() async throws {
        let mock = MockTransport(always: .text("ok"))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        let id = RequestID()
        #expect(try await client.value(Endpoint<String>.get("/a"), options: .init(id: id)) == "ok")
        client.cancel(id)
        #expect(try await client.value(Endpoint<String>.get("/b"), options: .init(id: id)) == "ok")
    }

    /// A download made with an id reaches the middleware with that id.
    @Test func aDownloadKeepsItsIDForTheMiddleware() async throws {
        let seen = Mutex<[RequestID]>([])
        let watch = InterceptMiddleware { request, next in
            seen.withLock { $0.append(request.id) }
            return try await next(request)
        }
        let client = try Client(baseURL: "http://api.test", transport: MockTransport(always: .text("file")),
                                configuration: .init(middleware: [watch]))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-id-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let id = RequestID()
        _ = try await client.download(Endpoint<Empty>.get("/file"), to: path, options: .init(id: id))
        #expect(seen.withLock { $0 } == [id])
    }
}
