import SalvoTestSupport
import Foundation
import HTTPTypes
import CSalvo
import Testing
@testable import SalvoCore

/// After `shutdown()` the process holds exactly the descriptors it held before the client.
///
/// Counting /proc/self/fd is only meaningful when nothing else runs in the process, so this
/// suite is enabled by SALVO_ISOLATED=1 and run on its own by `make test`
/// (`swift test --filter FDAccountingTests`), after the parallel run that skips it.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["SALVO_ISOLATED"] == "1"))
struct FDAccountingTests {
    static func openDescriptors() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").sorted()
    }

    func exercise(_ nginx: NginxServer, _ faults: FaultServer) async throws {
        let client = try makeClient { $0.maxConnectionsPerHost = 8; $0.readTimeout = .milliseconds(500) }
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                group.addTask {
                    let path = ["/small", "/1k", "/64k"][i % 3]
                    _ = try? await client.execute(try get(nginx.url(path)))
                }
            }
        }
        // Failures of every kind leave nothing behind either.
        for path in ["/truncated", "/reset", "/garbage", "/empty", "/stall-body", "/drop-next", "/drop-next"] {
            _ = try? await client.execute(try get(faults.url(path)))
        }
        _ = try? await client.execute(try get("http://127.0.0.1:\(try freePort())/"))
        let streamed = try await client.stream(try get(nginx.url("/1m")))
        var iterator = streamed.body.makeAsyncIterator()
        _ = try await iterator.next()
        // A request still in flight when the client shuts down.
        let stalled = Task { try await client.execute(try get(faults.url("/stall"))) }
        try await Task.sleep(for: .milliseconds(100))
        client.shutdown()
        _ = try? await stalled.value
    }

    /// 1,000 handshakes that fail verification leave no descriptor and no memory behind.
    @Test func failedHandshakesLeaveNothingBehind() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("self.pem"), key: certificates.path("self.key"), accepts: 5000)
        defer { server.stop() }
        let client = try makeClient { $0.threads = 1 }
        let request = try get(server.url())
        func fail(_ count: Int) async {
            for _ in 0..<count {
                let code = await errorCode { _ = try await client.execute(request) }
                precondition(code == .tlsCertificateInvalid, "\(String(describing: code))")
            }
        }
        // The first rounds fill what OpenSSL and the allocator cache once (per-thread state,
        // tcache bins); after that, 2,000 more failures must not move the heap: a leak of
        // 50 bytes per handshake would show as 100 KB.
        await fail(300)
        let fdsBefore = try Self.openDescriptors()
        await fail(1000)
        let heapWarm = salvo_heap_in_use()
        await fail(2000)
        let heapAfter = salvo_heap_in_use()
        let fdsAfter = try Self.openDescriptors()
        client.shutdown()
        #expect(fdsAfter == fdsBefore)
        #expect(heapAfter < heapWarm + 100 * 1024, "heap went from \(heapWarm) to \(heapAfter) bytes over 2,000 failed handshakes")
    }

    @Test func shutdownReleasesEveryDescriptor() async throws {
        let nginx = try await Shared.nginx.get()
        let faults = try await Shared.faults.get()
        // A first round warms up whatever the runtime opens once (and keeps).
        try await exercise(nginx, faults)
        let before = try Self.openDescriptors()
        try await exercise(nginx, faults)
        try await exercise(nginx, faults)
        let after = try Self.openDescriptors()
        let extra = Set(after).subtracting(before).sorted().map { fd in
            "\(fd) → " + ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "?")
        }
        #expect(after == before, "before: \(before.count) fds, after: \(after.count), new: \(extra)")
    }
}
