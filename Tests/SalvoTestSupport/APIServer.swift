import Foundation

/// A private instance of `scripts/demo-api.py`, the small JSON API of the demo, on
/// 127.0.0.1 (see the table at the top of that file).
public final class APIServer: Sendable {
    public let port: Int
    private let child: ChildProcess

    private init(port: Int, child: ChildProcess) {
        self.port = port
        self.child = child
    }

    deinit { self.stop() }

    /// ``launch(lifetime:)`` off the cooperative pool: what a test calls.
    public static func start(lifetime: Int = 3600) async throws -> APIServer {
        try await offThePool { try launch(lifetime: lifetime) }
    }

    /// Starts an instance and waits (up to 10 s) for its port.
    public static func launch(lifetime: Int = 3600) throws -> APIServer {
        let script = TestFixtures.scripts.appendingPathComponent("demo-api.py")
        let python = try TestFixtures.executable("python3", candidates: ["/usr/bin/python3", "/usr/local/bin/python3"])
        let child = try ChildProcess(name: "demo-api.py", executable: python,
                                     arguments: [script.path, "--lifetime", String(lifetime)])
        do {
            let announced = try child.readAnnouncements(["PORT"], timeout: 10)
            guard let text = announced["PORT"], let port = Int(text), port > 0 else {
                throw TestServerError("demo-api.py announced a bad port: \(announced)")
            }
            return APIServer(port: port, child: child)
        } catch {
            child.stop(grace: 1)
            throw error
        }
    }

    /// "http://127.0.0.1:<port>"
    public var baseURL: String { "http://127.0.0.1:\(self.port)" }

    public func stop() { self.child.stop(grace: 2) }
}
