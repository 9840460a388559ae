import SalvoTransport
import CSalvo
#if canImport(Glibc)
import Glibc
#endif

/// The outcome of a non-blocking system call: done (with a count) or "try again later".
@usableFromInline
enum IOResult: Equatable {
    case processed(Int)
    case wouldBlock
}

/// A failed system call: its name and errno, captured at once.
package struct SystemError: Error, CustomStringConvertible {
    package let call: StaticString
    package let errno: Int32

    package var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// Wrappers that capture errno, retry EINTR and return EAGAIN as `.wouldBlock`.
enum SystemCall {
    @inline(__always)
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) throws(SystemError) -> IOResult {
        while true {
            let n = Glibc.read(fd, buffer, count)
            if n >= 0 { return .processed(n) }
            let err = salvo_errno()
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(call: "read", errno: err)
        }
    }

    @inline(__always)
    static func send(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) throws(SystemError) -> IOResult {
        while true {
            let n = salvo_send(fd, buffer, count)
            if n >= 0 { return .processed(n) }
            let err = salvo_errno()
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(call: "send", errno: err)
        }
    }

    @inline(__always)
    static func sendv(_ fd: Int32, _ iov: UnsafePointer<iovec>, _ count: Int32) throws(SystemError) -> IOResult {
        while true {
            let n = salvo_sendv(fd, iov, count)
            if n >= 0 { return .processed(n) }
            let err = salvo_errno()
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(call: "sendmsg", errno: err)
        }
    }

    static func close(_ fd: Int32) {
        // Linux releases the descriptor even when close reports EINTR: never retry.
        _ = Glibc.close(fd)
    }
}
