import SalvoCore

/// curl's exit status for each failure, so scripts written for curl keep working.
enum CurlExitCode {
    static func forError(_ error: TransportError) -> Int32 {
        switch error.code {
        case .invalidURL: 3
        case .unsupportedScheme: 1
        case .invalidRequest: 43
        case .dnsFailure: 6
        case .proxyDNSFailure: 5
        // curl: "CONNECT tunnel failed, response 407" and the like are receive errors.
        case .proxyTunnelFailed, .proxyAuthenticationRequired: 56
        case .connectionRefused, .connectFailed: 7
        case .connectTimeout, .tlsHandshakeTimeout, .readTimeout, .writeTimeout, .totalTimeout, .poolWaitTimeout: 28
        // curl reports broken body framing (a bad chunk size, say) as a receive error.
        case .invalidResponse: error.phase == .readBody ? 56 : 8
        case .notHTTPResponse: 1
        // A weird server reply, as a too-long head is.
        case .chunkLineTooLong: 8
        case .unsupportedEncoding: 61
        // A head past the size limit is curl's receive error: what its own suite expects when
        // the accumulated head grows too large (its cases 497 and 498).
        case .headerTooLarge: 56
        // curl sets no limit on the count; 7.x says "out of memory" past its other limits.
        case .tooManyHeaders: 27
        case .truncatedBody, .truncatedHead: 18
        case .emptyResponse: 52
        case .remoteClosed, .readFailed: 56
        case .writeFailed: 55
        case .bodyTooLarge, .decodedBodyTooLarge, .compressionRatioExceeded: 63
        case .contentDecodingFailed: 61
        case .tooManyRedirects, .redirectLoop: 47
        // curl refuses a redirect to a scheme it was not allowed to follow as unsupported.
        case .redirectRefused: 1
        // curl's "read function returned funny value" / could not open file.
        case .requestBodyFailed: 26
        case .cancelled: 42
        case .tlsHandshakeFailed: 35
        case .tlsLocalCertificate: 58
        case .tlsCertificateInvalid: 60
        case .tlsPinMismatch: 90
        // curl's CURLE_HTTP2 ("a problem in the HTTP2 framing layer") and CURLE_HTTP2_STREAM.
        case .http2ProtocolError: 16
        case .http2StreamReset: 92
        default: 1
        }
    }
}
