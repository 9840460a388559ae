import Testing
@testable import SalvoTransport

/// `TransportError.isTransient`, code by code.
@Suite struct TransportErrorTests {
    /// Every code, and whether the same request sent again might succeed: the network's
    /// failures might pass, the caller's mistakes and the server's settled answers will not.
    static let transience: [(TransportError.Code, Bool)] = [
        // The network, or the server's state of the moment.
        (.dnsFailure, true), (.proxyDNSFailure, true),
        (.connectionRefused, true), (.connectFailed, true), (.connectTimeout, true), (.tlsHandshakeTimeout, true),
        (.readTimeout, true), (.writeTimeout, true), (.readFailed, true), (.writeFailed, true),
        (.emptyResponse, true), (.truncatedHead, true), (.truncatedBody, true), (.remoteClosed, true),
        (.poolWaitTimeout, true), (.headTimeout, true), (.totalTimeout, true), (.proxyTunnelFailed, true),
        (.http2StreamReset, true),
        // The caller's mistakes.
        (.invalidURL, false), (.invalidRequest, false), (.invalidConfiguration, false), (.unsupportedScheme, false),
        (.requestBodyFailed, false), (.bodyAlreadyIterated, false),
        // Redirects: the same chain again leads to the same place.
        (.redirectLoop, false), (.redirectRefused, false), (.tooManyRedirects, false),
        // TLS trust.
        (.tlsCertificateInvalid, false), (.tlsPinMismatch, false), (.tlsLocalCertificate, false), (.tlsHandshakeFailed, false),
        // What the server answered, and the limits it broke.
        (.invalidResponse, false), (.notHTTPResponse, false), (.unsupportedEncoding, false), (.chunkLineTooLong, false),
        (.headerTooLarge, false), (.tooManyHeaders, false), (.bodyTooLarge, false),
        (.contentDecodingFailed, false), (.decodedBodyTooLarge, false), (.compressionRatioExceeded, false),
        (.proxyAuthenticationRequired, false), (.http2ProtocolError, false),
        // The request's end, decided on this side.
        (.cancelled, false), (.shutdown, false),
    ]

    @Test func transienceOfEveryCode() {
        for (code, transient) in Self.transience {
            #expect(TransportError(code).isTransient == transient, "\(code)")
            // Where it happened does not change it.
            for phase in [TransportError.Phase.request, .resolve, .connect, .write, .readHead, .readBody, .pool] {
                #expect(TransportError(code, phase: phase, errno: 104, detail: "x").isTransient == transient, "\(code) in \(phase)")
            }
        }
        #expect(TransportError.cancelled(.caller).isTransient == false)
        // The table names every code there is, each once (the codes are numbered from 0).
        let all = (0...UInt8.max).compactMap { TransportError.Code.Base(rawValue: $0) }.map { TransportError.Code(base: $0) }
        #expect(Set(Self.transience.map(\.0)) == Set(all))
        #expect(Self.transience.count == all.count)
    }
}
