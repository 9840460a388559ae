import SalvoTransport
import COpenSSL
import CSalvo
#if canImport(Glibc)
import Glibc
#endif

/// One connection's TLS state: an `SSL` driven non-blocking straight on the socket, as wrk
/// does (no memory BIOs, so no extra copy of every byte), through a BIO that sends with
/// `MSG_NOSIGNAL` (see `tls_bio.c`). The bytes' half of ``Socket``. Loop-confined.
package final class TLSSession {
    package enum Progress {
        case done
        case wantRead
        case wantWrite
    }

    /// The most plaintext one TLS record carries: 2^14 bytes (RFC 8446 §5.1, RFC 5246 §6.2.1).
    package static let maxRecordPlaintext = 16 * 1024

    private let ssl: OpaquePointer
    private let host: String
    /// The handshake finished: a close_notify means something now.
    private var established = false
    /// A fatal error happened (SSL_ERROR_SYSCALL or SSL_ERROR_SSL): OpenSSL forbids
    /// SSL_shutdown after one, and the peer is likely gone anyway.
    private var broken = false

    /// `applicationProtocols`: the ALPN list this connection offers, when its configuration
    /// names none of its own.
    package init(context: TLSContext, fd: Int32, host: String, applicationProtocols: [String]? = nil) throws(TransportError) {
        // Done already where the request was prepared, unless it came another way.
        context.loadDeferredTrust()
        guard let ssl = SSL_new(context.context) else {
            throw TLSError.local("cannot create a TLS session")
        }
        self.ssl = ssl
        self.host = host
        guard let bio = salvo_bio_new_socket(fd) else {
            throw TLSError.local("cannot create a socket BIO")
        }
        // One reference for both directions (SSL_set_bio consumes one when they are equal).
        SSL_set_bio(ssl, bio, bio)
        if context.configuration.applicationProtocols == nil, let protocols = applicationProtocols, !protocols.isEmpty {
            let wire = TLSContext.alpnWire(protocols)
            _ = wire.withUnsafeBufferPointer { SSL_set_alpn_protos(ssl, $0.baseAddress, UInt32($0.count)) }
        }
        // An IPv6 zone (fe80::1%eth0) is the local machine's business, not the certificate's.
        let address = String(HostName.withoutZone(host))
        let isIPAddress = SocketAddress(numericHost: address, port: 0) != nil
        if !isIPAddress {
            // SNI names hosts only, never addresses (RFC 6066 §3).
            _ = salvo_SSL_set_tlsext_host_name(ssl, host)
        }
        if context.configuration.verifyCertificates && context.configuration.verifyHostname {
            let param = SSL_get0_param(ssl)
            if isIPAddress {
                X509_VERIFY_PARAM_set1_ip_asc(param, address)
            } else {
                // A wildcard covers a whole label or nothing ("*.example.com", never
                // "a*.example.com"), as curl and browsers require (RFC 6125 §6.4.3 allows less).
                X509_VERIFY_PARAM_set_hostflags(param, UInt32(salvo_X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
                X509_VERIFY_PARAM_set1_host(param, host, 0)
            }
        }
    }

    deinit {
        SSL_free(self.ssl)
    }

    /// Drives the handshake one step.
    package func handshake() throws(TransportError) -> Progress {
        ERR_clear_error()
        let rc = SSL_connect(self.ssl)
        if rc == 1 {
            self.established = true
            return .done
        }
        let error = SSL_get_error(self.ssl, rc)
        if error == salvo_SSL_ERROR_WANT_READ { return .wantRead }
        if error == salvo_SSL_ERROR_WANT_WRITE { return .wantWrite }
        self.broken = true
        let verify = SSL_get_verify_result(self.ssl)
        if verify != Int(salvo_X509_V_OK) {
            let reason = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "verification failed"
            ERR_clear_error()
            throw TransportError(.tlsCertificateInvalid, host: self.host, phase: .connect, detail: reason)
        }
        let reason = error == salvo_SSL_ERROR_SYSCALL && ERR_peek_error() == 0
            ? "the server closed the connection during the TLS handshake"
            : TLSError.drainReason()
        throw TransportError(.tlsHandshakeFailed, host: self.host, phase: .connect, detail: reason)
    }

    /// base64(SHA-256(SPKI)) of the server's certificate, the form of curl's pins.
    var peerPublicKeyPin: String? {
        var out = [UInt8](repeating: 0, count: 64)
        let length = out.withUnsafeMutableBufferPointer { salvo_peer_spki_sha256_base64(self.ssl, $0.baseAddress) }
        guard length > 0 else { return nil }
        return String(decoding: out[..<Int(length)], as: UTF8.self)
    }

    /// The ALPN protocol the server chose, if any.
    package var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(self.ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Offers a session from an earlier connection to the same server, to skip the full
    /// handshake (an abbreviated one, or a TLS 1.3 ticket).
    package func offer(_ resumption: TLSResumption) {
        SSL_set_session(self.ssl, resumption.session)
    }

    /// Whether the handshake resumed an earlier session.
    package var resumed: Bool { SSL_session_reused(self.ssl) != 0 }

    /// The session to offer next time, if the server issued a resumable one. Taken after the
    /// first response, by when a TLS 1.3 server has sent its ticket.
    package func resumption() -> TLSResumption? {
        guard let session = SSL_get1_session(self.ssl) else { return nil }
        guard SSL_SESSION_is_resumable(session) != 0 else {
            SSL_SESSION_free(session)
            return nil
        }
        return TLSResumption(session)
    }

    /// Whether bytes wait inside OpenSSL — decrypted ones, or records read ahead from the
    /// socket and not yet opened. When not, and the last read was short, the socket is
    /// drained: one more SSL_read would only cost a read(2) for EAGAIN. When so, the socket
    /// may be empty while a response is not: epoll will not say so, the reader must ask.
    @usableFromInline
    package var hasBufferedBytes: Bool { SSL_has_pending(self.ssl) != 0 }

    /// Whether an idle connection can still carry a request: no application data, no
    /// close_notify and no end of the stream waits, in OpenSSL or in the socket. Records that
    /// wait are opened (`SSL_peek`), so that a server's session tickets — which some send
    /// right after the handshake, read ahead with it — do not make a fresh connection look
    /// spoken to; nothing of the application's is consumed.
    package var isQuietAndOpen: Bool {
        ERR_clear_error()
        var byte: UInt8 = 0
        let n = SSL_peek(self.ssl, &byte, 1)
        if n > 0 { return false }
        let error = SSL_get_error(self.ssl, n)
        ERR_clear_error()
        // Nothing to open and the socket empty — unless part of a record came (then the
        // server did send something).
        return error == salvo_SSL_ERROR_WANT_READ && !self.hasBufferedBytes
    }

    @usableFromInline
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> Socket.ReadResult {
        TLSError.clearQueue()
        let n = SSL_read(self.ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if n > 0 { return .bytes(Int(n)) }
        let error = SSL_get_error(self.ssl, n)
        switch error {
        case salvo_SSL_ERROR_WANT_READ: return .wouldBlock(wantsWrite: false)
        case salvo_SSL_ERROR_WANT_WRITE: return .wouldBlock(wantsWrite: true)
        case salvo_SSL_ERROR_ZERO_RETURN: return .closed(clean: true)
        default:
            let errno = salvo_errno()
            self.broken = true
            let code = ERR_peek_error()
            if (error == salvo_SSL_ERROR_SYSCALL && code == 0 && (n == 0 || errno == 0))
                || salvo_ssl_error_is_unexpected_eof(code) != 0 {
                ERR_clear_error()
                return .closed(clean: false)
            }
            return .failed(errno: error == salvo_SSL_ERROR_SYSCALL ? errno : 0, detail: TLSError.pendingReason())
        }
    }

    /// Writes what it can of `bytes`.
    @usableFromInline
    package func write(_ bytes: UnsafeRawBufferPointer) -> Socket.WriteResult {
        guard bytes.count > 0 else { return .wrote(0) }
        TLSError.clearQueue()
        let n = SSL_write(self.ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        if n > 0 { return .wrote(Int(n)) }
        let error = SSL_get_error(self.ssl, n)
        if error == salvo_SSL_ERROR_WANT_WRITE { return .wouldBlock(wantsRead: false) }
        if error == salvo_SSL_ERROR_WANT_READ { return .wouldBlock(wantsRead: true) }
        let errno = salvo_errno()
        self.broken = true
        return .failed(errno: error == salvo_SSL_ERROR_SYSCALL ? errno : 0, detail: TLSError.pendingReason())
    }

    /// Sends close_notify if it can, without waiting for the peer's. Never after a fatal
    /// error: OpenSSL forbids it, and the write would go to a peer that reset the connection.
    package func shutdown() {
        guard self.established, !self.broken else { return }
        ERR_clear_error()
        _ = SSL_shutdown(self.ssl)
        ERR_clear_error()
    }
}

/// A saved TLS session (OpenSSL's reference-counted SSL_SESSION), kept per host and loop.
package final class TLSResumption {
    let session: OpaquePointer

    init(_ session: OpaquePointer) { self.session = session }

    deinit { SSL_SESSION_free(self.session) }
}
