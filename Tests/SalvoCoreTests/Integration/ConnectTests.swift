import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore

@Suite struct ConnectTests {
    @Test func ipv6Loopback() async throws {
        let server = try await FaultServer.start(host: "::1")
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let response = try await client.execute(try get(server.url("/ok")))
        #expect(response.text == "hello")
    }

    /// A listener whose accept queue is full drops new SYNs, so a connect to it hangs: the
    /// connect timeout has to end it.
    @Test func connectTimeout() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(listener, pointer, length) == 0 && listen(listener, 0) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(bound)
        // Fill the backlog with connections nobody accepts.
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<4 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            fillers.append(fd)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        let port = Int(UInt16(bigEndian: address.sin_port))
        let client = try makeClient { $0.connectTimeout = .milliseconds(300) }
        defer { client.shutdown() }
        let start = ContinuousClock.now
        let code = await errorCode { _ = try await client.execute(try get("http://127.0.0.1:\(port)/")) }
        #expect(code == .connectTimeout)
        #expect(ContinuousClock.now - start < .seconds(20), "the kernel alone would retry SYNs for minutes")
    }

    /// Happy Eyeballs: a dual-stack name whose IPv6 address blackholes (a listener on ::1 with
    /// a full accept queue, so SYNs are dropped) still connects, over IPv4, a moment after the
    /// IPv6 attempt has had its 250 ms; the IPv6 attempt is closed, not left to the kernel.
    @Test func happyEyeballsFallsBackFromABlackholedAddress() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        let port = server.port
        let listener = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var one: Int32 = 1
        setsockopt(listener, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        address.sin6_port = in_port_t(UInt16(port).bigEndian)
        let length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && listen(listener, 0) == 0 }
        }
        try #require(bound, "[::1]:\(port) is taken")
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<4 {
            let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            fillers.append(fd)
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) } }
        }
        try await Task.sleep(for: .milliseconds(50))

        let client = try makeClient {
            $0.threads = 1
            $0.connectTimeout = .seconds(30)
            $0.nameResolution.overrides = [ResolveOverride(host: "dual.test", port: port, addresses: ["::1", "127.0.0.1"])]
        }
        defer { client.shutdown() }
        let start = ContinuousClock.now
        let response = try await client.execute(try get("http://dual.test:\(port)/ok"), options: .init(timeout: .seconds(45)))
        let took = ContinuousClock.now - start
        #expect(response.text == "hello")
        // Without racing, the first address would hold the connect for its whole timeout (30 s);
        // the bound is far above the 250 ms the race needs, for a loaded machine.
        #expect(took < .seconds(10), "took \(took)")
        #expect(response.metrics.connect.map { $0 >= .milliseconds(200) } == true)
        let statistics = await client.poolStatistics()
        #expect(statistics.hosts.values.map(\.open) == [1])
        #expect(statistics.hosts.values.map(\.opened) == [1])
    }

    @Test func familiesTakeTurns() async throws {
        let six = (1...3).map { SocketAddress(numericHost: "::\($0)", port: 80)! }
        let four = (1...2).map { SocketAddress(numericHost: "10.0.0.\($0)", port: 80)! }
        let ordered = SocketConnector.interleavingFamilies(six + four)
        #expect(ordered.map(\.family) == [six[0], four[0], six[1], four[1], six[2]].map(\.family))
        #expect(ordered.map(\.description) == [six[0], four[0], six[1], four[1], six[2]].map(\.description))
        #expect(SocketConnector.interleavingFamilies(four + six).first?.family == four[0].family)
        #expect(SocketConnector.interleavingFamilies(four).map(\.description) == four.map(\.description))
    }
}
