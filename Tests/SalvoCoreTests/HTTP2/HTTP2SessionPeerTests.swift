import Foundation
import HTTPTypes
@testable import SalvoCore
import SalvoTestSupport
import Testing

/// The HTTP/2 session against a real peer — nghttpd, nghttp2's own server, over cleartext with
/// prior knowledge — through a plain socket the test drives: heads, bodies both ways, several
/// streams at once on one connection.
@Suite struct HTTP2SessionPeerTests {
    /// A private nghttpd serving `directory` on 127.0.0.1.
    final class Server {
        let port: Int
        let directory: URL
        private let child: ChildProcess

        init() throws {
            self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-h2-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
            try Data("hello over h2\n".utf8).write(to: self.directory.appendingPathComponent("hello.txt"))
            try Data((0..<300_000).map { UInt8($0 % 251) }).write(to: self.directory.appendingPathComponent("big.bin"))
            let port = try freePort()
            let nghttpd = try TestFixtures.executable("nghttpd", candidates: ["/usr/sbin/nghttpd", "/usr/bin/nghttpd"])
            self.child = try ChildProcess(name: "nghttpd", executable: nghttpd,
                                          arguments: ["--no-tls", "--echo-upload", "-a", "127.0.0.1", "-d", self.directory.path, String(port)])
            self.port = port
            // Ready once it accepts.
            let deadline = Date().addingTimeInterval(10)
            while (try? PeerSocket(port: port)) == nil {
                guard Date() < deadline else { throw TestServerError("nghttpd did not listen on \(port)") }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }

        deinit {
            self.child.stop(grace: 1)
            try? FileManager.default.removeItem(at: self.directory)
        }
    }

    /// A blocking socket with a 5 s read limit: enough for a test driving a session by hand.
    final class PeerSocket {
        let fd: Int32

        init(port: Int) throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw TestServerError("socket: \(errno)") }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(fd)
                throw TestServerError("connect: \(errno)")
            }
            self.fd = fd
        }

        deinit { close(self.fd) }

        func write(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count {
                let sent = bytes[offset...].withUnsafeBytes { send(self.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard sent > 0 else { return }
                offset += sent
            }
        }

        func read() -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = buffer.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, 0) }
            return count > 0 ? Array(buffer[..<count]) : []
        }
    }

    /// The responses of `requests` sent at once on one connection: head and body per stream.
    /// `streamed`: a body given piece by piece, each piece when the session asks for more.
    static func exchange(_ requests: [(HTTPRequest, [UInt8]?)], port: Int, streamed: [[UInt8]]? = nil,
                         settings: HTTP2Session.Settings = HTTP2Session.Settings())
        throws -> [Int32: (head: HTTPResponse?, body: [UInt8], error: UInt32?)] {
        let socket = try PeerSocket(port: port)
        let session = try HTTP2Session(settings: settings)
        var results: [Int32: (head: HTTPResponse?, body: [UInt8], error: UInt32?)] = [:]
        var pieces = streamed ?? []
        for (request, body) in requests {
            let stream = try session.submit(request, body: streamed != nil ? .streamed : body.map { .bytes($0) })
            results[stream] = (nil, [], nil)
        }
        var open = Set(results.keys)
        func handle(_ events: [HTTP2Session.Event]) {
            for event in events {
                switch event {
                case .head(let stream, let head, _): results[stream]?.head = head.response
                case .data(let stream, let chunk, _):
                    results[stream]?.body += chunk
                    // Taken by the caller: the window opens again.
                    session.consume(chunk.count, of: stream)
                case .bodyWanted(let stream):
                    if pieces.isEmpty { session.finishBody(of: stream) } else { session.provide(pieces.removeFirst(), to: stream) }
                case .streamClosed(let stream, let code):
                    results[stream]?.error = code
                    open.remove(stream)
                default: break
                }
            }
        }
        // Writes what is queued and answers what writing brought (a body asking for more), until quiet.
        func pump() {
            while true {
                socket.write(session.output())
                let events = session.drainEvents()
                if events.isEmpty { return }
                handle(events)
            }
        }
        pump()
        while !open.isEmpty {
            let bytes = socket.read()
            guard !bytes.isEmpty else { throw TestServerError("nghttpd closed or went silent with streams \(open) open") }
            handle(try bytes.withUnsafeBytes { try session.receive($0) })
            pump()
        }
        return results
    }

    func request(_ method: HTTPRequest.Method, _ path: String, port: Int) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: "127.0.0.1:\(port)", path: path)
    }

    @Test func headsAndBodiesFromNghttpd() throws {
        let server = try Server()
        let results = try Self.exchange([(self.request(.get, "/hello.txt", port: server.port), nil),
                                         (self.request(.get, "/missing", port: server.port), nil),
                                         (self.request(.get, "/big.bin", port: server.port), nil)], port: server.port)
        let hello = try #require(results[1])
        #expect(hello.head?.status == .ok)
        #expect(hello.body == Array("hello over h2\n".utf8))
        #expect(hello.error == 0)
        #expect(results[3]?.head?.status == .notFound)
        let big = try #require(results[5])
        #expect(big.body.count == 300_000)
        #expect(big.body == (0..<300_000).map { UInt8($0 % 251) }, "a body over several windows, whole and in order")
    }

    @Test func aBodyUpAndBack() throws {
        let server = try Server()
        let body = (0..<100_000).map { UInt8($0 % 7) }
        var upload = self.request(.post, "/echo", port: server.port)
        upload.headerFields[.contentType] = "application/octet-stream"
        let results = try Self.exchange([(upload, body)], port: server.port)
        let echoed = try #require(results[1])
        #expect(echoed.head?.status == .ok)
        #expect(echoed.body == body, "nghttpd --echo-upload sends the body back")
    }

    @Test func aStreamedBodyGivenAsAskedAndABigBodyThroughSmallWindows() throws {
        let server = try Server()
        let pieces = (0..<20).map { index in [UInt8](repeating: UInt8(index), count: 10_000) }
        var upload = self.request(.post, "/echo", port: server.port)
        upload.headerFields[.contentType] = "application/octet-stream"
        let results = try Self.exchange([(upload, nil)], port: server.port, streamed: pieces)
        #expect(results[1]?.head?.status == .ok)
        #expect(results[1]?.body == pieces.flatMap { $0 }, "every piece, in order, then the end")

        // A 16 KB window: 300 KB come through only as the caller consumes them.
        var small = HTTP2Session.Settings()
        small.initialWindowSize = 16_384
        let big = try Self.exchange([(self.request(.get, "/big.bin", port: server.port), nil)], port: server.port, settings: small)
        #expect(big[1]?.body == (0..<300_000).map { UInt8($0 % 251) })
    }
}
