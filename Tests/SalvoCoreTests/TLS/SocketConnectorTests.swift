import SalvoTestSupport
import Foundation
import Synchronization
import Testing
@testable import SalvoCore

/// The connector on its own, against real servers: what it hands over, and what it refuses.
@Suite(.serialized) struct SocketConnectorTests {
    /// Drives one connector on a loop and reports how it ended.
    final class Probe: Selectable, @unchecked Sendable {
        // @unchecked Sendable: `connector` and `socket` are touched only on `loop`.
        let loop: EventLoop
        var connector: SocketConnector
        var socket = Socket.none
        let done: @Sendable (Result<Bool, TransportError>) -> Void

        init(loop: EventLoop, connector: SocketConnector, done: @escaping @Sendable (Result<Bool, TransportError>) -> Void) {
            self.loop = loop
            self.connector = connector
            self.done = done
        }

        func start(_ address: SocketAddress) {
            self.handle(self.connector.connect(to: [address], loop: self.loop, target: self))
        }

        func ready(events: UInt32) {
            self.handle(self.connector.ready(loop: self.loop, target: self))
        }

        func handle(_ step: SocketConnector.Step) {
            switch step {
            case .pending:
                break
            case .opened(let socket):
                self.socket = socket
                let usesTLS = socket.tls != nil
                self.socket.close(on: self.loop)
                self.done(.success(usesTLS))
            case .failed(let error):
                self.done(.failure(error))
            }
        }
    }

    /// Connects to 127.0.0.1:`port` for `host` (its SNI and certificate name).
    func connect(host: String, port: Int, tls: TLSConfiguration?) async throws -> Result<Bool, TransportError> {
        let group = try EventLoopGroup(numberOfThreads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let context = try tls.map { try TLSContext($0) }
        let address = try #require(SocketAddress(numericHost: "127.0.0.1", port: port))
        return await withCheckedContinuation { continuation in
            let finished = Mutex(false)
            loop.execute {
                let connector = SocketConnector(host: host, port: port, tls: context, resumption: nil, deadline: .distantFuture)
                let probe = Probe(loop: loop, connector: connector) { result in
                    guard !finished.withLock({ $0 }) else { return }
                    finished.withLock { $0 = true }
                    continuation.resume(returning: result)
                }
                // The loop's slot table keeps the probe alive while its socket is registered.
                probe.start(address)
            }
        }
    }

    /// A wildcard covers a whole label: `*.wild.test` matches `x.wild.test`, but a partial one
    /// (`a*.example.test`) matches nothing, as curl and browsers rule.
    @Test func partialWildcardsAreRefused() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("wildcards.pem"), key: certificates.path("wildcards.key"))
        defer { server.stop() }
        var configuration = TLSConfiguration()
        configuration.trustRoots = .file(certificates.path("ca.pem"))
        let whole = try await self.connect(host: "x.wild.test", port: server.port, tls: configuration)
        #expect((try? whole.get()) == true, "\(whole)")
        let partial = try await self.connect(host: "ab.example.test", port: server.port, tls: configuration)
        guard case .failure(let error) = partial else { Issue.record("a partial wildcard matched"); return }
        #expect(error.code == .tlsCertificateInvalid, "\(error)")
        if let curl = CLITests.curlPath {
            let run = try await CLITests.run(curl, ["-s", "-o", "/dev/null", "--cacert", certificates.path("ca.pem"),
                                              "--resolve", "ab.example.test:\(server.port):127.0.0.1",
                                              "https://ab.example.test:\(server.port)/"])
            #expect(run.status == 60, "curl refuses it too")
        }
    }

    @Test func everyAddressIsTriedAndRefusalIsTyped() async throws {
        let refused = try await self.connect(host: "127.0.0.1", port: 1, tls: nil)
        guard case .failure(let error) = refused else { Issue.record("connected to port 1"); return }
        #expect(error.code == .connectionRefused)
        let server = try await Shared.faults.get()
        #expect((try? await self.connect(host: "127.0.0.1", port: server.port, tls: nil).get()) == false, "plain: no TLS session")
    }
}
