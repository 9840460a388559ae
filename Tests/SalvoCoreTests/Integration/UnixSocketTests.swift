import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore
import SalvoTestSupport

/// Requests to a server on a Unix domain socket (curl's `--unix-socket`): pooled like TCP,
/// the URL still naming the host; and `salvo get --unix-socket` beside the real curl.
@Suite struct UnixSocketTests {
    /// Starts Tests/Fixtures/unix_server.py on a fresh socket path.
    static func startServer() async throws -> (ChildProcess, String, URL) {
        try await offThePool { try launchServer() }
    }

    static func launchServer() throws -> (ChildProcess, String, URL) {
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
        let (server, path, directory) = try await Self.startServer()
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

    @Test func salvoGetLikeCurl() async throws {
        let (server, path, directory) = try await Self.startServer()
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        try await CLITests.sideBySide(["-s", "--unix-socket", path, "http://daemon.local/ok"])
        try await CLITests.sideBySide(["-s", "--unix-socket", directory.appendingPathComponent("nobody.sock").path, "http://daemon.local/ok"])
    }

    /// A Unix socket whose accept queue is full refuses connect(2) with EAGAIN at once (TCP
    /// would drop the SYN and retry): the client tries again until its connect deadline, and
    /// gets through once the server accepts.
    @Test func aFullAcceptQueueIsWaitedOut() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-unix-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("busy.sock").path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && listen(listener, 0) == 0 }
        }
        try #require(bound)
        // Fill the queue until a connect says EAGAIN.
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        var full = false
        for _ in 0..<8 where !full {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) } }
            if rc != 0 && errno == EAGAIN {
                close(fd)
                full = true
            } else {
                fillers.append(fd)
            }
        }
        try #require(full, "the accept queue never filled")

        // After 300 ms the server starts accepting: the fillers say nothing, the client asks.
        let server = Thread {
            Thread.sleep(forTimeInterval: 0.3)
            for _ in 0..<16 {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                var pollee = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
                guard poll(&pollee, 1, 100) == 1 else { continue }
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = read(connection, &buffer, buffer.count)
                let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)
                _ = answer.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                close(connection)
                return
            }
        }
        server.start()
        let client = try makeClient {
            $0.threads = 1
            $0.unixSocketPath = path
            $0.connectTimeout = .seconds(10)
        }
        defer { client.shutdown() }
        let response = try await client.execute(try get("http://busy.local/"), options: .init(timeout: .seconds(20)))
        #expect(response.status == .ok && response.body == Array("ok".utf8))
    }
}
