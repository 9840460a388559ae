import SalvoTestSupport
import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore

/// Races between a request's owner and what happens around it: a cancel that arrives while a
/// request leaves a connection's line, and an idle connection the server closed before it
/// was ever used.
@Suite(.serialized) struct RaceTests {
    /// Waits (up to 10 s) until `condition` holds for the first host's statistics.
    static func waitFor<T: Sendable>(_ box: borrowing Mutex<T?>, seconds: Int = 20) async throws -> T? {
        for _ in 0..<(seconds * 100) {
            if let value = box.withLock({ $0 }) { return value }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// A cancellation that reaches a request while it is between two places — taken off a
    /// connection's line, not yet sent again — must not be lost. Here: X and Y wait in line
    /// behind a slow response; X's timeout drops it (its bytes went out, so Y leaves the line
    /// too); X's completion handler cancels Y through its handle. Y must end cancelled, not be
    /// sent again and answered.
    @Test func aCancelFromACompletionHandlerReachesARequestTakenOffTheLine() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        defer { server.stop() }
        let client = try makeClient {
            $0.threads = 1
            $0.maxConnectionsPerHost = 1
            $0.pipeliningDepth = 8
            $0.requestTimeout = .seconds(30)
        }
        defer { client.shutdown() }
        // A connection is pipelined on only once it has kept a response alive.
        _ = try await client.execute(try get(server.url("/ok")))
        // Slow, X and Y handed over in this order from one thread, with no task in between
        // that a busy machine could delay: the slow one takes the connection, the others line up.
        let slow = Mutex<Result<CollectedResponse, TransportError>?>(nil)
        client.execute(try get(server.url("/slow-head?ms=2500"))) { result in slow.withLock { $0 = result } }
        let handleOfY = Mutex<RequestHandle?>(nil)
        let x = Mutex<Result<CollectedResponse, TransportError>?>(nil)
        let y = Mutex<Result<CollectedResponse, TransportError>?>(nil)
        client.execute(try get(server.url("/echo?i=x")), options: .init(timeout: .milliseconds(700))) { result in
            x.withLock { $0 = result }
            // On the loop, as the connection drops X: cancel Y.
            handleOfY.withLock { $0 }?.cancel()
        }
        let handle = client.execute(try get(server.url("/echo?i=y"))) { result in y.withLock { $0 = result } }
        handleOfY.withLock { $0 = handle }
        try await waitForHost(client) { $0.pipelined >= 2 }
        let xResult = try await Self.waitFor(x)
        guard case .failure(let xError) = xResult else {
            Issue.record("X did not time out in line: \(String(describing: xResult))")
            return
        }
        #expect(xError.code == .totalTimeout)
        let yResult = try await Self.waitFor(y)
        switch yResult {
        case .failure(let error):
            #expect(error.code == .cancelled, "\(error)")
        case .success(let response):
            Issue.record("Y was cancelled through its handle, yet sent again and answered \(response.status)")
        case nil:
            Issue.record("Y never ended")
        }
        _ = try await Self.waitFor(slow)
    }

    /// A request that takes an idle connection the pool opened but never used (opened for a
    /// request cancelled before it connected), which the server has closed meanwhile — its
    /// FIN already here, not yet read by the loop. A connection that waited idle is checked
    /// before a POST, and an idempotent request that meets it closed goes again, fresh,
    /// whether or not the connection had served a request: the idle-close race is the same.
    @Test(arguments: [HTTPRequest.Method.post, .get])
    func aRequestOnAnUnusedIdleConnectionTheServerClosedIsNotLost(method: HTTPRequest.Method) async throws {
        let server = try FirstConnectionCloser()
        defer { server.stop() }
        let client = try makeClient { $0.threads = 1 }
        defer { client.shutdown() }
        let loop = client.group.loops[0]
        let base = "http://127.0.0.1:\(server.port)"
        // A connection opened for a request cancelled before it connected: it connects and
        // waits in the pool, unused.
        let never = try get(base + "/never")
        loop.execute {
            let handle = client.execute(never) { _ in }
            handle.cancel()
        }
        try await waitForHost(client) { $0.idle == 1 && $0.open == 1 }
        var request = try get(base + "/order")
        request.method = method
        let order = request
        let outcome = Mutex<Result<CollectedResponse, TransportError>?>(nil)
        loop.execute {
            // The server closes the unused connection; its FIN arrives while the loop is busy
            // here, as it would while the loop serves other connections.
            server.closeFirstConnection()
            // On loopback the FIN is in the client's socket once close returns; a moment more.
            Thread.sleep(forTimeInterval: 0.05)
            client.execute(order, body: method == .post ? .string("one order") : nil, options: .init(timeout: .seconds(10))) { result in
                outcome.withLock { $0 = result }
            }
        }
        let result = try await Self.waitFor(outcome)
        #expect(server.firstConnectionBytes.withLock { $0 } == 0, "the first connection was used after all")
        switch result {
        case .success(let response):
            #expect(response.status == .ok)
        case .failure(let error):
            Issue.record("\(method) on an unused idle connection the server had closed: \(error), mayHaveBeenProcessed \(error.mayHaveBeenProcessed)")
        case nil:
            Issue.record("never ended")
        }
        let orders = server.requestLines.withLock { $0 }.filter { $0.hasSuffix("/order HTTP/1.1") }
        #expect(orders.count <= 1, "\(orders)")
    }
}

/// A loopback server whose first connection is closed, unread, when the test says so; every
/// later connection answers each request `200 ok`, kept alive.
final class FirstConnectionCloser: @unchecked Sendable {
    // @unchecked Sendable: `fd` and `port` are set in init; the rest is behind locks.
    let port: Int
    private let fd: Int32
    private let closeFirst = DispatchSemaphore(value: 0)
    private let firstClosed = DispatchSemaphore(value: 0)
    let requestLines = Mutex<[String]>([])
    /// Bytes the first connection had received when it was closed.
    let firstConnectionBytes = Mutex<Int>(-1)

    init() throws {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard let port = bindToLoopback(listening), listen(listening, 16) == 0 else { throw TestServerError("cannot listen") }
        self.fd = listening
        self.port = port
        Thread.detachNewThread { [self] in self.acceptLoop() }
    }

    /// Closes the first connection and returns once it is closed (its FIN sent), at most ten
    /// seconds on.
    func closeFirstConnection() {
        self.closeFirst.signal()
        _ = self.firstClosed.wait(timeout: .now() + 10)
    }

    func stop() {
        shutdown(self.fd, Int32(SHUT_RDWR))
        close(self.fd)
    }

    private func acceptLoop() {
        var index = 0
        while true {
            let client = accept(self.fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let first = index == 0
            index += 1
            Thread.detachNewThread { [self] in
                if first {
                    self.closeFirst.wait()
                    var peek = [UInt8](repeating: 0, count: 4096)
                    let pending = peek.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }
                    self.firstConnectionBytes.withLock { $0 = max(0, pending) }
                    close(client)
                    self.firstClosed.signal()
                } else {
                    self.serve(client)
                }
            }
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let separator = Array("\r\n\r\n".utf8)
        func more() -> Bool {
            let n = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return false }
            buffer += chunk[0..<n]
            return true
        }
        while true {
            var headEnd: Int? = nil
            while headEnd == nil {
                if buffer.count >= 4 {
                    for i in 0...(buffer.count - 4) where Array(buffer[i..<(i + 4)]) == separator {
                        headEnd = i + 4
                        break
                    }
                }
                if headEnd == nil, !more() { return }
            }
            let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
            let lines = head.components(separatedBy: "\r\n")
            var length = 0
            for line in lines where line.lowercased().hasPrefix("content-length:") {
                length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
            }
            while buffer.count < headEnd! + length {
                if !more() { return }
            }
            buffer.removeFirst(headEnd! + length)
            self.requestLines.withLock { $0.append(lines[0]) }
            let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
            let sent = answer.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent != answer.count { return }
        }
    }
}
