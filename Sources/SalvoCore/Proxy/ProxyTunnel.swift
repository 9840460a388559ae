import SalvoTransport

/// The `CONNECT` exchange that turns a connection to an HTTP proxy into a tunnel to the
/// origin (RFC 9110 §9.3.6): the request goes out, the proxy's answer head comes back, and a
/// 2xx makes every later byte the origin's. Driven by ``SocketConnector`` on the socket's
/// readiness; the connect deadline bounds it. Loop-confined, like its connector.
struct ProxyTunnel {
    enum Step {
        /// Waiting for the socket to be writable (`true`) or readable.
        case pending(wantsWrite: Bool)
        /// The tunnel is open; nothing of the origin's has been read.
        case established
        case failed(TransportError)
    }

    /// The most of the proxy's answer kept while looking for the end of its head.
    static let maxResponseHead = 64 * 1024

    private let target: String
    private let proxyHost: String
    private var request: [UInt8]
    private var written = 0
    private var response: [UInt8] = []
    /// Every byte read from the proxy so far, interim answers included.
    private var bytesRead = 0

    /// A tunnel to `target` (`host:port`) through `proxy`.
    init(target: String, through proxy: HTTPProxy) {
        self.target = target
        self.proxyHost = proxy.host
        var head = "CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n"
        if let credentials = proxy.credentials {
            head += "Proxy-Authorization: \(credentials.basicAuthorization)\r\n"
        }
        for field in proxy.connectHeaderFields
        where (try? RequestEncoder.checkedValue(field.value, of: field.name.rawName)) != nil {
            head += "\(field.name.rawName): \(field.value)\r\n"
        }
        head += "\r\n"
        self.request = Array(head.utf8)
    }

    /// Moves the exchange on as far as the socket allows.
    mutating func advance(_ socket: Socket) -> Step {
        while self.written < self.request.count {
            let result = self.request.withUnsafeBytes { socket.write(UnsafeRawBufferPointer(rebasing: $0[self.written...])) }
            switch result {
            case .wrote(let count): self.written += count
            case .wouldBlock: return .pending(wantsWrite: true)
            case .failed(let errno, let detail):
                return .failed(self.failure("the proxy closed the connection during CONNECT", errno: errno, more: detail))
            }
        }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let result = chunk.withUnsafeMutableBytes { socket.read(into: $0) }
            switch result {
            case .bytes(let count):
                self.response.append(contentsOf: chunk[..<count])
                self.bytesRead += count
                if let step = self.answered() { return step }
                // Interim answers count too: a proxy that never ends them is cut off.
                if self.bytesRead > Self.maxResponseHead {
                    return .failed(self.failure("the proxy's answer to CONNECT is over \(Self.maxResponseHead) bytes without a final head"))
                }
            case .wouldBlock:
                return .pending(wantsWrite: false)
            case .closed:
                return .failed(self.failure(self.response.isEmpty
                    ? "the proxy closed the connection without answering CONNECT"
                    : "the proxy closed the connection in its answer to CONNECT"))
            case .failed(let errno, let detail):
                return .failed(self.failure("receiving the proxy's answer to CONNECT failed", errno: errno, more: detail))
            }
        }
    }

    /// The outcome once a whole head is here (interim 1xx heads are passed over), else nil.
    private mutating func answered() -> Step? {
        while let end = Self.headEnd(self.response) {
            let head = self.response[..<end]
            guard let status = Self.status(of: head) else {
                return .failed(self.failure("the proxy's answer to CONNECT is not HTTP/1.x"))
            }
            if (100..<200).contains(status) {
                self.response.removeSubrange(..<end)
                continue
            }
            guard (200..<300).contains(status) else {
                let line = String(decoding: head.prefix { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
                var detail = "the proxy answered \"\(RequestEncoder.printable(line))\" to CONNECT \(self.target)"
                if status == 407 {
                    if let challenge = Self.field("proxy-authenticate", in: head) {
                        detail += " (Proxy-Authenticate: \(RequestEncoder.printable(challenge)))"
                    }
                    return .failed(TransportError(.proxyAuthenticationRequired, host: self.proxyHost, phase: .connect, detail: detail))
                }
                return .failed(self.failure(detail))
            }
            // A 2xx has no body (RFC 9110 §9.3.6), and the origin speaks only when spoken to:
            // a byte past the head would be lost to TLS or taken for the origin's.
            guard end == self.response.count else {
                return .failed(self.failure("the proxy sent bytes after its 2xx answer to CONNECT"))
            }
            return .established
        }
        return nil
    }

    private func failure(_ detail: String, errno: Int32? = nil, more: String? = nil) -> TransportError {
        TransportError(.proxyTunnelFailed, host: self.proxyHost, phase: .connect, errno: errno,
                        detail: more.map { "\(detail) (\($0))" } ?? detail)
    }

    /// Where the head ends (past its empty line, CRLF or a bare LF), or nil.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        var index = 0
        while let newline = bytes[index...].firstIndex(of: 0x0A) {
            let next = newline + 1
            if next < bytes.count, bytes[next] == 0x0A { return next + 1 }
            if next + 1 < bytes.count, bytes[next] == 0x0D, bytes[next + 1] == 0x0A { return next + 2 }
            index = next
        }
        return nil
    }

    /// The status code of `HTTP/1.x NNN …`, or nil.
    static func status(of head: ArraySlice<UInt8>) -> Int? {
        let line = Array(head.prefix(13))
        let prefix = Array("HTTP/1.".utf8)
        guard line.count >= 12, Array(line[0..<7]) == prefix, (0x30...0x39).contains(line[7]), line[8] == 0x20 else { return nil }
        let digits = line[9..<12]
        guard digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        if line.count > 12, line[12] != 0x20, line[12] != 0x0D, line[12] != 0x0A { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// The first value of the field `lowercasedName` in `head`, trimmed.
    static func field(_ lowercasedName: String, in head: ArraySlice<UInt8>) -> String? {
        let text = String(decoding: head, as: UTF8.self)
        for line in text.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }).dropFirst() {
            guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == lowercasedName else { continue }
            return String(line[line.index(after: colon)...].trimmingOWS)
        }
        return nil
    }
}
