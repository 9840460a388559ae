import SalvoTransport

extension HTTPClient {
    /// Which HTTP versions a connection may speak.
    ///
    /// Over TLS the version is agreed during the handshake (ALPN); over cleartext a client
    /// can only know in advance. The policy is part of a connection's identity: requests with
    /// different policies never share a connection.
    ///
    /// ```swift
    /// var configuration = HTTPClient.Configuration()
    /// configuration.httpVersion = .http1Only                   // every request of this client
    /// var options = HTTPClient.RequestOptions()
    /// options.httpVersion = .http2PriorKnowledge               // this request: h2c to a local service
    /// ```
    public enum HTTPVersionPolicy: Sendable, Hashable, CustomStringConvertible {
        /// HTTP/2 when a TLS server offers it, HTTP/1.1 otherwise and over cleartext (the
        /// default, as curl's `--http2`; no `Upgrade: h2c` dance).
        case automatic
        /// HTTP/1.1 only (curl's `--http1.1`).
        case http1Only
        /// HTTP/2 from the first byte over cleartext (`h2c` with prior knowledge, curl's
        /// `--http2-prior-knowledge`); over TLS as ``automatic``. A cleartext server that does
        /// not speak HTTP/2 fails the request.
        case http2PriorKnowledge

        /// The ALPN protocols a TLS connection offers, in order of preference.
        var applicationProtocols: [String] {
            switch self {
            case .automatic, .http2PriorKnowledge: ["h2", "http/1.1"]
            case .http1Only: ["http/1.1"]
            }
        }

        /// Whether a cleartext connection starts in HTTP/2.
        var cleartextHTTP2: Bool { self == .http2PriorKnowledge }

        public var description: String {
            switch self {
            case .automatic: "automatic"
            case .http1Only: "HTTP/1.1 only"
            case .http2PriorKnowledge: "HTTP/2 with prior knowledge"
            }
        }
    }
}
