import Dispatch
import Foundation
import HTTPTypes
import Salvo
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server: one thread per connection, requests read whole (Content-Length
/// or chunked), each handed to `handle` and its answer written back with a length. Enough to
/// put a `Client` behind a port; not a production server.
final class ProxyServer: Sendable {
    struct Incoming: Sendable {
        var method: String
        var target: String
        var fields: [(name: String, value: String)]
        var body: [UInt8]
        var keepAlive: Bool
    }

    struct Outgoing: Sendable {
        var status: Int
        var reason: String
        var fields: [(name: String, value: String)]
        var body: [UInt8]
    }

    let handle: @Sendable (Incoming) async -> Outgoing

    init(handle: @escaping @Sendable (Incoming) async -> Outgoing) {
        self.handle = handle
    }

    /// Listens on `host:port` (0: any free port) and returns the port; serves on threads of
    /// its own until the process ends.
    func start(host: String, port: Int) throws -> Int {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw ProxyError("socket: errno \(errno)") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard bound, listen(listener, 128) == 0 else { throw ProxyError("cannot listen on \(host):\(port): errno \(errno)") }
        Thread { [self] in
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 { continue }
                Thread { self.serve(connection) }.start()
            }
        }.start()
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var reader = Reader(fd: fd)
        while let request = reader.request() {
            let done = DispatchSemaphore(value: 0)
            let answer = Answer()
            Task {
                answer.value = await self.handle(request)
                done.signal()
            }
            done.wait()
            guard let response = answer.value, Self.write(response, for: request, to: fd), request.keepAlive else { return }
        }
    }

    /// Writes the head and the body with its length (none for HEAD, 1xx, 204 and 304).
    private static func write(_ response: Outgoing, for request: Incoming, to fd: Int32) -> Bool {
        var head = "HTTP/1.1 \(response.status) \(response.reason)\r\n"
        let bodiless = request.method == "HEAD" || response.status == 204 || response.status == 304 || response.status < 200
        for field in response.fields where !Self.hopByHop.contains(field.name.lowercased()) {
            if field.name.lowercased() == "content-length" && !(request.method == "HEAD" || response.status == 304) { continue }
            head += "\(field.name): \(field.value)\r\n"
        }
        if !bodiless { head += "Content-Length: \(response.body.count)\r\n" }
        head += request.keepAlive ? "\r\n" : "Connection: close\r\n\r\n"
        return Self.send(Array(head.utf8), to: fd) && (bodiless || Self.send(response.body, to: fd))
    }

    /// Fields that describe one connection, not the message: never passed on.
    static let hopByHop: Set<String> = ["connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
                                        "proxy-connection", "proxy-authenticate", "proxy-authorization"]

    private static func send(_ bytes: [UInt8], to fd: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Reads requests off one connection.
    private struct Reader {
        let fd: Int32
        var buffer: [UInt8] = []

        mutating func request() -> Incoming? {
            guard let headEnd = self.fill(until: { $0.firstRange(of: [13, 10, 13, 10]).map { $0.upperBound } }) else { return nil }
            let head = String(decoding: self.buffer[..<headEnd], as: UTF8.self)
            self.buffer.removeFirst(headEnd)
            var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
            guard !lines.isEmpty else { return nil }
            let requestLine = lines.removeFirst().split(separator: " ")
            guard requestLine.count == 3 else { return nil }
            var fields: [(name: String, value: String)] = []
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { return nil }
                fields.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            func field(_ name: String) -> String? { fields.first { $0.name.lowercased() == name }?.value }
            var body: [UInt8] = []
            if field("transfer-encoding")?.lowercased().contains("chunked") == true {
                guard let chunked = self.chunkedBody() else { return nil }
                body = chunked
            } else if let length = field("content-length").flatMap({ Int($0) }), length > 0 {
                guard self.fill(until: { $0.count >= length ? length : nil }) != nil else { return nil }
                body = Array(self.buffer.prefix(length))
                self.buffer.removeFirst(length)
            }
            let version = String(requestLine[2])
            let connection = field("connection")?.lowercased() ?? ""
            let keepAlive = version == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
            return Incoming(method: String(requestLine[0]), target: String(requestLine[1]), fields: fields, body: body, keepAlive: keepAlive)
        }

        private mutating func chunkedBody() -> [UInt8]? {
            var body: [UInt8] = []
            while true {
                guard let lineEnd = self.fill(until: { $0.firstRange(of: [13, 10]).map { $0.upperBound } }) else { return nil }
                let sizeText = String(decoding: self.buffer[..<(lineEnd - 2)], as: UTF8.self).split(separator: ";").first ?? ""
                self.buffer.removeFirst(lineEnd)
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
                if size == 0 {
                    // Trailers, up to the empty line.
                    while let end = self.fill(until: { $0.firstRange(of: [13, 10]).map { $0.upperBound } }) {
                        let empty = end == 2
                        self.buffer.removeFirst(end)
                        if empty { return body }
                    }
                    return nil
                }
                guard self.fill(until: { $0.count >= size + 2 ? size + 2 : nil }) != nil else { return nil }
                body += self.buffer.prefix(size)
                self.buffer.removeFirst(size + 2)
            }
        }

        /// Reads until `found` finds what it looks for in the buffer; nil at the end of input.
        private mutating func fill(until found: ([UInt8]) -> Int?) -> Int? {
            while true {
                if let index = found(self.buffer) { return index }
                var chunk = [UInt8](repeating: 0, count: 64 * 1024)
                let count = chunk.withUnsafeMutableBytes { recv(self.fd, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return nil }
                self.buffer += chunk[..<count]
            }
        }
    }
}

/// A value handed from a task to the thread waiting for it.
private final class Answer: @unchecked Sendable {
    // @unchecked Sendable: written by one task before it signals the semaphore the reading
    // thread waits on, and read only after that wait.
    var value: ProxyServer.Outgoing?
}

struct ProxyError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
