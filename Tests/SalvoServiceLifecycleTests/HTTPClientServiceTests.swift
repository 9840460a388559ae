import Synchronization
import HTTPTypes
import Logging
import SalvoCore
import SalvoServiceLifecycle
import SalvoTestSupport
import ServiceLifecycle
import Testing

/// An engine client in a service group: it works while the group runs, and the group's
/// graceful shutdown (or its cancellation) shuts it down with the rest.
@Suite struct HTTPClientServiceTests {
    static var oneThread: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        return configuration
    }

    /// A service that sends one request through the client, then asks the group to stop.
    struct OneRequest: Service {
        let client: HTTPClient
        let url: String
        let status: Result<Int, any Error>.Box

        func run() async throws {
            do {
                let response = try await self.client.execute(HTTPRequest(method: .get, url: self.url))
                self.status.set(.success(response.status.code))
            } catch {
                self.status.set(.failure(error))
            }
        }
    }

    @Test func theGroupShutsTheClientDownWhenItEnds() async throws {
        let nginx = try await NginxServer.start()
        defer { nginx.stop() }
        let client = try HTTPClient(configuration: Self.oneThread)
        let seen = Result<Int, any Error>.Box()
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: client),
                       .init(service: OneRequest(client: client, url: nginx.url("/small"), status: seen),
                             successTerminationBehavior: .gracefullyShutdownGroup)],
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        try await group.run()
        #expect(try seen.get()?.get() == 200)
        // Shut down by the group: its requests are refused now.
        await #expect(throws: TransportError.self) {
            _ = try await client.execute(HTTPRequest(method: .get, url: nginx.url("/small")))
        }
    }

    @Test func cancellingTheGroupShutsTheClientDownToo() async throws {
        let client = try HTTPClient(configuration: Self.oneThread)
        let group = ServiceGroup(configuration: .init(services: [.init(service: client)],
                                                      logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(50))
        running.cancel()
        _ = await running.result
        let request = try HTTPRequest(method: .get, url: "http://127.0.0.1:1/")
        do {
            _ = try await client.execute(request)
            Issue.record("a shut-down client sent a request")
        } catch {
            #expect(error.code == .shutdown)
        }
    }

    @Test func theSharedClientOutlivesItsGroup() async throws {
        let shared = try HTTPClient.shared
        let group = ServiceGroup(configuration: .init(services: [.init(service: shared)],
                                                      logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(50))
        await group.triggerGracefulShutdown()
        try await running.value
        let nginx = try await NginxServer.start()
        defer { nginx.stop() }
        #expect(try await shared.execute(HTTPRequest(method: .get, url: nginx.url("/small"))).status == .ok)
    }
}

extension Result where Success: Sendable {
    /// A result set from one task and read from another.
    final class Box: Sendable {
        private let value = Mutex<Result?>(nil)
        func set(_ result: Result) { self.value.withLock { $0 = result } }
        func get() -> Result? { self.value.withLock { $0 } }
    }
}
