import SalvoTestSupport
import Foundation

/// A private tinyproxy on a loopback port (the distribution's HTTP proxy), optionally asking
/// for Basic credentials `user:secret`. Lives at most 300 s, whatever happens to the tests.
final class TinyProxy: Sendable {
    let port: Int
    private let child: ChildProcess
    private let directory: URL

    /// Starts one off the cooperative pool (the wait for its port blocks).
    static func start(requiresCredentials: Bool = false) async throws -> TinyProxy {
        try await offThePool { try TinyProxy(requiresCredentials: requiresCredentials) }
    }

    init(requiresCredentials: Bool = false) throws {
        let tinyproxy = try TestFixtures.executable("tinyproxy", candidates: ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"])
        self.port = try freePort()
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-tinyproxy-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        var config = """
            Port \(self.port)
            Listen 127.0.0.1
            Timeout 60
            MaxClients 100
            Allow 127.0.0.1
            LogLevel Info
            LogFile "\(self.directory.path)/tinyproxy.log"
            DisableViaHeader Yes

            """
        if requiresCredentials { config += "BasicAuth user secret\n" }
        let path = self.directory.appendingPathComponent("tinyproxy.conf").path
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        // -d: in the foreground, so that stopping the child stops the proxy.
        self.child = try ChildProcess(name: "tinyproxy", executable: URL(fileURLWithPath: "/usr/bin/timeout"),
                                      arguments: ["-s", "KILL", "300", tinyproxy.path, "-d", "-c", path])
        for _ in 0..<200 {
            if OpenSSLServer.accepts(port: self.port) { return }
            Thread.sleep(forTimeInterval: 0.025)
        }
        self.child.stop(grace: 1)
        throw TestServerError("tinyproxy did not start on port \(self.port)")
    }

    /// What tinyproxy logged (a CONNECT or a request it forwarded shows there).
    var log: String {
        (try? String(contentsOfFile: self.directory.appendingPathComponent("tinyproxy.log").path, encoding: .utf8)) ?? ""
    }

    var url: String { "http://127.0.0.1:\(self.port)" }

    deinit {
        self.child.stop(grace: 1)
        try? FileManager.default.removeItem(at: self.directory)
    }
}

/// Tests/Fixtures/scripted_proxy.py: a proxy that refuses, asks for credentials, closes or
/// babbles at CONNECT by the target's first label, tunnels otherwise, and echoes requests in
/// absolute form. Every head it received is in ``heads``.
final class ScriptedProxy: Sendable {
    let port: Int
    private let child: ChildProcess
    private let logPath: String

    /// Starts one off the cooperative pool (the wait for its port blocks).
    static func start() async throws -> ScriptedProxy {
        try await offThePool { try ScriptedProxy() }
    }

    init() throws {
        let python = try TestFixtures.executable("python3", candidates: ["/usr/bin/python3", "/usr/local/bin/python3"])
        self.logPath = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-proxy-\(UUID().uuidString.prefix(8)).log").path
        self.child = try ChildProcess(name: "scripted_proxy.py", executable: python,
                                      arguments: [try TestFixtures.file("scripted_proxy.py").path, self.logPath, "300"])
        do {
            let announced = try self.child.readAnnouncements(["PORT"], timeout: 10)
            guard let text = announced["PORT"], let port = Int(text) else { throw TestServerError("scripted_proxy.py: no port") }
            self.port = port
        } catch {
            self.child.stop(grace: 1)
            throw error
        }
    }

    /// The request heads received so far, in order.
    var heads: [String] {
        let text = (try? String(contentsOfFile: self.logPath, encoding: .utf8)) ?? ""
        return text.components(separatedBy: "----\n").filter { !$0.isEmpty }
    }

    var url: String { "http://127.0.0.1:\(self.port)" }

    deinit {
        self.child.stop(grace: 1)
        try? FileManager.default.removeItem(atPath: self.logPath)
    }
}
