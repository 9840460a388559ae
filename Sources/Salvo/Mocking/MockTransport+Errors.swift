import Foundation

extension MockTransport {
    /// What a responder's error becomes: a `URLError` as the transport failure it stands for
    /// (`.timedOut` a read timeout, `.cannotFindHost` a DNS failure…), so that code ported from
    /// a URLSession mock meets the same retry and error rules; anything else as
    /// `.invalidRequest`. Either way the thrown error stays reachable as
    /// ``TransportError/underlyingError`` (and ``ClientError/underlyingError``).
    static func transportError(for error: any Error, thrownBy source: String) -> TransportError {
        var failure: TransportError
        if let urlError = error as? URLError, let code = Self.transportCode(of: urlError.code) {
            failure = code == .cancelled ? .cancelled(.caller) : TransportError(code)
            failure.detail = "\(source) threw URLError \(urlError.code.rawValue)"
        } else {
            failure = TransportError(.invalidRequest, detail: "\(source) threw \(error)")
        }
        failure.underlyingError = error
        return failure
    }

    private static func transportCode(of code: URLError.Code) -> TransportError.Code? {
        switch code {
        case .timedOut: .readTimeout
        case .cannotFindHost, .dnsLookupFailed: .dnsFailure
        case .cannotConnectToHost: .connectionRefused
        case .notConnectedToInternet, .internationalRoamingOff, .callIsActive, .dataNotAllowed: .connectFailed
        case .networkConnectionLost: .remoteClosed
        case .cancelled: .cancelled
        case .secureConnectionFailed: .tlsHandshakeFailed
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
             .serverCertificateHasUnknownRoot: .tlsCertificateInvalid
        case .clientCertificateRejected, .clientCertificateRequired: .tlsLocalCertificate
        case .badURL: .invalidURL
        case .unsupportedURL: .unsupportedScheme
        case .badServerResponse: .invalidResponse
        case .zeroByteResource: .emptyResponse
        case .httpTooManyRedirects: .tooManyRedirects
        case .redirectToNonExistentLocation: .redirectRefused
        case .dataLengthExceedsMaximum: .bodyTooLarge
        case .cannotDecodeContentData, .cannotDecodeRawData: .contentDecodingFailed
        default: nil
        }
    }
}
