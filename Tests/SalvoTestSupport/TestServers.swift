// Test servers that integration tests start for themselves: the scripted
// fault server (Tests/Fixtures/fault_server.py) and a private nginx
// (Tests/Fixtures/start-nginx.sh).  Both listen on 127.0.0.1 only, each start()
// gives a separate instance on its own port, and both stop by themselves if
// this process dies (they watch their parent and have a bounded lifetime).
// The lifetime is an hour by default: a server shared by a whole run must outlive it, and a
// sanitized run of the suite, one test at a time, takes longer than ten minutes.
//
// Self-contained: Foundation and Glibc only; no URLSession.

import Foundation
import Glibc

// MARK: - Errors and fixture location

public struct TestServerError: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

public enum TestFixtures {
    /// `…/Tests/Fixtures`, found from this file's own path
    /// (`…/Tests/SalvoTestSupport/TestServers.swift`).
    public static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // SalvoTestSupport
        .deletingLastPathComponent()  // Tests
        .appendingPathComponent("Fixtures", isDirectory: true)

    /// The path of an executable product built beside the test bundle (`salvo`,
    /// `cache-store-child`…), found by walking up from the running test binary; the bare name
    /// (to be found on PATH) when there is none.
    public static func product(_ name: String) -> String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return name
    }

    /// The repository's root.
    public static let repository: URL = directory.deletingLastPathComponent().deletingLastPathComponent()

    /// `…/scripts`, where the demo's own servers live.
    public static let scripts: URL = repository.appendingPathComponent("scripts", isDirectory: true)

    public static func file(_ name: String) throws -> URL {
        let url = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw TestServerError("fixture not found: \(url.path)")
        }
        return url
    }

    /// The first of `candidates` that is an executable file, else `name`
    /// looked up on PATH.
    public static func executable(_ name: String, candidates: [String]) throws -> URL {
        let fm = FileManager.default
        for path in candidates where fm.isExecutableFile(atPath: path) {
            return URL(fileURLWithPath: path)
        }
        let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in searchPath.split(separator: ":") where !dir.isEmpty {
            let path = "\(dir)/\(name)"
            if fm.isExecutableFile(atPath: path) {
                return URL(fileURLWithPath: path)
            }
        }
        throw TestServerError("\(name) not found (looked in \(candidates) and PATH)")
    }
}

// MARK: - Child process with announced "KEY value" lines

/// A launched helper process that announces itself on stdout with lines such
/// as `PORT 4242`.
///
/// `@unchecked Sendable` is safe: `process`, `stdout` and `exitSignal` are set
/// once in `init` and never reassigned; the only mutable state (`stopped`,
/// `exited`) is read and written only while holding `lock`.  Stdout is read
/// only by `readAnnouncements`, which `start()` calls once, before the object
/// is shared.
public final class ChildProcess: @unchecked Sendable {
    public let name: String
    private let process: Process
    private let stdout: Pipe
    private let exitSignal = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var stopped = false
    private var exited = false

    public init(name: String, executable: URL, arguments: [String], environment: [String: String] = [:]) throws {
        self.name = name
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardInput = FileHandle.nullDevice
        // Inherited, so a failing server's complaints show in the test log.
        process.standardError = FileHandle.standardError
        let semaphore = exitSignal
        process.terminationHandler = { _ in semaphore.signal() }
        self.process = process
        do {
            self.stdout = try launching { () throws -> Pipe in
                let stdout = Pipe()
                process.standardOutput = stdout
                try process.run()
                return stdout
            }
        } catch {
            throw TestServerError("cannot launch \(name) (\(executable.path)): \(error)")
        }
    }

    deinit {
        stop()
    }

    public var pid: pid_t { process.processIdentifier }

    public var isRunning: Bool { process.isRunning }

    /// Reads stdout until each of `keys` has been announced as `KEY value`;
    /// fails if that takes longer than `timeout` or the process exits first.
    public func readAnnouncements(_ keys: Set<String>, timeout: TimeInterval = 10) throws -> [String: String] {
        let fd = stdout.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(timeout)
        var pending: [UInt8] = []
        var found: [String: String] = [:]
        var buffer = [UInt8](repeating: 0, count: 4096)

        while !keys.isSubset(of: Set(found.keys)) {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 {
                throw TestServerError(
                    "\(name) did not announce \(keys.sorted()) within \(Int(timeout)) s (got \(found))")
            }
            // Short slices, so a process that dies without closing stdout
            // (an inherited descriptor elsewhere) is noticed quickly too.
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(remaining, 0.1) * 1000) + 1)
            if ready < 0 {
                if errno == EINTR { continue }
                throw TestServerError("\(name): poll on stdout failed (errno \(errno))")
            }
            if ready == 0 {
                if !process.isRunning {
                    throw TestServerError("\(name) exited (status \(process.terminationStatus)) before announcing \(keys.sorted())")
                }
                continue
            }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw TestServerError("\(name): reading stdout failed (errno \(errno))")
            }
            if n == 0 {
                // EOF: the process closed stdout, most likely by exiting.
                _ = waitForExit(timeout: 1)
                let status = process.isRunning ? "still running" : "status \(process.terminationStatus)"
                throw TestServerError("\(name) closed stdout (\(status)) before announcing \(keys.sorted())")
            }
            pending.append(contentsOf: buffer[0..<n])
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                if parts.count == 2, keys.contains(parts[0]) {
                    found[parts[0]] = parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return found
    }

    /// Waits until the process has exited and been reaped; false on timeout.
    public func waitForExit(timeout: TimeInterval) -> Bool {
        lock.lock()
        let already = exited
        lock.unlock()
        if already { return true }
        guard exitSignal.wait(timeout: .now() + timeout) == .success else {
            return false
        }
        lock.lock()
        exited = true
        lock.unlock()
        return true
    }

    /// Stops the process once; later calls return at once.  By default sends
    /// SIGTERM to the process itself; with `target`, sends it to that pid
    /// instead (a grandchild the process waits for).  After `grace` seconds
    /// both get SIGKILL.  Returns after the process has been reaped.
    public func stop(target: pid_t? = nil, grace: TimeInterval = 5) {
        lock.lock()
        if stopped {
            lock.unlock()
            return
        }
        stopped = true
        lock.unlock()

        if process.isRunning {
            // While the process runs, `target` (its child) cannot have been
            // reaped, so its pid cannot have been reused.
            _ = Glibc.kill(target ?? pid, SIGTERM)
        }
        if !waitForExit(timeout: grace) {
            if let target {
                _ = Glibc.kill(target, SIGKILL)
            }
            _ = Glibc.kill(pid, SIGKILL)
            _ = waitForExit(timeout: 10)
        }
        try? stdout.fileHandleForReading.close()
    }
}

// MARK: - A tiny blocking HTTP/1.1 GET over loopback

public enum LoopbackHTTP {
    public struct Response: Sendable {
        public let status: Int
        public let head: String
        public let body: [UInt8]
    }

    /// One `GET path` on a fresh connection to 127.0.0.1:port with
    /// `Connection: close`; reads the response (Content-Length or until EOF).
    public static func get(port: Int, path: String, host: String = "127.0.0.1", timeout: TimeInterval = 10) throws -> Response {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else {
            throw TestServerError("socket() failed (errno \(errno))")
        }
        defer { _ = Glibc.close(fd) }

        var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))

        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port)).bigEndian
        addr.sin_addr = in_addr(s_addr: inet_addr(host))
        var rc: Int32
        repeat {
            rc = withUnsafePointer(to: addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        } while rc < 0 && errno == EINTR
        guard rc == 0 else {
            throw TestServerError("connect to 127.0.0.1:\(port) failed (errno \(errno))")
        }

        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let n = request.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw TestServerError("send to 127.0.0.1:\(port) failed (errno \(errno))")
            }
            sent += n
        }

        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headEnd: Int? = nil
        var contentLength: Int? = nil
        while true {
            if let headEnd, let contentLength, data.count - headEnd >= contentLength {
                break
            }
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    throw TestServerError("GET \(path) on port \(port): no response within \(Int(timeout)) s")
                }
                throw TestServerError("GET \(path) on port \(port): recv failed (errno \(errno))")
            }
            if n == 0 { break }
            data.append(contentsOf: buffer[0..<n])
            if headEnd == nil, let end = findHeadEnd(data) {
                headEnd = end
                contentLength = parseContentLength(String(decoding: data[..<end], as: UTF8.self))
            }
        }

        guard let headEnd else {
            throw TestServerError("GET \(path) on port \(port): incomplete response head (\(data.count) bytes)")
        }
        let head = String(decoding: data[..<headEnd], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n", maxSplits: 1).first ?? ""
        let fields = statusLine.split(separator: " ")
        guard fields.count >= 2, fields[0].hasPrefix("HTTP/1."), let status = Int(fields[1]) else {
            throw TestServerError("GET \(path) on port \(port): bad status line \(String(statusLine).debugDescription)")
        }
        var body = Array(data[headEnd...])
        if let contentLength {
            guard body.count >= contentLength else {
                throw TestServerError("GET \(path) on port \(port): body truncated (\(body.count) of \(contentLength) bytes)")
            }
            body = Array(body.prefix(contentLength))
        }
        return Response(status: status, head: head, body: body)
    }

    /// Index just past the CRLFCRLF ending the head, if present.
    private static func findHeadEnd(_ data: [UInt8]) -> Int? {
        guard data.count >= 4 else { return nil }
        for i in 0...(data.count - 4)
        where data[i] == 13 && data[i + 1] == 10 && data[i + 2] == 13 && data[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    private static func parseContentLength(_ head: String) -> Int? {
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == "content-length" {
                return Int(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
        }
        return nil
    }
}

// MARK: - Fault server

/// What the fault server has seen: `GET /__log`.  Entries also describe
/// `/echo` response bodies (decode those as `FaultServerLog.Request`).
public struct FaultServerLog: Decodable, Sendable {
    public struct Request: Decodable, Sendable {
        public let method: String
        /// The request target as received, query included.
        public let path: String
        public let version: String
        /// `[name, value]` pairs, in order, as received.
        public let headers: [[String]]
        /// Length of the (decoded) request body.
        public let bodyLength: Int
        /// Connection id (from 1, in accept order).
        public let connection: Int
        /// 1-based index of this request on its connection.
        public let sequence: Int
        /// With `expect=final`: bytes the client sent after the early answer.
        public let afterBytes: Int?

        public enum CodingKeys: String, CodingKey {
            case method, path, version, headers
            case afterBytes = "after_bytes"
            case bodyLength = "body_len"
            case connection = "conn"
            case sequence = "seq"
        }

        /// Values of every header named `name` (case-insensitive), in order.
        public func headerValues(_ name: String) -> [String] {
            let wanted = name.lowercased()
            return headers.compactMap { pair in
                pair.count == 2 && pair[0].lowercased() == wanted ? pair[1] : nil
            }
        }

        /// The first value of header `name`, if any.
        public func header(_ name: String) -> String? {
            headerValues(name).first
        }
    }

    /// Connections accepted since start or the last reset (connections used
    /// only for /__log or /__reset are not counted).
    public let connections: Int
    /// Requests received, in arrival order (control requests excluded).
    public let requests: [Request]
}

/// A private instance of `Tests/Fixtures/fault_server.py`.  See the table at
/// the top of that file for the scenarios (`/ok`, `/truncated`, `/reset`, …).
public final class FaultServer: Sendable {
    public let port: Int
    private let child: ChildProcess

    /// The address it listens on: 127.0.0.1, or ::1 when started so.
    public let host: String

    private init(port: Int, child: ChildProcess, host: String) {
        self.port = port
        self.child = child
        self.host = host
    }

    deinit {
        stop()
    }

    /// ``launch(lifetime:host:)`` off the cooperative pool: what a test calls.
    public static func start(lifetime: Int = 3600, host: String = "127.0.0.1") async throws -> FaultServer {
        try await offThePool { try launch(lifetime: lifetime, host: host) }
    }

    /// Launches a new instance and waits (up to 10 s) for its port.
    /// `lifetime`: the server exits by itself after that many seconds.
    public static func launch(lifetime: Int = 3600, host: String = "127.0.0.1") throws -> FaultServer {
        let script = try TestFixtures.file("fault_server.py")
        let python: URL
        if let override = ProcessInfo.processInfo.environment["SALVO_PYTHON"], !override.isEmpty {
            python = URL(fileURLWithPath: override)
        } else {
            python = try TestFixtures.executable("python3", candidates: ["/usr/bin/python3", "/usr/local/bin/python3"])
        }
        let child = try ChildProcess(
            name: "fault_server.py",
            executable: python,
            arguments: [script.path, "--host", host, "--port", "0", "--lifetime", String(lifetime)]
        )
        do {
            let announced = try child.readAnnouncements(["PORT"], timeout: 10)
            guard let text = announced["PORT"], let port = Int(text), port > 0 else {
                throw TestServerError("fault_server.py announced a bad port: \(announced)")
            }
            return FaultServer(port: port, child: child, host: host)
        } catch {
            child.stop(grace: 1)
            throw error
        }
    }

    public var pid: pid_t { child.pid }

    /// "http://127.0.0.1:<port><path>"
    public func url(_ path: String) -> String {
        let authority = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "http://\(authority):\(port)\(path)"
    }

    /// Terminates the server and reaps it.  Idempotent; also run by deinit.
    public func stop() {
        child.stop()
    }

    /// A blocking GET on a fresh connection (for fixtures and sanity checks,
    /// not for the code under test).
    public func get(_ path: String, timeout: TimeInterval = 10) throws -> LoopbackHTTP.Response {
        try LoopbackHTTP.get(port: port, path: path, host: self.host.contains(":") ? "127.0.0.1" : self.host, timeout: timeout)
    }

    /// The requests received so far and the connection count.
    public func log() throws -> FaultServerLog {
        let response = try get("/__log")
        guard response.status == 200 else {
            throw TestServerError("GET /__log answered \(response.status)")
        }
        do {
            return try JSONDecoder().decode(FaultServerLog.self, from: Data(response.body))
        } catch {
            throw TestServerError("cannot decode /__log: \(error); body: \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    /// Clears the request log and the connection counter.
    public func resetLog() throws {
        let response = try get("/__reset")
        guard response.status == 200 else {
            throw TestServerError("GET /__reset answered \(response.status)")
        }
    }
}

// MARK: - nginx

/// A private nginx started by `Tests/Fixtures/start-nginx.sh` in a fresh
/// temporary directory, removed again by `stop()`.
///
/// Locations: `/small` ("hello, world\n"), `/1k` `/64k` `/1m` (random files,
/// compare with `file(_:)`), `/head` (static file), `/status/404`,
/// `/redirect` (302 to /small), `/sink` (200 "ok\n", drops any request body).
public final class NginxServer: Sendable {
    public let port: Int
    /// The nginx process (a child of the start script).
    public let pid: pid_t
    /// The instance directory: nginx.conf, error.log, www/.
    public let directory: URL
    private let child: ChildProcess

    /// The HTTPS port, when started with a certificate (0 otherwise).
    public let tlsPort: Int
    /// Started with `http2`: the port speaking HTTP/2 over cleartext with prior knowledge (the
    /// HTTPS port then offers `h2` through ALPN too); 0 otherwise.
    public let h2cPort: Int

    private init(port: Int, pid: pid_t, directory: URL, child: ChildProcess, tlsPort: Int = 0, h2cPort: Int = 0) {
        self.port = port
        self.pid = pid
        self.directory = directory
        self.child = child
        self.tlsPort = tlsPort
        self.h2cPort = h2cPort
    }

    deinit {
        stop()
    }

    /// ``launch(lifetime:tls:)`` off the cooperative pool: what a test calls.
    public static func start(lifetime: Int = 3600, tls: (certificate: String, key: String)? = nil,
                             http2: Bool = false, connections: Int? = nil) async throws -> NginxServer {
        try await offThePool { try launch(lifetime: lifetime, tls: tls, http2: http2, connections: connections) }
    }

    /// Launches a new instance and waits (up to 10 s) for its port and pid.
    /// With `tls` (certificate and key PEM paths) nginx also serves HTTPS on `tlsPort`.
    /// With `http2` (and `tls`), the HTTPS port offers HTTP/2 and `h2cPort` speaks it in cleartext.
    /// `connections`: nginx's worker_connections, for tests that hold more than 4,096 at once
    /// (bounded by the open-file limit).
    public static func launch(lifetime: Int = 3600, tls: (certificate: String, key: String)? = nil,
                              http2: Bool = false, connections: Int? = nil) throws -> NginxServer {
        let script = try TestFixtures.file("start-nginx.sh")
        _ = try TestFixtures.file("nginx.conf.template")
        let bash = try TestFixtures.executable("bash", candidates: ["/bin/bash", "/usr/bin/bash"])
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("salvo-nginx-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

        let child: ChildProcess
        do {
            child = try ChildProcess(
                name: "start-nginx.sh",
                executable: bash,
                arguments: [script.path, directory.path, "--lifetime", String(lifetime)],
                environment: (tls.map { ["SALVO_NGINX_TLS_CERT": $0.certificate, "SALVO_NGINX_TLS_KEY": $0.key] } ?? [:])
                    .merging(http2 ? ["SALVO_NGINX_HTTP2": "1"] : [:]) { first, _ in first }
                    .merging(connections.map { ["SALVO_NGINX_CONNECTIONS": String($0)] } ?? [:]) { first, _ in first }
            )
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        do {
            var expected: Set<String> = tls == nil ? ["PORT", "PID"] : ["PORT", "TLSPORT", "PID"]
            if http2 && tls != nil { expected.insert("H2CPORT") }
            let announced = try child.readAnnouncements(expected, timeout: 10)
            guard let portText = announced["PORT"], let port = Int(portText), port > 0,
                  let pidText = announced["PID"], let pid = pid_t(pidText), pid > 0
            else {
                throw TestServerError("start-nginx.sh announced bad values: \(announced)")
            }
            return NginxServer(port: port, pid: pid, directory: directory, child: child,
                               tlsPort: announced["TLSPORT"].flatMap { Int($0) } ?? 0,
                               h2cPort: announced["H2CPORT"].flatMap { Int($0) } ?? 0)
        } catch {
            child.stop(grace: 2)
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// "http://127.0.0.1:<port><path>"
    public func url(_ path: String) -> String {
        "http://127.0.0.1:\(port)\(path)"
    }

    /// A file served from www/ (`"1k"`, `"64k"`, `"1m"`, `"head"`).
    public func file(_ name: String) -> URL {
        directory.appendingPathComponent("www", isDirectory: true).appendingPathComponent(name)
    }

    /// The contents of a file served from www/.
    public func contents(of name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: file(name)))
    }

    /// A blocking GET on a fresh connection (for sanity checks).
    public func get(_ path: String, timeout: TimeInterval = 10) throws -> LoopbackHTTP.Response {
        try LoopbackHTTP.get(port: port, path: path, timeout: timeout)
    }

    /// SIGTERM to nginx, then reaps the start script (which reaps nginx) and
    /// removes the directory.  Idempotent; also run by deinit.
    public func stop() {
        child.stop(target: pid, grace: 10)
        try? FileManager.default.removeItem(at: directory)
    }
}
