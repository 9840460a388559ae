import SalvoTransport
import COpenSSL
import Synchronization

/// An OpenSSL `SSL_CTX` built from a ``TLSConfiguration``: created once per client, shared
/// by every connection on every loop (OpenSSL allows creating sessions from one context on
/// many threads).
///
/// The system's trust store is loaded when the first https request is prepared, not when the
/// client is made: reading and parsing it takes ~50 ms of CPU, which a client that only
/// speaks plain HTTP (or a `salvo get http://…`) should not pay. Everything that can be
/// wrong in a configuration (a file that does not load, a key that does not match) is still
/// found at init. The first https request prepared on a loop thread — a redirect from http
/// to https, a request started in a completion handler — loads it there, once.
package final class TLSContext: @unchecked Sendable {
    // @unchecked Sendable: the SSL_CTX is configured in init, and once more — its system
    // trust roots, under `rootsLock` — before the first session is made from it; sessions
    // (SSL_new) only read it afterwards, which OpenSSL documents as thread-safe.
    let context: OpaquePointer
    package let configuration: TLSConfiguration
    /// The system trust roots are still to be loaded (``loadDeferredTrust()``).
    private let systemRootsPending: Atomic<Bool>
    private let rootsLock = Mutex(())

    package init(_ configuration: TLSConfiguration) throws(TransportError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw TLSError.local("cannot create an OpenSSL context")
        }
        self.context = context
        self.configuration = configuration
        // Without verification nothing reads them — unless OpenSSL completes a client
        // certificate's chain from them.
        self.systemRootsPending = Atomic(configuration.trustRoots == .system
            && (configuration.verifyCertificates || configuration.certificateFile != nil))
        // On failure deinit frees the context: every stored property is set by now.
        try self.configure()
    }

    /// Whether the system trust roots are still to be loaded.
    var defersTrust: Bool { self.systemRootsPending.load(ordering: .acquiring) }

    /// Loads what init deferred — the system trust roots — once, before the first session;
    /// costs one atomic load after that. Called where an https request is prepared (the
    /// caller's thread), and again before each session as a guard.
    package func loadDeferredTrust() {
        guard self.systemRootsPending.load(ordering: .acquiring) else { return }
        self.rootsLock.withLock { _ in
            guard self.systemRootsPending.load(ordering: .relaxed) else { return }
            SSL_CTX_set_default_verify_paths(self.context)
            self.systemRootsPending.store(false, ordering: .releasing)
        }
    }

    deinit {
        SSL_CTX_free(self.context)
    }

    private func configure() throws(TransportError) {
        let c = self.configuration
        let minimum = c.minimumVersion == .tls13 ? salvo_TLS1_3_VERSION : salvo_TLS1_2_VERSION
        guard salvo_SSL_CTX_set_min_proto_version(self.context, minimum) == 1 else {
            throw TLSError.local("cannot set the minimum TLS version")
        }
        if let maximum = c.maximumVersion {
            _ = salvo_SSL_CTX_set_max_proto_version(self.context, maximum == .tls13 ? salvo_TLS1_3_VERSION : salvo_TLS1_2_VERSION)
        }
        // Partial writes, a write buffer that may move between a write and its retry (a small
        // request's head and body are copied into a loop's buffer for each try, see
        // Socket.write(_:_:joiningIn:)), and buffers let go of while a connection is idle.
        _ = salvo_SSL_CTX_set_mode(self.context, salvo_SSL_MODE_PARTIAL_WRITE)
        // Records are read as many at a time as the socket holds (one read(2) per response
        // instead of one for each record's header and one for its body); what is read beyond
        // a record waits inside OpenSSL, which `TLSSession.hasBufferedBytes` reports.
        salvo_SSL_CTX_set_read_ahead(self.context, 1)
        SSL_CTX_set_verify(self.context, c.verifyCertificates ? salvo_SSL_VERIFY_PEER : salvo_SSL_VERIFY_NONE, nil)

        switch c.trustRoots {
        case .system:
            break  // loaded before the first session (loadDeferredTrust)
        case .file(let path):
            guard SSL_CTX_load_verify_locations(self.context, path, nil) == 1 else {
                throw TLSError.local("cannot load CA certificates from \(path): \(TLSError.drainReason())")
            }
        case .directory(let path):
            guard SSL_CTX_load_verify_locations(self.context, nil, path) == 1 else {
                throw TLSError.local("cannot use CA directory \(path): \(TLSError.drainReason())")
            }
        }
        for pem in c.additionalTrustedCertificates {
            try self.addTrusted(pem: pem)
        }
        if let ciphers = c.cipherList, SSL_CTX_set_cipher_list(self.context, ciphers) != 1 {
            throw TLSError.local("no usable cipher in \"\(ciphers)\"")
        }
        if let certificate = c.certificateFile {
            guard SSL_CTX_use_certificate_chain_file(self.context, certificate) == 1 else {
                throw TLSError.local("cannot load client certificate \(certificate): \(TLSError.drainReason())")
            }
            let key = c.privateKeyFile ?? certificate
            guard SSL_CTX_use_PrivateKey_file(self.context, key, SSL_FILETYPE_PEM) == 1 else {
                throw TLSError.local("cannot load private key \(key): \(TLSError.drainReason())")
            }
            guard SSL_CTX_check_private_key(self.context) == 1 else {
                throw TLSError.local("the private key does not match the client certificate")
            }
        }
        if let protocols = c.applicationProtocols, !protocols.isEmpty {
            let wire = Self.alpnWire(protocols)
            _ = wire.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(self.context, $0.baseAddress, UInt32($0.count)) }
        }
    }

    /// ALPN's wire form of a protocol list: each name after its length byte (RFC 7301 §3.1).
    static func alpnWire(_ protocols: [String]) -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols where !name.isEmpty && name.utf8.count < 256 {
            wire.append(UInt8(name.utf8.count))
            wire.append(contentsOf: name.utf8)
        }
        return wire
    }

    private func addTrusted(pem: String) throws(TransportError) {
        let bio = pem.withCString { BIO_new_mem_buf($0, -1) }
        defer { BIO_free(bio) }
        var added = 0
        while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
            X509_STORE_add_cert(SSL_CTX_get_cert_store(self.context), certificate)
            X509_free(certificate)
            added += 1
        }
        ERR_clear_error()
        if added == 0 { throw TLSError.local("no certificate in the PEM text given as trusted") }
    }
}

/// Turning OpenSSL's error queue into ``TransportError``s that say what to fix.
enum TLSError {
    static func local(_ detail: String) -> TransportError {
        TransportError(.tlsLocalCertificate, phase: .connect, detail: detail)
    }

    /// Empties this thread's OpenSSL error queue before a read or write, whose outcome
    /// `SSL_get_error` reads from it. Every failure path drains the queue, so it is almost
    /// always empty already: peeking costs less than clearing its sixteen slots on every call.
    @inline(__always)
    static func clearQueue() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// The reasons on this thread's OpenSSL error queue, emptied; a generic one when it holds none.
    static func drainReason() -> String {
        self.pendingReason() ?? "unknown OpenSSL error"
    }

    /// The reasons on this thread's OpenSSL error queue, emptied; nil when it holds none (a
    /// failed system call, whose errno says it all).
    static func pendingReason() -> String? {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if let text = ERR_reason_error_string(code) { reasons.append(String(cString: text)) }
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }
}

/// The TLS contexts of one client: the one built from its configuration, and one for each
/// other configuration its requests brought (``HTTPClient/RequestOptions/tls``). Each has
/// an id that goes into the connection key, so pools never mix them.
final class TLSContexts: Sendable {
    let primary: TLSContext
    /// Contexts for per-request configurations, by configuration. Bounded: past the bound
    /// the table starts over, which only costs rebuilding a context (connections pooled
    /// under a forgotten id idle out).
    private let others = Mutex<(byConfiguration: [TLSConfiguration: (id: Int, context: TLSContext)], nextID: Int)>(([:], 1))
    private static let maxRemembered = 64

    init(primary: TLSContext) {
        self.primary = primary
    }

    /// The context and its key id for a request's configuration (nil: the client's own).
    func context(for configuration: TLSConfiguration?) throws(TransportError) -> (id: Int, context: TLSContext) {
        let entry = try self.entry(for: configuration)
        // Before any session is made from it, on the thread preparing the request (off the
        // caller's actor for the async calls: see `HTTPClient.setUpTLS(for:options:)`).
        entry.context.loadDeferredTrust()
        return entry
    }

    /// Whether ``context(for:)`` would do slow work for this configuration — build a context
    /// (files read, certificates parsed) or load the system trust store (~50 ms) — rather
    /// than find one ready. An atomic load for the client's own configuration.
    func needsSetUp(for configuration: TLSConfiguration?) -> Bool {
        self.existing(for: configuration)?.context.defersTrust ?? true
    }

    /// The entry for a configuration when there is one already: the client's own, or one
    /// made for an earlier request.
    private func existing(for configuration: TLSConfiguration?) -> (id: Int, context: TLSContext)? {
        guard let configuration, configuration != self.primary.configuration else { return (0, self.primary) }
        return self.others.withLock { $0.byConfiguration[configuration] }
    }

    private func entry(for configuration: TLSConfiguration?) throws(TransportError) -> (id: Int, context: TLSContext) {
        if let known = self.existing(for: configuration) { return known }
        // Not the client's own (that one always exists), so a configuration was given.
        guard let configuration else { return (0, self.primary) }
        // Built outside the lock: loading trust stores takes milliseconds.
        let context = try TLSContext(configuration)
        return self.others.withLock { state in
            if let known = state.byConfiguration[configuration] { return known }
            if state.byConfiguration.count >= Self.maxRemembered { state.byConfiguration.removeAll() }
            let entry = (id: state.nextID, context: context)
            state.nextID += 1
            state.byConfiguration[configuration] = entry
            return entry
        }
    }
}
