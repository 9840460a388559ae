import SalvoTransport
import CSalvo
#if canImport(Glibc)
import Glibc
#endif

/// Readiness a loop can watch a descriptor for.
package struct IOInterest: OptionSet, Hashable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }
    package static let read = IOInterest(rawValue: salvo_EPOLLIN | salvo_EPOLLRDHUP)
    package static let write = IOInterest(rawValue: salvo_EPOLLOUT)
    package static let none = IOInterest([])
}

/// An epoll instance and its event buffer. Owned by one ``EventLoop``; not thread-safe.
struct Epoll: ~Copyable {
    let fd: Int32
    private let events: UnsafeMutablePointer<epoll_event>
    let capacity: Int

    init(capacity: Int = 256) throws(SystemError) {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw SystemError(call: "epoll_create1", errno: salvo_errno()) }
        self.fd = fd
        self.capacity = capacity
        self.events = .allocate(capacity: capacity)
    }

    deinit {
        SystemCall.close(self.fd)
        self.events.deallocate()
    }

    func add(_ descriptor: Int32, interest: IOInterest, token: UInt64) throws(SystemError) {
        try self.control(EPOLL_CTL_ADD, descriptor, interest, token)
    }

    func modify(_ descriptor: Int32, interest: IOInterest, token: UInt64) throws(SystemError) {
        try self.control(EPOLL_CTL_MOD, descriptor, interest, token)
    }

    func remove(_ descriptor: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(self.fd, EPOLL_CTL_DEL, descriptor, &event)
    }

    private func control(_ op: Int32, _ descriptor: Int32, _ interest: IOInterest, _ token: UInt64) throws(SystemError) {
        var event = epoll_event()
        salvo_epoll_event_set(&event, interest.rawValue, token)
        if epoll_ctl(self.fd, op, descriptor, &event) != 0 {
            throw SystemError(call: "epoll_ctl", errno: salvo_errno())
        }
    }

    /// Waits up to `timeoutMilliseconds` (-1: forever) and returns how many events are ready.
    func wait(timeoutMilliseconds: Int32) throws(SystemError) -> Int {
        while true {
            let n = epoll_wait(self.fd, self.events, Int32(self.capacity), timeoutMilliseconds)
            if n >= 0 { return Int(n) }
            let err = salvo_errno()
            if err == EINTR { return 0 }
            throw SystemError(call: "epoll_wait", errno: err)
        }
    }

    func event(at index: Int) -> (events: UInt32, token: UInt64) {
        let pointer = self.events + index
        return (salvo_epoll_event_events(pointer), salvo_epoll_event_data(pointer))
    }
}
