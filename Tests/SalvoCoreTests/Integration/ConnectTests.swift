import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore

@Suite struct ConnectTests {
    @Test func ipv6Loopback() async throws {
        let server = try FaultServer.start(host: "::1")
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
}
