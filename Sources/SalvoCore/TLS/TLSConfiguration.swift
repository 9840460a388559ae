import SalvoTransport
/// How a client speaks TLS: whom it trusts, what it checks, which versions it allows.
/// A value; the default verifies the server's certificate chain against the system's trust
/// store and its name against the URL's host, with TLS 1.2 at least.
public struct TLSConfiguration: Sendable, Hashable {
    /// Where trusted certificate authorities come from.
    public enum TrustRoots: Sendable, Hashable {
        /// The system's store (OpenSSL's default paths).
        case system
        /// A PEM file of certificates (curl's `--cacert`).
        case file(String)
        /// A directory of hashed certificates (curl's `--capath`).
        case directory(String)
    }

    /// TLS protocol versions.
    public enum Version: Sendable, Hashable, Comparable {
        case tls12, tls13
    }

    public var trustRoots: TrustRoots = .system
    /// Extra trusted certificates, PEM text, in addition to `trustRoots`.
    public var additionalTrustedCertificates: [String] = []
    /// Check the server's certificate chain (curl's `-k` turns this off). Default on.
    public var verifyCertificates = true
    /// Check that the certificate names the host (or IP address) of the URL. Default on.
    public var verifyHostname = true
    public var minimumVersion: Version = .tls12
    public var maximumVersion: Version? = nil
    /// OpenSSL cipher list for TLS 1.2 (nil: OpenSSL's default).
    public var cipherList: String? = nil
    /// A client certificate and its private key, PEM files.
    public var certificateFile: String? = nil
    public var privateKeyFile: String? = nil
    /// Public-key pins: base64 SHA-256 digests of the server certificate's
    /// SubjectPublicKeyInfo (curl's `--pinnedpubkey sha256//…`). When set, the server's key
    /// must match one of them, on top of the usual verification.
    public var pinnedPublicKeys: [String] = []
    /// Longest a TLS handshake may take once TCP is up (nil: only the connect timeout,
    /// which covers both).
    public var handshakeTimeout: Duration? = nil
    /// ALPN protocols offered, in order; nil (the default): those of the request's
    /// ``HTTPClient/HTTPVersionPolicy`` (`h2` and `http/1.1`, or `http/1.1` alone).
    public var applicationProtocols: [String]? = nil

    public init() {}

    /// A configuration that checks nothing: for tests against self-signed servers only.
    public static var insecure: TLSConfiguration {
        var configuration = TLSConfiguration()
        configuration.verifyCertificates = false
        configuration.verifyHostname = false
        return configuration
    }
}
