import SalvoTestSupport
import Foundation

/// A private instance of `Tests/Fixtures/tls_fault_server.py`: a TLS server that drops or
/// resets connections at chosen points (see the table at the top of that file).
final class TLSFaultServer: Sendable {
    let port: Int
    private let child: ChildProcess

    private init(port: Int, child: ChildProcess) {
        self.port = port
        self.child = child
    }

    deinit { self.stop() }

    /// ``launch(certificate:key:lifetime:)`` off the cooperative pool: what a test calls.
    static func start(certificate: String, key: String, lifetime: Int = 300) async throws -> TLSFaultServer {
        try await offThePool { try launch(certificate: certificate, key: key, lifetime: lifetime) }
    }

    /// Starts an instance serving `certificate` and `key` (PEM paths) on 127.0.0.1.
    static func launch(certificate: String, key: String, lifetime: Int = 300) throws -> TLSFaultServer {
        let script = try TestFixtures.file("tls_fault_server.py")
        let python = try TestFixtures.executable("python3", candidates: ["/usr/bin/python3", "/usr/local/bin/python3"])
        let child = try ChildProcess(
            name: "tls_fault_server.py", executable: python,
            arguments: [script.path, "--cert", certificate, "--key", key, "--lifetime", String(lifetime)])
        do {
            let announced = try child.readAnnouncements(["PORT"], timeout: 10)
            guard let text = announced["PORT"], let port = Int(text), port > 0 else {
                throw TestServerError("tls_fault_server.py announced a bad port: \(announced)")
            }
            return TLSFaultServer(port: port, child: child)
        } catch {
            child.stop(grace: 1)
            throw error
        }
    }

    /// "https://<host>:<port><path>"
    func url(_ path: String, host: String = "127.0.0.1") -> String { "https://\(host):\(self.port)\(path)" }

    func stop() { self.child.stop(grace: 2) }
}
