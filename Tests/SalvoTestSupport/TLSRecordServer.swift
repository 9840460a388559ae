import Foundation

/// A private instance of `Tests/Fixtures/tls_record_server.py`: a TLS server that answers
/// from what its first read of a request held (see the table at the top of that file).
public final class TLSRecordServer: Sendable {
    public let port: Int
    private let child: ChildProcess

    private init(port: Int, child: ChildProcess) {
        self.port = port
        self.child = child
    }

    deinit { self.stop() }

    /// ``launch(certificate:key:lifetime:)`` off the cooperative pool: what a test calls.
    public static func start(certificate: String, key: String, lifetime: Int = 300) async throws -> TLSRecordServer {
        try await offThePool { try launch(certificate: certificate, key: key, lifetime: lifetime) }
    }

    /// Starts an instance serving `certificate` and `key` (PEM paths) on 127.0.0.1.
    public static func launch(certificate: String, key: String, lifetime: Int = 300) throws -> TLSRecordServer {
        let script = try TestFixtures.file("tls_record_server.py")
        let python = try TestFixtures.executable("python3", candidates: ["/usr/bin/python3", "/usr/local/bin/python3"])
        let child = try ChildProcess(
            name: "tls_record_server.py", executable: python,
            arguments: [script.path, "--cert", certificate, "--key", key, "--lifetime", String(lifetime)])
        do {
            let announced = try child.readAnnouncements(["PORT"], timeout: 10)
            guard let text = announced["PORT"], let port = Int(text), port > 0 else {
                throw TestServerError("tls_record_server.py announced a bad port: \(announced)")
            }
            return TLSRecordServer(port: port, child: child)
        } catch {
            child.stop(grace: 1)
            throw error
        }
    }

    /// "https://127.0.0.1:<port><path>"
    public func url(_ path: String) -> String { "https://127.0.0.1:\(self.port)\(path)" }

    public func stop() { self.child.stop(grace: 2) }
}
