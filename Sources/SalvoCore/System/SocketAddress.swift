import SalvoTransport
import CSalvo
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// An IPv4, IPv6 or Unix domain socket address, stored inline.
package struct SocketAddress: Sendable, CustomStringConvertible {
    package var storage: sockaddr_storage
    package var length: socklen_t

    package var family: Int32 { Int32(self.storage.ss_family) }

    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    /// A Unix domain socket's address; nil when the path does not fit one (107 bytes).
    package init?(unixPath path: String) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        var storage = sockaddr_storage()
        withUnsafeBytes(of: &address) { src in
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
        }
        self.init(storage: storage, length: socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1))
    }

    /// Parses a numeric IPv4 or IPv6 address (no brackets), or returns nil.
    init?(numericHost host: String, port: Int) {
        var storage = sockaddr_storage()
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
            address.sin_addr = v4
            withUnsafeBytes(of: &address) { src in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
            address.sin6_addr = v6
            withUnsafeBytes(of: &address) { src in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: src) }
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        } else {
            return nil
        }
    }

    /// The address `fd` is connected to, nil when it cannot tell.
    package static func peer(of fd: Int32) -> SocketAddress? {
        Self.named(fd, getpeername)
    }

    /// The address `fd` is bound to, nil when it cannot tell.
    package static func local(of fd: Int32) -> SocketAddress? {
        Self.named(fd, getsockname)
    }

    private static func named(_ fd: Int32, _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, &length) }
        }
        return result == 0 ? SocketAddress(storage: storage, length: length) : nil
    }

    /// The address as an endpoint: the IP without brackets and the port, or a Unix
    /// socket's path with port 0.
    package var endpoint: SocketEndpoint {
        let text = self.description
        if self.family == AF_UNIX { return SocketEndpoint(address: String(text.dropFirst("unix:".count)), port: 0) }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else {
            return SocketEndpoint(address: text, port: 0)
        }
        let host = text[..<colon]
        return SocketEndpoint(address: String(host.hasPrefix("[") ? host.dropFirst().dropLast() : host), port: port)
    }

    private static func string(_ text: [CChar]) -> String {
        let bytes = text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    package var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        var copy = self.storage
        return withUnsafeMutableBytes(of: &copy) { raw -> String in
            if self.family == AF_UNIX {
                let path = raw[2..<Int(self.length)].prefix { $0 != 0 }
                return "unix:" + String(decoding: path, as: UTF8.self)
            }
            if self.family == AF_INET {
                let sin = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                var addr = sin.pointee.sin_addr
                inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
                return Self.string(text) + ":\(UInt16(bigEndian: sin.pointee.sin_port))"
            } else {
                let sin6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                var addr = sin6.pointee.sin6_addr
                inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
                return "[" + Self.string(text) + "]:\(UInt16(bigEndian: sin6.pointee.sin6_port))"
            }
        }
    }
}

/// Name resolution through getaddrinfo.
package enum Resolver {
    /// The addresses of `host` from the system (getaddrinfo), in its order, or `.dnsFailure`.
    /// It blocks: call it off the event loops (``HostResolver`` does).
    package static func lookup(host: String, port: Int) -> Result<[SocketAddress], TransportError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            let message = String(cString: gai_strerror(rc))
            return .failure(TransportError(.dnsFailure, host: host, phase: .resolve, detail: message))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let sockaddr = entry.pointee.ai_addr,
               entry.pointee.ai_family == AF_INET || entry.pointee.ai_family == AF_INET6 {
                var storage = sockaddr_storage()
                let length = Int(entry.pointee.ai_addrlen)
                withUnsafeMutableBytes(of: &storage) { dst in
                    dst.copyMemory(from: UnsafeRawBufferPointer(start: sockaddr, count: min(length, dst.count)))
                }
                addresses.append(SocketAddress(storage: storage, length: entry.pointee.ai_addrlen))
            }
            cursor = entry.pointee.ai_next
        }
        if addresses.isEmpty {
            return .failure(TransportError(.dnsFailure, host: host, phase: .resolve, detail: "no IPv4 or IPv6 address"))
        }
        return .success(addresses)
    }
}
