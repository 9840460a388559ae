import SalvoTransport
import CSalvo
#if canImport(Glibc)
import Glibc
#endif

/// A connected stream socket registered with its event loop: plain TCP, or TLS over it.
///
/// The one place where the engine moves a connection's bytes — read, write, readiness,
/// close — for the client's connections and the load generator's alike, as wrk's five-function
/// socket table does for its connections. Callers see ``ReadResult`` and ``WriteResult``;
/// whether TLS sits in between is this type's business, and so are the rules that keep a
/// peer's misbehaviour from harming the process: writes never raise SIGPIPE (plain sends use
/// `MSG_NOSIGNAL`, TLS goes through a BIO that does), and a TLS connection that failed is
/// closed without a `close_notify`. A ``SocketConnector`` makes one.
///
/// A value with one owner: the connection that holds it. Loop-confined.
package struct Socket {
    /// The outcome of a read.
    package enum ReadResult: Equatable {
        /// This many bytes arrived.
        case bytes(Int)
        /// Nothing for now: wait for readability (TLS may need writability first).
        case wouldBlock(wantsWrite: Bool)
        /// The peer ended the stream: with TCP's FIN on a plain socket, with a close_notify on
        /// TLS (`clean`), or without one (not `clean`: a body running to the close may be cut).
        case closed(clean: Bool)
        /// The connection broke: a reset (`errno`), or a TLS error (`detail`).
        case failed(errno: Int32, detail: String?)
    }

    /// The outcome of a write.
    package enum WriteResult: Equatable {
        /// This many bytes went out (maybe fewer than offered).
        case wrote(Int)
        /// None went out: wait for writability (TLS may need readability first).
        case wouldBlock(wantsRead: Bool)
        /// The connection broke (`EPIPE` or `ECONNRESET` when the peer went away). The peer may
        /// have answered before it did: what already arrived can still be read.
        case failed(errno: Int32, detail: String?)
    }

    package private(set) var fd: Int32
    package private(set) var token: UInt64 = 0
    package private(set) var interest: IOInterest = .none
    package private(set) var tls: TLSSession?

    /// No socket.
    package static var none: Socket { Socket(fd: -1) }

    init(fd: Int32) {
        self.fd = fd
    }

    package var isOpen: Bool { self.fd >= 0 }

    /// Whether epoll watches the descriptor (see ``detachFromEpoll(on:)``).
    package var isRegistered: Bool { self.token != 0 }

    // MARK: Bytes

    /// Reads what is there, up to `buffer.count` bytes.
    @inlinable
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        if let tls = self.tls { return tls.read(into: buffer) }
        while true {
            let n = Glibc.read(self.fd, buffer.baseAddress, buffer.count)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .closed(clean: true) }
            let err = salvo_errno()
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return .wouldBlock(wantsWrite: false) }
            return .failed(errno: err, detail: nil)
        }
    }

    /// Whether an idle connection can still carry a request: nothing has arrived on it (a
    /// byte, or the peer's FIN, or a reset) since its last response. One non-blocking peek —
    /// for the requests that must not meet a connection the server already closed (a POST
    /// cannot be sent again once it may have been processed). With TLS, what waits is opened
    /// first: session tickets and other handshake messages do not count, application data or
    /// a close_notify does.
    package var isQuietAndOpen: Bool {
        if let tls = self.tls { return tls.isQuietAndOpen }
        var byte: UInt8 = 0
        while true {
            let n = recv(self.fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            if n > 0 || n == 0 { return false }
            let err = salvo_errno()
            if err == EINTR { continue }
            return err == EAGAIN || err == EWOULDBLOCK
        }
    }

    /// Whether a read that returned fewer bytes than asked for left nothing behind: true for
    /// a plain socket (the kernel gave all it had), false while TLS holds decrypted bytes.
    @inlinable
    package var drainedByShortRead: Bool {
        guard let tls = self.tls else { return true }
        return !tls.hasBufferedBytes
    }

    /// Writes what the socket takes of `bytes`.
    @inlinable
    package func write(_ bytes: UnsafeRawBufferPointer) -> WriteResult {
        guard bytes.count > 0 else { return .wrote(0) }
        if let tls = self.tls { return tls.write(bytes) }
        while true {
            let n = salvo_send(self.fd, bytes.baseAddress, bytes.count)
            if n >= 0 { return .wrote(n) }
            let err = salvo_errno()
            if err == EINTR { continue }
            if err == EAGAIN || err == EWOULDBLOCK { return .wouldBlock(wantsRead: false) }
            return .failed(errno: err, detail: nil)
        }
    }

    /// Writes what the socket takes of `first` followed by `second`: one `sendmsg` on a plain
    /// socket. On TLS, when both fit one record, they are copied side by side into `scratch`
    /// and go out in one `SSL_write`, so one record; otherwise `second` only once `first` is
    /// all out.
    ///
    /// Why one record: a server may read one record, answer and close. A body sent in a record
    /// of its own would then still be unread, and the server's kernel answers a close with
    /// unread data by a reset, which can destroy the answer before the client has read it.
    ///
    /// A write that OpenSSL could not finish (want-read or want-write) must be retried with
    /// the same bytes from the same start, and at least as many. Callers pass the same
    /// `first` and `second` again (``RequestWriter`` moves on only by what was written), so a
    /// retry is joined or not as the first try was, with the same bytes copied — or, when a
    /// body held for `100 Continue` was released meanwhile, with more bytes after those,
    /// which OpenSSL accepts. The copy need not be at the same address: the context accepts a
    /// moving write buffer (`salvo_SSL_MODE_PARTIAL_WRITE`).
    package func write(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer,
                       joiningIn scratch: UnsafeMutableRawBufferPointer) -> WriteResult {
        if second.isEmpty { return self.write(first) }
        if first.isEmpty { return self.write(second) }
        if let tls = self.tls {
            let total = first.count + second.count
            if total <= TLSSession.maxRecordPlaintext, total <= scratch.count, let start = scratch.baseAddress {
                start.copyMemory(from: first.baseAddress!, byteCount: first.count)
                (start + first.count).copyMemory(from: second.baseAddress!, byteCount: second.count)
                return tls.write(UnsafeRawBufferPointer(start: start, count: total))
            }
            let head = self.write(first)
            guard case .wrote(let n) = head, n == first.count else { return head }
            if case .wrote(let more) = self.write(second) { return .wrote(n + more) }
            return .wrote(n)
        }
        var vectors = (
            iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count),
            iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count))
        return withUnsafeBytes(of: &vectors) { raw in
            let iov = raw.baseAddress!.assumingMemoryBound(to: iovec.self)
            while true {
                let n = salvo_sendv(self.fd, iov, 2)
                if n >= 0 { return .wrote(n) }
                let err = salvo_errno()
                if err == EINTR { continue }
                if err == EAGAIN || err == EWOULDBLOCK { return .wouldBlock(wantsRead: false) }
                return .failed(errno: err, detail: nil)
            }
        }
    }

    // MARK: The loop

    /// Starts watching the descriptor for `interest` on `loop`, reporting to `target`.
    mutating func register(on loop: EventLoop, target: any Selectable, interest: IOInterest) throws(SystemError) {
        self.token = try loop.register(self.fd, target, interest: interest)
        self.interest = interest
    }

    /// Changes what the loop watches the descriptor for.
    package mutating func setInterest(_ interest: IOInterest, on loop: EventLoop) {
        guard interest != self.interest, self.fd >= 0, self.token != 0 else { return }
        self.interest = interest
        try? loop.reregister(self.fd, token: self.token, interest: interest)
    }

    /// Stops watching the descriptor, keeping it open (epoll reports a hang-up whatever the
    /// interest, so a paused connection whose peer left would otherwise wake its loop forever).
    package mutating func detachFromEpoll(on loop: EventLoop) {
        guard self.token != 0 else { return }
        loop.deregister(self.fd, token: self.token)
        self.token = 0
        self.interest = .none
    }

    /// Takes the TLS session that will carry this socket's bytes from now on.
    mutating func attach(_ session: TLSSession) {
        self.tls = session
    }

    /// Closes the socket: a best-effort close_notify when TLS is healthy, then the descriptor.
    package mutating func close(on loop: EventLoop) {
        guard self.fd >= 0 else { return }
        self.tls?.shutdown()
        self.tls = nil
        self.detachFromEpoll(on: loop)
        SystemCall.close(self.fd)
        self.fd = -1
    }
}
