import SalvoCore

/// curl's exit status for each failure, so scripts written for curl keep working.
enum CurlExitCode {
    static func forError(_ error: HTTPClientError) -> Int32 {
        switch error.code {
        case .invalidURL: 3
        case .unsupportedScheme: 1
        case .invalidRequest: 43
        case .dnsFailure: 6
        case .connectionRefused, .connectFailed: 7
        case .connectTimeout, .readTimeout, .totalTimeout, .poolWaitTimeout: 28
        case .invalidResponse, .headerTooLarge, .tooManyHeaders: 8
        case .truncatedBody: 18
        case .emptyResponse: 52
        case .remoteClosed, .readFailed: 56
        case .writeFailed: 55
        case .bodyTooLarge: 63
        case .cancelled: 42
        default: 1
        }
    }
}
