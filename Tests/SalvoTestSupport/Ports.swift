import Foundation

/// A loopback port nothing listens on (the kernel picked it free, and it was let go): a
/// connection to it is refused.
public func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    guard let port = bindToLoopback(fd) else { throw TestServerError("cannot find a free port") }
    return port
}

/// Binds `fd` to 127.0.0.1 on a port the kernel picks; that port, or nil if it cannot.
public func bindToLoopback(_ fd: Int32) -> Int? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let rc = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
            guard bind(fd, pointer, length) == 0 else { return -1 }
            return getsockname(fd, pointer, &length)
        }
    }
    return rc == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
}
