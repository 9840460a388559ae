import SalvoTransport
import CSalvo
#if canImport(Glibc)
import Glibc
#endif

/// Opens a connection's ``Socket``: TCP to the resolved addresses raced as Happy Eyeballs
/// v2 does (RFC 8305: the families interleaved, a new attempt every 250 ms or as soon as one
/// fails, the first to connect kept and the others closed), then, through a proxy that tunnels, the `CONNECT` exchange (``ProxyTunnel``), then, for https,
/// the TLS handshake with the origin and the public-key pin check.
///
/// Owned by the connection that needs the socket (the client's or the load generator's). The
/// descriptor is registered with the loop for that connection, which forwards its readiness
/// events to ``ready(loop:target:)`` until the connector answers ``Step/opened(_:)`` — then the
/// socket is the connection's — or ``Step/failed(_:)``. The connection also owns the clock:
/// it checks ``deadline`` and asks for ``timeoutError`` when it passes. Loop-confined.
package struct SocketConnector {
    package enum Step {
        /// Waiting for the socket; the next event goes to ``ready(loop:target:)``.
        case pending
        /// Connected (and, for https, the handshake and pins are done).
        case opened(Socket)
        case failed(TransportError)
    }

    /// The origin: what TLS verifies and what errors name.
    let host: String
    let port: Int
    /// The proxy the addresses are of, or nil when they are the origin's.
    private let proxy: HTTPProxy?
    /// Set while the proxy is asked for a tunnel.
    private var tunnel: ProxyTunnel?
    private let tls: TLSContext?
    private let resumption: TLSResumption?
    /// The ALPN protocols offered when the TLS configuration names none.
    private let applicationProtocols: [String]?
    /// When connecting must be done by: the connect timeout, or the handshake timeout once the
    /// handshake starts, whichever is sooner.
    package private(set) var deadline: Deadline
    private var addresses: [SocketAddress] = []
    private var next = 0
    private var lastErrno: Int32 = 0
    /// TCP connects under way, oldest first (more than one only while racing).
    private var attempts: [Socket] = []
    /// When the next address gets its attempt if none has connected by then.
    private var nextAttemptAt: Deadline?
    /// RFC 8305 §5's Connection Attempt Delay.
    static let attemptDelay: Duration = .milliseconds(250)
    /// How soon a Unix socket whose accept queue was full is tried again.
    static let unixRetryDelay: Duration = .milliseconds(10)
    /// The connected socket (during the CONNECT exchange and the TLS handshake).
    private var socket = Socket.none
    /// TCP is up and the TLS handshake is under way.
    package private(set) var isHandshaking = false
    /// When TCP came up (before any TLS handshake).
    package private(set) var tcpConnectedAt: Deadline?

    /// A connector to `host`, directly or through `proxy` (then the addresses it is given are
    /// the proxy's, and a tunnel is asked for when `tls` is set or the proxy tunnels all).
    package init(host: String, port: Int, tls: TLSContext?, resumption: TLSResumption?, deadline: Deadline,
                 proxy: HTTPProxy? = nil, applicationProtocols: [String]? = nil) {
        self.applicationProtocols = applicationProtocols
        self.host = host
        self.port = port
        self.proxy = proxy
        self.tls = tls
        self.resumption = resumption
        self.deadline = deadline
    }

    /// Starts connecting to `addresses`: the first one now, the others raced after it.
    package mutating func connect(to addresses: [SocketAddress], loop: EventLoop, target: any Selectable) -> Step {
        self.addresses = Self.interleavingFamilies(addresses)
        self.next = 0
        return self.startAttempt(loop: loop, target: target)
    }

    /// When the connection must wake the connector: the deadline, or the next attempt's start.
    package var wakeUp: Deadline {
        guard let nextAttemptAt else { return self.deadline }
        return min(self.deadline, nextAttemptAt)
    }

    /// ``wakeUp`` passed: the next address's attempt starts, or, past the deadline, connecting
    /// has failed (``timeoutError``).
    package mutating func timeElapsed(loop: EventLoop, target: any Selectable) -> Step {
        let now = loop.refreshNow()
        if now >= self.deadline { return .failed(self.timeoutError) }
        guard let nextAttemptAt, nextAttemptAt <= now else { return .pending }
        self.nextAttemptAt = nil
        return self.startAttempt(loop: loop, target: target)
    }

    /// A registered descriptor is ready.
    package mutating func ready(loop: EventLoop, target: any Selectable) -> Step {
        if self.socket.isOpen {
            if self.isHandshaking { return self.continueHandshake(loop: loop) }
            if self.tunnel != nil { return self.continueTunnel(loop: loop) }
            return .pending
        }
        guard !self.attempts.isEmpty else { return .pending }
        // Which attempts have an answer: the only one, or what one poll(2) says of them all.
        var answered: [Int] = [0]
        if self.attempts.count > 1 {
            var fds = self.attempts.map { pollfd(fd: $0.fd, events: Int16(POLLOUT), revents: 0) }
            guard poll(&fds, nfds_t(fds.count), 0) > 0 else { return .pending }
            answered = fds.indices.filter { fds[$0].revents != 0 }
        }
        // The oldest (most preferred) connected attempt wins; failed ones are dropped.
        var failed: [Int] = []
        for index in answered {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(self.attempts[index].fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error != 0 {
                self.lastErrno = error
                failed.append(index)
                continue
            }
            // The winner: the others are closed, unanswered.
            self.socket = self.attempts[index]
            for (other, var loser) in self.attempts.enumerated() where other != index { loser.close(on: loop) }
            self.attempts = []
            self.nextAttemptAt = nil
            return self.tcpConnected(loop: loop)
        }
        for index in failed.reversed() {
            self.attempts[index].close(on: loop)
            self.attempts.remove(at: index)
        }
        // An attempt failed: the next address need not wait for the delay.
        return self.startAttempt(loop: loop, target: target)
    }

    private mutating func tcpConnected(loop: EventLoop) -> Step {
        var one: Int32 = 1
        // (Fails harmlessly on a Unix domain socket, which has no Nagle to turn off.)
        setsockopt(self.socket.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        self.tcpConnectedAt = loop.refreshNow()
        if let proxy = self.proxy, self.tls != nil || proxy.tunnelsPlainHTTP {
            self.tunnel = ProxyTunnel(target: HostName.bracketed(self.host) + ":\(self.port)", through: proxy)
            return self.continueTunnel(loop: loop)
        }
        return self.startTLS(loop: loop)
    }

    /// Starts the TLS handshake (https), or hands the socket over (http).
    private mutating func startTLS(loop: EventLoop) -> Step {
        guard let context = self.tls else { return self.opened() }
        do {
            let session = try TLSSession(context: context, fd: self.socket.fd, host: self.host,
                                         applicationProtocols: self.applicationProtocols)
            if let resumption = self.resumption { session.offer(resumption) }
            self.socket.attach(session)
        } catch {
            self.socket.close(on: loop)
            return .failed(error)
        }
        self.isHandshaking = true
        if let limit = context.configuration.handshakeTimeout {
            self.deadline = min(self.deadline, loop.refreshNow() + limit)
        }
        return self.continueHandshake(loop: loop)
    }

    /// The addresses in the order they are tried: the first one's family first, then the
    /// families taking turns (RFC 8305 §4), each family's addresses in the resolver's order.
    static func interleavingFamilies(_ addresses: [SocketAddress]) -> [SocketAddress] {
        guard let first = addresses.first else { return [] }
        let preferred = addresses.filter { $0.family == first.family }
        let others = addresses.filter { $0.family != first.family }
        guard !others.isEmpty else { return addresses }
        var ordered: [SocketAddress] = []
        ordered.reserveCapacity(addresses.count)
        for index in 0..<max(preferred.count, others.count) {
            if index < preferred.count { ordered.append(preferred[index]) }
            if index < others.count { ordered.append(others[index]) }
        }
        return ordered
    }

    /// The error for a connect that outlived ``deadline``.
    package var timeoutError: TransportError {
        if self.isHandshaking {
            return TransportError(.tlsHandshakeTimeout, host: self.host, phase: .connect, detail: "the TLS handshake did not finish in time")
        }
        if self.tunnel != nil {
            return TransportError(.connectTimeout, host: self.host, phase: .connect, detail: "the proxy did not answer CONNECT in time")
        }
        if let proxy = self.proxy {
            return TransportError(.connectTimeout, host: proxy.host, phase: .connect, detail: "connecting to the proxy \(proxy.authority) for \(self.host)")
        }
        return TransportError(.connectTimeout, host: self.host, phase: .connect)
    }


    /// Gives up: closes every socket still being connected.
    package mutating func abandon(loop: EventLoop) {
        self.socket.close(on: loop)
        for var attempt in self.attempts { attempt.close(on: loop) }
        self.attempts = []
        self.nextAttemptAt = nil
    }

    // MARK: Steps

    /// Starts a TCP connect to the next address that takes one. `.pending` while any attempt
    /// is under way; `.failed` when none is and no address is left.
    private mutating func startAttempt(loop: EventLoop, target: any Selectable) -> Step {
        while self.next < self.addresses.count {
            var address = self.addresses[self.next]
            self.next += 1
            let fd = Glibc.socket(address.family, salvo_SOCK_STREAM_NONBLOCK_CLOEXEC, 0)
            guard fd >= 0 else {
                self.lastErrno = salvo_errno()
                continue
            }
            var attempt = Socket(fd: fd)
            let rc = withUnsafePointer(to: &address.storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
            }
            let err = rc == 0 ? 0 : salvo_errno()
            if err == EAGAIN, address.family == AF_UNIX {
                // A Unix socket's accept queue is full: the same path again shortly, until
                // the deadline (a TCP listener drops the SYN instead, and the kernel retries).
                attempt.close(on: loop)
                self.lastErrno = err
                self.next -= 1
                self.nextAttemptAt = loop.refreshNow() + Self.unixRetryDelay
                return .pending
            }
            guard rc == 0 || err == EINPROGRESS else {
                self.lastErrno = err
                attempt.close(on: loop)
                continue
            }
            do {
                // Connected or not, writability says when connect(2) has an answer.
                try attempt.register(on: loop, target: target, interest: .write)
            } catch {
                self.lastErrno = error.errno
                attempt.close(on: loop)
                continue
            }
            self.attempts.append(attempt)
            self.nextAttemptAt = self.next < self.addresses.count ? loop.refreshNow() + Self.attemptDelay : nil
            return .pending
        }
        self.nextAttemptAt = nil
        if !self.attempts.isEmpty { return .pending }
        let code: TransportError.Code = self.lastErrno == ECONNREFUSED ? .connectionRefused : .connectFailed
        if let proxy = self.proxy {
            return .failed(TransportError(code, host: proxy.host, phase: .connect, errno: self.lastErrno,
                                           detail: "the proxy \(proxy.authority) for \(self.host)"))
        }
        return .failed(TransportError(code, host: self.host, phase: .connect, errno: self.lastErrno, detail: "port \(self.port)"))
    }

    private mutating func continueTunnel(loop: EventLoop) -> Step {
        guard var tunnel = self.tunnel else { return .pending }
        let step = tunnel.advance(self.socket)
        self.tunnel = tunnel
        switch step {
        case .pending(let wantsWrite):
            self.socket.setInterest(wantsWrite ? .write : .read, on: loop)
            return .pending
        case .established:
            self.tunnel = nil
            return self.startTLS(loop: loop)
        case .failed(let error):
            self.tunnel = nil
            self.socket.close(on: loop)
            return .failed(error)
        }
    }

    private mutating func continueHandshake(loop: EventLoop) -> Step {
        guard let session = self.socket.tls else { return .pending }
        do {
            switch try session.handshake() {
            case .done:
                if let pins = self.tls?.configuration.pinnedPublicKeys, !pins.isEmpty {
                    let key = session.peerPublicKeyPin
                    guard let key, pins.contains(key) else {
                        self.socket.close(on: loop)
                        return .failed(TransportError(.tlsPinMismatch, host: self.host, phase: .connect,
                                                       detail: "server key sha256//\(key ?? "none") is not pinned"))
                    }
                }
                return self.opened()
            case .wantRead:
                self.socket.setInterest(.read, on: loop)
                return .pending
            case .wantWrite:
                self.socket.setInterest(.write, on: loop)
                return .pending
            }
        } catch {
            self.socket.close(on: loop)
            return .failed(error.with(host: self.host))
        }
    }

    private mutating func opened() -> Step {
        let socket = self.socket
        self.socket = .none
        self.isHandshaking = false
        return .opened(socket)
    }
}
