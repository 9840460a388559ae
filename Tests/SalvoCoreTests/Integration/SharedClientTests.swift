import Foundation
import HTTPTypes
import SalvoCore
import SalvoTestSupport
import Testing

/// `HTTPClient.shared` lives as long as the process: one instance, `shutdown()` leaves it
/// working, and a process may end with its requests in flight without a crash or a hang.
@Suite struct SharedClientTests {
    @Test func oneInstanceThatShutdownLeavesWorking() async throws {
        let nginx = try await Shared.nginx.get()
        let shared = try HTTPClient.shared
        #expect(try HTTPClient.shared === shared)
        shared.shutdown()
        let response = try await HTTPClient.shared.execute(HTTPRequest(method: .get, url: nginx.url("/small")))
        #expect(response.status == .ok)
    }

    @Test(arguments: ["return", "exit"])
    func aProcessEndsWithRequestsInFlight(_ how: String) async throws {
        let server = try await APIServer.start()
        let started = Date()
        let run = try await runChild(TestFixtures.product("shared-client-child"), [how, server.baseURL, "/slow?ms=20000"],
                                     timeLimit: 40)
        #expect(!run.signaled, "killed or crashed: \(run.errors)")
        #expect(run.status == 0, "\(run.errors)")
        #expect(String(decoding: run.stdout, as: UTF8.self) == "STARTED\n")
        // Far below the answer's 20 s: a child that waited for it would take them all.
        #expect(Date().timeIntervalSince(started) < 10, "it left at once, not after its requests")
    }
}
