#if canImport(Glibc)
import Glibc
#endif

/// The one error type of Salvo's transports: what the engine (SalvoCore) throws, and what any
/// other ``Transport`` — the typed layer's mock included — throws for a request that failed.
///
/// A stable ``Code`` says what went wrong; the optional context says where (host, phase)
/// and carries the low-level cause (an `errno`, the parser's reason) for logs. New codes
/// may be added in later versions, so `switch` over ``Code`` with a `default` branch.
///
/// ```swift
/// do {
///     let response = try await client.execute(request)
/// } catch let error as TransportError where error.code == .connectTimeout {
///     // try another replica
/// }
/// ```
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        enum Base: UInt8, Sendable, Hashable {
            case invalidURL, invalidRequest, dnsFailure, connectionRefused, connectFailed
            case connectTimeout, readTimeout, totalTimeout, poolWaitTimeout
            case invalidResponse, notHTTPResponse, unsupportedEncoding, emptyResponse, truncatedBody, remoteClosed, readFailed, writeFailed
            case truncatedHead, chunkLineTooLong, writeTimeout
            case headerTooLarge, tooManyHeaders, bodyTooLarge
            case cancelled, shutdown, unsupportedScheme, invalidConfiguration
            case tlsHandshakeFailed, tlsCertificateInvalid, tlsLocalCertificate, tlsPinMismatch
            case contentDecodingFailed, decodedBodyTooLarge, compressionRatioExceeded
            case tooManyRedirects, redirectLoop, redirectRefused, requestBodyFailed
            case bodyAlreadyIterated, headTimeout
            case proxyDNSFailure, proxyTunnelFailed, proxyAuthenticationRequired
            case tlsHandshakeTimeout
            case http2StreamReset, http2ProtocolError
        }
        let base: Base

        /// The URL could not be parsed, or it lacks a host.
        public static let invalidURL = Code(base: .invalidURL)
        /// The request cannot be sent as given (a CR, LF or NUL in its head, a bad method…).
        /// The caller's mistake: nothing was sent.
        public static let invalidRequest = Code(base: .invalidRequest)
        /// The host name did not resolve.
        public static let dnsFailure = Code(base: .dnsFailure)
        /// The proxy's host name did not resolve.
        public static let proxyDNSFailure = Code(base: .proxyDNSFailure)
        /// The proxy would not open a tunnel (`CONNECT`) to the origin: it answered with
        /// another status than 2xx (in ``TransportError/detail``), closed the connection, or
        /// answered with something that is not HTTP. Nothing reached the origin.
        public static let proxyTunnelFailed = Code(base: .proxyTunnelFailed)
        /// The proxy answered `407 Proxy Authentication Required` to `CONNECT`: it wants
        /// (other) credentials, see `HTTPProxy.credentials`.
        public static let proxyAuthenticationRequired = Code(base: .proxyAuthenticationRequired)
        /// Every address of the host refused the connection.
        public static let connectionRefused = Code(base: .connectionRefused)
        /// The connection could not be made for another reason (unreachable, no route…).
        public static let connectFailed = Code(base: .connectFailed)
        /// No connection could be made within the connect timeout.
        public static let connectTimeout = Code(base: .connectTimeout)
        /// The TLS handshake did not finish within `TLSConfiguration.handshakeTimeout` (or
        /// what was left of the connect timeout).
        public static let tlsHandshakeTimeout = Code(base: .tlsHandshakeTimeout)
        /// The server reset the request's HTTP/2 stream (RST_STREAM; its error code in
        /// ``TransportError/detail``). Other requests on the connection go on.
        public static let http2StreamReset = Code(base: .http2StreamReset)
        /// The server broke HTTP/2's rules (framing, HPACK, flow control, a flood the client
        /// will not answer): the connection ends with a GOAWAY saying why.
        public static let http2ProtocolError = Code(base: .http2ProtocolError)
        /// The server sent nothing for longer than the read timeout.
        public static let readTimeout = Code(base: .readTimeout)
        /// The server took none of the request's bytes for longer than the write timeout.
        public static let writeTimeout = Code(base: .writeTimeout)
        /// The whole request took longer than its deadline.
        public static let totalTimeout = Code(base: .totalTimeout)
        /// Every connection to the host stayed busy past the pool's wait deadline.
        public static let poolWaitTimeout = Code(base: .poolWaitTimeout)
        /// The server broke HTTP/1.1: the parser's reason is in ``TransportError/detail``.
        public static let invalidResponse = Code(base: .invalidResponse)
        /// The reply does not start with an HTTP/1.x status line (HTTP/0.9, another protocol,
        /// noise): nothing about it can be trusted.
        public static let notHTTPResponse = Code(base: .notHTTPResponse)
        /// The response uses a transfer coding this client does not decode (only chunked is).
        public static let unsupportedEncoding = Code(base: .unsupportedEncoding)
        /// The server closed the connection without sending a byte of a response.
        public static let emptyResponse = Code(base: .emptyResponse)
        /// The connection ended before the body its framing announced.
        public static let truncatedBody = Code(base: .truncatedBody)
        /// The server closed the connection in the middle of the response head.
        public static let remoteClosed = Code(base: .remoteClosed)
        /// The connection ended in the middle of the response head, before its blank line.
        public static let truncatedHead = Code(base: .truncatedHead)
        /// A chunk-size line (its size, extensions and line ends) ran past the limit (16 KiB),
        /// or chunk framing outgrew the data it carried many times over: a server trying to
        /// make the client read without end.
        public static let chunkLineTooLong = Code(base: .chunkLineTooLong)
        /// Reading from the socket failed (a reset, for example).
        public static let readFailed = Code(base: .readFailed)
        /// Writing the request failed.
        public static let writeFailed = Code(base: .writeFailed)
        /// The response head was larger than the configured limit.
        public static let headerTooLarge = Code(base: .headerTooLarge)
        /// The response had more header fields than the configured limit.
        public static let tooManyHeaders = Code(base: .tooManyHeaders)
        /// The response body was larger than the configured limit.
        public static let bodyTooLarge = Code(base: .bodyTooLarge)
        /// The request was cancelled: see ``TransportError/cancellationReason`` for by whom.
        public static let cancelled = Code(base: .cancelled)
        /// No response head came within the request's head timeout.
        public static let headTimeout = Code(base: .headTimeout)
        /// The client was shut down.
        public static let shutdown = Code(base: .shutdown)
        /// The TLS handshake failed: no common version or cipher, an alert from the server, or
        /// the server closed the connection. The OpenSSL reason is in the detail.
        public static let tlsHandshakeFailed = Code(base: .tlsHandshakeFailed)
        /// The server's certificate did not verify; the detail says why ("certificate has
        /// expired", "hostname mismatch", "self-signed certificate in certificate chain").
        public static let tlsCertificateInvalid = Code(base: .tlsCertificateInvalid)
        /// A local TLS file could not be used (CA bundle, client certificate or key).
        public static let tlsLocalCertificate = Code(base: .tlsLocalCertificate)
        /// The server's public key matches none of the pinned keys.
        public static let tlsPinMismatch = Code(base: .tlsPinMismatch)
        /// A compressed body (gzip, deflate) is corrupt or ends before its compressed stream
        /// does; or it uses a content coding this client cannot decode, or too many of them.
        public static let contentDecodingFailed = Code(base: .contentDecodingFailed)
        /// The decoded body grew past the configured limit on decoded bytes.
        public static let decodedBodyTooLarge = Code(base: .decodedBodyTooLarge)
        /// The body decoded to more times its compressed size than allowed: a likely
        /// decompression bomb.
        public static let compressionRatioExceeded = Code(base: .compressionRatioExceeded)
        /// More redirects than the policy's limit.
        public static let tooManyRedirects = Code(base: .tooManyRedirects)
        /// A redirect led back to a URL already visited in this chain.
        /// Not given by Salvo's engine any more: redirects are limited by their count
        /// (``tooManyRedirects``), a loop included. Kept for transports that report one.
        public static let redirectLoop = Code(base: .redirectLoop)
        /// A redirect pointed somewhere the policy does not go: another scheme than http or
        /// https, a Location that is not a URL, or from https down to http.
        public static let redirectRefused = Code(base: .redirectRefused)
        /// The request body's source failed (a file that cannot be read, a stream that threw,
        /// or one that delivered a different number of bytes than it announced).
        public static let requestBodyFailed = Code(base: .requestBodyFailed)
        /// A streamed response body was iterated a second time (it can be read once), or by
        /// two iterators at once: the caller's mistake.
        public static let bodyAlreadyIterated = Code(base: .bodyAlreadyIterated)
        /// A client configuration value is out of range (no threads, no connections…).
        public static let invalidConfiguration = Code(base: .invalidConfiguration)
        /// The URL's scheme is not one this client speaks.
        public static let unsupportedScheme = Code(base: .unsupportedScheme)

        public var description: String {
            switch self.base {
            case .invalidURL: "invalid URL"
            case .invalidRequest: "invalid request"
            case .dnsFailure: "could not resolve host"
            case .connectionRefused: "connection refused"
            case .connectFailed: "could not connect"
            case .connectTimeout: "connect timed out"
            case .tlsHandshakeTimeout: "TLS handshake timed out"
            case .http2StreamReset: "HTTP/2 stream reset by the server"
            case .http2ProtocolError: "HTTP/2 protocol error"
            case .readTimeout: "read timed out"
            case .writeTimeout: "write timed out"
            case .totalTimeout: "request timed out"
            case .poolWaitTimeout: "timed out waiting for a pooled connection"
            case .invalidResponse: "invalid HTTP response"
            case .notHTTPResponse: "reply is not an HTTP/1.x response"
            case .unsupportedEncoding: "unsupported transfer encoding"
            case .emptyResponse: "empty reply from server"
            case .truncatedBody: "response body ended early"
            case .remoteClosed: "server closed the connection"
            case .truncatedHead: "response head ended early"
            case .chunkLineTooLong: "chunk-size line too long"
            case .readFailed: "receive failure"
            case .writeFailed: "send failure"
            case .headerTooLarge: "response head too large"
            case .tooManyHeaders: "too many response header fields"
            case .bodyTooLarge: "response body too large"
            case .cancelled: "cancelled"
            case .shutdown: "client shut down"
            case .unsupportedScheme: "unsupported URL scheme"
            case .invalidConfiguration: "invalid client configuration"
            case .tlsHandshakeFailed: "TLS handshake failed"
            case .tlsCertificateInvalid: "server certificate verification failed"
            case .tlsLocalCertificate: "problem with a local TLS certificate"
            case .tlsPinMismatch: "server public key does not match the pinned key"
            case .contentDecodingFailed: "bad content encoding"
            case .decodedBodyTooLarge: "decoded response body too large"
            case .compressionRatioExceeded: "compression ratio over the limit"
            case .tooManyRedirects: "too many redirects"
            case .redirectLoop: "redirect loop"
            case .redirectRefused: "redirect not followed"
            case .requestBodyFailed: "request body source failed"
            case .bodyAlreadyIterated: "response body already iterated (it can be read once)"
            case .headTimeout: "timed out waiting for the response head"
            case .proxyDNSFailure: "could not resolve proxy"
            case .proxyTunnelFailed: "proxy tunnel failed"
            case .proxyAuthenticationRequired: "proxy authentication required"
            }
        }
    }

    /// Where in a request's life an error happened.
    public enum Phase: String, Sendable, Hashable {
        case request, resolve, connect, write, readHead, readBody, pool
    }

    /// What went wrong.
    public var code: Code
    /// The host the request was for, when known.
    public var host: String?
    /// Where in the request's life it happened.
    public var phase: Phase?
    /// The system error number behind it, when there is one.
    public var errno: Int32?
    /// A human-readable cause: the parser's reason, the resolver's message, the field at fault.
    public var detail: String?
    /// For `.cancelled`: who or what stopped the request.
    public var cancellationReason: CancellationReason?
    /// The error behind this one when it came from elsewhere than the engine: what a mock's
    /// responder or a request body's source threw, say. Not part of equality.
    public var underlyingError: (any Error)? {
        get { self.underlying.error }
        set { self.underlying = Underlying(error: newValue) }
    }
    private var underlying = Underlying()
    /// Set when an earlier step of the same call may have reached the server: a redirect of
    /// its chain was answered, or an earlier attempt (on a connection that closed under it)
    /// had sent bytes. ``mayHaveBeenProcessed`` is then true, whatever this failure was.
    package var earlierStepMayHaveBeenProcessed = false

    /// Why a request (or its body) was cancelled.
    public enum CancellationReason: String, Sendable, Hashable {
        /// The caller: its task was cancelled, it cancelled a handle, or it stopped reading
        /// the body.
        case caller
        /// The server sent its whole response before the request body was sent; the rest of
        /// the body is not wanted. The request itself succeeded.
        case serverAnsweredEarly
        /// The request ended another way (it failed) before its body was sent.
        case requestEnded
        /// The client's own housekeeping: a connection given to another loop, a redirect
        /// body too long to skip.
        case `internal`
    }

    /// A `.cancelled` error for `reason`.
    public static func cancelled(_ reason: CancellationReason, phase: Phase? = nil, detail: String? = nil) -> TransportError {
        var error = TransportError(.cancelled, phase: phase, detail: detail)
        error.cancellationReason = reason
        return error
    }

    public init(_ code: Code, host: String? = nil, phase: Phase? = nil, errno: Int32? = nil, detail: String? = nil) {
        self.code = code
        self.host = host
        self.phase = phase
        self.errno = errno
        self.detail = detail
    }

    /// Whether the server may have acted on the request: false only when the failure came
    /// before any of it could have been processed — nothing was sent (a bad URL, DNS, a
    /// refused connection, a TLS failure, a pool timeout), or the caller's mistake. A retry
    /// layer repeats a request that is not idempotent only when this is false.
    ///
    /// Over a whole call: once any response came (a redirect whose next request then failed
    /// to connect) or any attempt's bytes went out, this is true, whatever the last error.
    public var mayHaveBeenProcessed: Bool {
        if self.earlierStepMayHaveBeenProcessed { return true }
        // Still being prepared, or waiting for a connection: nothing of it was sent.
        if self.phase == .request || self.phase == .pool { return false }
        switch self.code.base {
        case .cancelled, .headTimeout, .totalTimeout:
            // Before the request left (still queued or connecting), nothing was sent.
            return !(self.phase == .request || self.phase == .pool || self.phase == .resolve || self.phase == .connect)
        case .invalidURL, .invalidRequest, .dnsFailure, .connectionRefused, .connectFailed, .connectTimeout,
             .poolWaitTimeout, .unsupportedScheme, .invalidConfiguration, .tlsHandshakeFailed, .tlsCertificateInvalid,
             .tlsLocalCertificate, .tlsPinMismatch, .shutdown, .proxyDNSFailure, .proxyTunnelFailed,
             .proxyAuthenticationRequired, .tlsHandshakeTimeout:
            return self.phase == .write || self.phase == .readHead || self.phase == .readBody
        default:
            return true
        }
    }

    /// Whether sending the same request again, unchanged, might succeed.
    ///
    /// True when the network or the server's state of the moment failed it: a connection
    /// refused, failed, reset or timed out, a TLS handshake that timed out, a read or write
    /// that failed or timed out, a response that was empty or cut short, a server that closed
    /// the connection, a pool that stayed busy, a head or request deadline that passed, a host
    /// or proxy name that did not resolve, a proxy that would not open a tunnel.
    ///
    /// False when the outcome is settled and a second try would only repeat it: the caller's
    /// mistakes (an invalid URL, request or configuration, an unsupported scheme, a request
    /// body that failed, a body iterated twice), what the server answered (a redirect loop,
    /// a refused redirect, too many redirects, a response that is not valid HTTP, a transfer
    /// coding or content coding that cannot be decoded, a head or body past its limit), TLS
    /// trust (a certificate that does not verify, a pin that does not match, a local
    /// certificate that cannot be used, a handshake the server refused), a proxy that wants
    /// credentials, and the request's end by cancellation or the client's shutdown.
    ///
    /// A retry layer sends a failed request again only when this is true; whether it may —
    /// a request that is not idempotent — is ``mayHaveBeenProcessed``'s question.
    public var isTransient: Bool {
        // No default: a new code must be placed on one side or the other.
        switch self.code.base {
        case .dnsFailure, .proxyDNSFailure, .connectionRefused, .connectFailed, .connectTimeout, .tlsHandshakeTimeout,
             .readTimeout, .writeTimeout, .readFailed, .writeFailed, .emptyResponse, .truncatedHead, .truncatedBody,
             .remoteClosed, .poolWaitTimeout, .headTimeout, .totalTimeout, .proxyTunnelFailed, .http2StreamReset:
            return true
        case .invalidURL, .invalidRequest, .invalidConfiguration, .unsupportedScheme, .requestBodyFailed, .bodyAlreadyIterated,
             .tooManyRedirects, .redirectLoop, .redirectRefused,
             .tlsHandshakeFailed, .tlsCertificateInvalid, .tlsLocalCertificate, .tlsPinMismatch,
             .invalidResponse, .notHTTPResponse, .unsupportedEncoding, .chunkLineTooLong,
             .headerTooLarge, .tooManyHeaders, .bodyTooLarge, .decodedBodyTooLarge, .compressionRatioExceeded,
             .contentDecodingFailed, .proxyAuthenticationRequired, .cancelled, .shutdown, .http2ProtocolError:
            return false
        }
    }

    public var description: String {
        var text = self.code.description
        if let host { text += " (\(host))" }
        if let detail { text += ": \(detail)" }
        if let errno, errno != 0 { text += " [\(String(cString: strerror(errno)))]" }
        return text
    }

    /// Holds ``underlyingError`` out of equality and hashing: two errors are the same failure
    /// whatever value of another type stood behind them.
    private struct Underlying: Sendable, Hashable {
        var error: (any Error)?

        static func == (lhs: Underlying, rhs: Underlying) -> Bool { true }
        func hash(into hasher: inout Hasher) {}
    }

    /// `.requestBodyFailed` for an error the body's source threw, kept as ``underlyingError``.
    package static func bodySource(threw error: any Error, detail: String? = nil) -> TransportError {
        var failure = TransportError(.requestBodyFailed, phase: .write, detail: detail ?? "the body's source threw \(error)")
        failure.underlyingError = error
        return failure
    }

    package func with(host: String) -> TransportError {
        var copy = self
        if copy.host == nil { copy.host = host }
        return copy
    }
}
