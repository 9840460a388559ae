import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore
import SalvoTestSupport

/// `client.with { … }`: other request defaults over the same loops and pools.
@Suite struct DerivedClientTests {
    struct Echo: Decodable { var headers: [[String]] }

    @Test func aDerivedClientSharesThePoolsButNotTheDefaults() async throws {
        let server = try await Shared.faults.get()
        let base = try makeClient { $0.threads = 1; $0.maxConnectionsPerHost = 1 }
        defer { base.shutdown() }
        let quick = base.with {
            $0.requestTimeout = .seconds(3)
            $0.headerFields[HTTPField.Name("X-Team")!] = "reports"
            $0.maxConnectionsPerHost = 50   // a pool setting: stays the base's
        }
        #expect(quick.configuration.maxConnectionsPerHost == 1)
        // One connection for both: the derived client's request reuses the base's.
        #expect(try await base.execute(try get(server.url("/ok"))).status == .ok)
        let echoed = try await quick.execute(try get(server.url("/echo")))
        #expect(await base.poolStatistics().connectionsOpened == 1)
        let headers = try JSONDecoder().decode(Echo.self, from: Data(echoed.body)).headers
        #expect(headers.contains { $0[0].lowercased() == "x-team" && $0[1] == "reports" }, "\(headers)")
        // Its own timeout; the base keeps none.
        let late = await errorCode { _ = try await quick.execute(try get(server.url("/slow-head?ms=10000"))) }
        #expect(late == .totalTimeout)
        #expect(try await base.execute(try get(server.url("/slow-head?ms=3500"))).status == .ok)
        // A request's own field wins over the default.
        var request = try get(server.url("/echo"))
        request.headerFields[HTTPField.Name("X-Team")!] = "mine"
        let own = try JSONDecoder().decode(Echo.self, from: Data(try await quick.execute(request).body)).headers
        #expect(own.filter { $0[0].lowercased() == "x-team" }.map { $0[1] } == ["mine"])
    }

    @Test func shuttingDownADerivedClientLeavesTheBase() async throws {
        let server = try await Shared.faults.get()
        let base = try makeClient { $0.threads = 1 }
        let derived = base.with { $0.redirects = .disabled }
        let second = derived.with { $0.userAgent = "second" }
        derived.shutdown()
        let refused = await errorCode { _ = try await derived.execute(try get(server.url("/ok"))) }
        #expect(refused == .shutdown)
        #expect(try await base.execute(try get(server.url("/ok"))).status == .ok)
        #expect(try await second.execute(try get(server.url("/ok"))).status == .ok, "derived from the derived: the base's pools")
        base.shutdown()
        let after = await errorCode { _ = try await second.execute(try get(server.url("/ok"))) }
        #expect(after == .shutdown)
    }
}
