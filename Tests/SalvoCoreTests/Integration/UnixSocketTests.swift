import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore
import SalvoTestSupport

/// Requests to a server on a Unix domain socket (curl's `--unix-socket`): pooled like TCP,
/// the URL still naming the host; and `salvo get --unix-socket` beside the real curl.
@Suite struct UnixSocketTests {
    /// Starts Tests/Fixtures/unix_server.py on a fresh socket path.
    static func startServer() throws -> (ChildProcess, String, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-unix-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("api.sock").path
        let python = try TestFixtures.executable("python3", candidates: ["/usr/bin/python3", "/usr/local/bin/python3"])
        let child = try ChildProcess(name: "unix_server.py", executable: python, arguments: [try TestFixtures.file("unix_server.py").path, path])
        do {
            _ = try child.readAnnouncements(["READY"], timeout: 10)
        } catch {
            child.stop(grace: 1)
            throw error
        }
        return (child, path, directory)
    }

    @Test func requestsGoToTheSocketAndShareAConnection() async throws {
        let (server, path, directory) = try Self.startServer()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let client = try makeClient { $0.threads = 1; $0.unixSocketPath = path }
        defer { client.shutdown() }
        var connections: Set<String> = []
        for _ in 0..<3 {
            let response = try await client.execute(try get("http://daemon.local/ok"))
            #expect(response.status == .ok && response.body == Array("hello unix".utf8))
            #expect(response.headerFields[HTTPField.Name("X-Host")!] == "daemon.local")
            connections.insert(response.headerFields[HTTPField.Name("X-Connection")!] ?? "")
        }
        #expect(connections.count == 1, "one pooled connection, reused")
        // Per request, and refused clearly when nothing listens there.
        let other = try makeClient()
        defer { other.shutdown() }
        var options = HTTPClient.RequestOptions()
        options.unixSocketPath = path
        #expect(try await other.execute(try get("http://x/ok"), options: options).status == .ok)
        options.unixSocketPath = directory.appendingPathComponent("nobody.sock").path
        let code = await errorCode { _ = try await other.execute(try get("http://x/ok"), options: options) }
        #expect(code == .connectFailed)
    }

    @Test func salvoGetLikeCurl() throws {
        let (server, path, directory) = try Self.startServer()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        try CLITests.sideBySide(["-s", "--unix-socket", path, "http://daemon.local/ok"])
        try CLITests.sideBySide(["-s", "--unix-socket", directory.appendingPathComponent("nobody.sock").path, "http://daemon.local/ok"])
    }
}
