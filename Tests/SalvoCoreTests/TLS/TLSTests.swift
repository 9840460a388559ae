import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore
@testable import SalvoLoad

/// Certificates made by the openssl CLI for this test run: a CA, a leaf it signs for
/// localhost and 127.0.0.1, a leaf it signs for another name, and a self-signed leaf.
final class TestCertificates: Sendable {
    let directory: URL

    static let shared = SharedFixture { try TestCertificates() }

    init() throws {
        self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        let d = self.directory.path
        try Self.openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(d)/ca.key", "-out", "\(d)/ca.pem",
                          "-days", "2", "-subj", "/CN=Salvo Test CA"])
        for (name, san) in [("leaf", "DNS:localhost,IP:127.0.0.1"), ("other", "DNS:other.example"), ("client", "DNS:salvo-client"),
                            ("wildcards", "DNS:a*.example.test,DNS:*.wild.test")] {
            try Self.openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(d)/\(name).key", "-out", "\(d)/\(name).csr",
                              "-subj", "/CN=\(name)"])
            try "subjectAltName=\(san)\n".write(toFile: "\(d)/\(name).ext", atomically: true, encoding: .utf8)
            try Self.openssl(["x509", "-req", "-in", "\(d)/\(name).csr", "-CA", "\(d)/ca.pem", "-CAkey", "\(d)/ca.key",
                              "-CAcreateserial", "-out", "\(d)/\(name).pem", "-days", "2", "-extfile", "\(d)/\(name).ext"])
        }
        // An expired leaf: `openssl ca` is the only way to backdate one with OpenSSL 3.0.
        try Self.openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(d)/expired.key", "-out", "\(d)/expired.csr",
                          "-subj", "/CN=localhost"])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: "\(d)/expired.ext", atomically: true, encoding: .utf8)
        try "".write(toFile: "\(d)/index.txt", atomically: true, encoding: .utf8)
        try "01\n".write(toFile: "\(d)/serial", atomically: true, encoding: .utf8)
        try """
            [ca]
            default_ca = test
            [test]
            database = \(d)/index.txt
            new_certs_dir = \(d)
            serial = \(d)/serial
            default_md = sha256
            policy = any
            [any]
            commonName = supplied
            """.write(toFile: "\(d)/ca.cnf", atomically: true, encoding: .utf8)
        try Self.openssl(["ca", "-batch", "-config", "\(d)/ca.cnf", "-cert", "\(d)/ca.pem", "-keyfile", "\(d)/ca.key",
                          "-in", "\(d)/expired.csr", "-out", "\(d)/expired.pem", "-extfile", "\(d)/expired.ext",
                          "-startdate", "20200101000000Z", "-enddate", "20200102000000Z"])
        try Self.openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(d)/self.key", "-out", "\(d)/self.pem",
                          "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
    }

    func path(_ name: String) -> String { self.directory.appendingPathComponent(name).path }

    static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try launching { try process.run() }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestServerError("openssl \(arguments.first ?? "") failed") }
    }
}

/// `openssl s_server -www` on a loopback port: answers each GET with an HTML status page.
final class OpenSSLServer: @unchecked Sendable {
    // @unchecked Sendable: set in init, only read after.
    let port: Int
    private let process: Process

    /// Starts one off the cooperative pool (the wait for its port blocks).
    static func start(certificate: String, key: String, extra: [String] = [], accepts: Int = 50) async throws -> OpenSSLServer {
        try await offThePool { try OpenSSLServer(certificate: certificate, key: key, extra: extra, accepts: accepts) }
    }

    init(certificate: String, key: String, extra: [String] = [], accepts: Int = 50) throws {
        self.port = try freePort()
        self.process = Process()
        // Under `timeout`: a test process that dies without stopping it leaves no server behind.
        self.process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        self.process.arguments = ["-s", "KILL", "300", "/usr/bin/openssl", "s_server", "-accept", "127.0.0.1:\(self.port)",
                                  "-cert", certificate, "-key", key, "-www", "-quiet", "-naccept", String(accepts)] + extra
        self.process.standardOutput = FileHandle.nullDevice
        self.process.standardError = FileHandle.nullDevice
        self.process.standardInput = FileHandle.nullDevice
        // With no signal blocked, so that SIGTERM reaches `timeout` (which passes it on).
        try launching { try self.process.run() }
        // Wait until it accepts.
        for _ in 0..<100 {
            if Self.accepts(port: self.port) { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        self.stop()
        throw TestServerError("openssl s_server did not start")
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// SIGTERM to `timeout`, which ends openssl and then itself; SIGKILL if that takes long.
    func stop() {
        guard self.process.isRunning else { return }
        kill(self.process.processIdentifier, SIGTERM)
        for _ in 0..<100 where self.process.isRunning { Thread.sleep(forTimeInterval: 0.02) }
        if self.process.isRunning { kill(self.process.processIdentifier, SIGKILL) }
        self.process.waitUntilExit()
    }

    deinit { self.stop() }

    func url(host: String = "127.0.0.1") -> String { "https://\(host):\(self.port)/" }
}

@Suite(.serialized) struct TLSTests {
    func fetch(_ url: String, _ adjust: (inout TLSConfiguration) -> Void = { _ in }) async throws -> Result<CollectedResponse, TransportError> {
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        adjust(&configuration.tls)
        let client = try HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        do {
            return .success(try await client.execute(try HTTPRequest(method: .get, url: url), options: .init(timeout: .seconds(10))))
        } catch {
            return .failure(error)
        }
    }

    @Test func verifiedAgainstATrustedCA() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { server.stop() }
        for host in ["127.0.0.1", "localhost"] {
            let response = try await self.fetch(server.url(host: host)) { $0.trustRoots = .file(certificates.path("ca.pem")) }.get()
            #expect(response.status == .ok)
            #expect(String(decoding: response.body, as: UTF8.self).contains("<HTML>"))
        }
        // The same CA given as PEM text instead of a file.
        let pem = try String(contentsOfFile: certificates.path("ca.pem"), encoding: .utf8)
        let response = try await self.fetch(server.url()) { $0.additionalTrustedCertificates = [pem] }.get()
        #expect(response.status == .ok)
    }

    /// The system's trust store (~50 ms of CPU to load) is read when the first https request
    /// is prepared, not when a client is made — and then it is read: OpenSSL takes the
    /// store's location from SSL_CERT_FILE, so a child pointed at the test CA that way must
    /// verify the server with the default configuration.
    @Test func systemTrustRootsLoadWhenFirstNeeded() async throws {
        let client = try HTTPClient()
        defer { client.shutdown() }
        let primary = client.tlsContexts.primary
        #expect(primary.defersTrust)
        // Refused (nothing listens on port 1): what counts is what preparing it loaded.
        _ = try? await client.execute(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:1", path: "/"),
                                      options: .init(timeout: .seconds(5)))
        #expect(primary.defersTrust, "a plain-HTTP request loaded the trust store")
        _ = try? await client.execute(HTTPRequest(method: .get, scheme: "https", authority: "127.0.0.1:1", path: "/"),
                                      options: .init(timeout: .seconds(5)))
        #expect(!primary.defersTrust)

        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { server.stop() }
        var environment = ProcessInfo.processInfo.environment
        environment["SSL_CERT_FILE"] = certificates.path("ca.pem")
        let trusted = try await runChild(CLITests.salvoPath, ["get", "-s", "-o", "/dev/null", server.url()], environment: environment)
        #expect(trusted.status == 0, "\(trusted.errors)")
        environment["SSL_CERT_FILE"] = certificates.path("self.pem")
        let untrusted = try await runChild(CLITests.salvoPath, ["get", "-s", "-o", "/dev/null", server.url()], environment: environment)
        #expect(untrusted.status == 60)
    }

    @Test func untrustedChainsAndWrongNamesAreRefused() async throws {
        let certificates = try await TestCertificates.shared.get()
        let leaf = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { leaf.stop() }
        guard case .failure(let unknownCA) = try await self.fetch(leaf.url()) else { Issue.record("accepted"); return }
        #expect(unknownCA.code == .tlsCertificateInvalid)

        let other = try await OpenSSLServer.start(certificate: certificates.path("other.pem"), key: certificates.path("other.key"))
        defer { other.stop() }
        let mismatchResult = try await self.fetch(other.url()) { $0.trustRoots = .file(certificates.path("ca.pem")) }
        guard case .failure(let mismatch) = mismatchResult else {
            Issue.record("accepted a certificate for another name"); return
        }
        #expect(mismatch.code == .tlsCertificateInvalid)
        #expect(mismatch.detail?.contains("mismatch") == true, "\(mismatch)")

        let selfSigned = try await OpenSSLServer.start(certificate: certificates.path("self.pem"), key: certificates.path("self.key"))
        defer { selfSigned.stop() }
        let selfResult = try await self.fetch(selfSigned.url()) { $0.trustRoots = .file(certificates.path("ca.pem")) }
        guard case .failure(let selfError) = selfResult else {
            Issue.record("accepted a self-signed certificate"); return
        }
        #expect(selfError.code == .tlsCertificateInvalid)
        #expect(selfError.detail?.contains("self-signed") == true, "\(selfError)")

        // Turning verification off is explicit, and then it connects.
        let insecure = try await self.fetch(selfSigned.url()) { $0 = .insecure }.get()
        #expect(insecure.status == .ok)
    }

    @Test func versionFloor() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"), extra: ["-tls1_2"])
        defer { server.stop() }
        let floorResult = try await self.fetch(server.url()) {
            $0.trustRoots = .file(certificates.path("ca.pem"))
            $0.minimumVersion = .tls13
        }
        guard case .failure(let error) = floorResult else { Issue.record("TLS 1.2 server accepted with a 1.3 floor"); return }
        #expect(error.code == .tlsHandshakeFailed)
        let fine = try await self.fetch(server.url()) { $0.trustRoots = .file(certificates.path("ca.pem")) }.get()
        #expect(fine.status == .ok)
    }

    @Test func badLocalFilesAreAClearError() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.tls.trustRoots = .file("/nonexistent/ca.pem")
        #expect(throws: TransportError.self) { try HTTPClient(configuration: configuration) }
        do {
            _ = try HTTPClient(configuration: configuration)
        } catch {
            #expect(error.code == .tlsLocalCertificate)
        }
    }

    @Test func curlExitCodes() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("self.pem"), key: certificates.path("self.key"))
        defer { server.stop() }
        #expect(try await CLITests.salvo("-s", "-o", "/dev/null", server.url()).status == 60)
        #expect(try await CLITests.salvo("-s", "-k", "-o", "/dev/null", server.url()).status == 0)
        #expect(try await CLITests.salvo("-s", "--cacert", certificates.path("self.pem"), "-o", "/dev/null", server.url(host: "localhost")).status == 0)
        #expect(try await CLITests.salvo("-s", "--cacert", "/nonexistent.pem", server.url()).status == 58)
        let old = try await OpenSSLServer.start(certificate: certificates.path("self.pem"), key: certificates.path("self.key"), extra: ["-tls1_2"])
        defer { old.stop() }
        #expect(try await CLITests.salvo("-s", "-k", "--tlsv1.3", "-o", "/dev/null", old.url()).status == 35)
    }

    @Test func publicKeyPinning() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { server.stop() }
        let pin = try await Self.pin(of: certificates.path("leaf.pem"))
        let pinned = try await self.fetch(server.url()) {
            $0.trustRoots = .file(certificates.path("ca.pem"))
            $0.pinnedPublicKeys = [pin]
        }.get()
        #expect(pinned.status == .ok)
        let otherPin = try await Self.pin(of: certificates.path("other.pem"))
        let wrong = try await self.fetch(server.url()) {
            $0.trustRoots = .file(certificates.path("ca.pem"))
            $0.pinnedPublicKeys = [otherPin]
        }
        guard case .failure(let error) = wrong else { Issue.record("accepted an unpinned key"); return }
        #expect(error.code == .tlsPinMismatch)
        #expect(try await CLITests.salvo("-s", "--cacert", certificates.path("ca.pem"), "--pinnedpubkey", "sha256//\(pin)",
                                   "-o", "/dev/null", server.url()).status == 0)
        #expect(try await CLITests.salvo("-s", "--cacert", certificates.path("ca.pem"), "--pinnedpubkey", "sha256//AAAA\(pin)",
                                   "-o", "/dev/null", server.url()).status == 90)
    }

    /// A close-delimited body that ends without close_notify may have been cut by an
    /// attacker: truncation. A body whose length was announced is complete regardless.
    @Test func closeWithoutCloseNotify() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await TLSFaultServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { server.stop() }
        let complete = try await self.fetch(server.url("/length")) { $0.trustRoots = .file(certificates.path("ca.pem")) }.get()
        #expect(String(decoding: complete.body, as: UTF8.self) == "hello")
        let cut = try await self.fetch(server.url("/close-delimited")) { $0.trustRoots = .file(certificates.path("ca.pem")) }
        guard case .failure(let error) = cut else { Issue.record("accepted a body cut without close_notify"); return }
        #expect(error.code == .truncatedBody)
    }

    static func pin(of certificate: String) async throws -> String {
        let script = "openssl x509 -in '\(certificate)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | openssl base64 -A"
        let run = try await runChild("/bin/sh", ["-c", script])
        guard run.status == 0, !run.signaled else { throw TestServerError("openssl could not read the key of \(certificate): \(run.errors)") }
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func loadGeneratorOverTLS() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { server.stop() }
        var configuration = LoadConfiguration(url: try RequestURL(server.url()))
        configuration.threads = 1
        configuration.connections = 2
        configuration.duration = .zero
        configuration.requestLimit = 40
        configuration.tls.trustRoots = .file(certificates.path("ca.pem"))
        let statistics = try await LoadGenerator(configuration: configuration).run()
        #expect(statistics.requests == 40)
        #expect(statistics.statusCounts == [200: 40])

        // Unverifiable: every attempt fails to connect, and the run says so instead of hanging.
        configuration.tls = TLSConfiguration()
        configuration.duration = .milliseconds(300)
        configuration.requestLimit = nil
        let refused = try await LoadGenerator(configuration: configuration).run()
        #expect(refused.requests == 0)
        #expect(refused.errors.connect > 0)
    }

    @Test(arguments: [TLSConfiguration.Version.tls12, .tls13])
    func sessionResumption(version: TLSConfiguration.Version) async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.maxConnectionsPerHost = 1
        configuration.tls.trustRoots = .file(certificates.path("ca.pem"))
        configuration.tls.minimumVersion = version
        configuration.tls.maximumVersion = version
        let client = try HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        // s_server -www answers HTTP/1.0 and closes: every request needs a new connection.
        for _ in 0..<3 {
            let response = try await client.execute(try HTTPRequest(method: .get, url: server.url()))
            #expect(response.status == .ok)
        }
        let statistics = await client.poolStatistics()
        #expect(statistics.connectionsOpened == 3)
        #expect(statistics.tlsResumed == 2, "the 2nd and 3rd handshakes resume the 1st session")
    }

    @Test func clientCertificateRequiredByTheServer() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"),
                                       extra: ["-Verify", "1", "-CAfile", certificates.path("ca.pem")])
        defer { server.stop() }
        let without = try await self.fetch(server.url()) { $0.trustRoots = .file(certificates.path("ca.pem")) }
        guard case .failure(let error) = without else { Issue.record("served without a client certificate"); return }
        #expect(error.code == .tlsHandshakeFailed || error.code == .readFailed || error.code == .emptyResponse, "\(error)")
        let with = try await self.fetch(server.url()) {
            $0.trustRoots = .file(certificates.path("ca.pem"))
            $0.certificateFile = certificates.path("client.pem")
            $0.privateKeyFile = certificates.path("client.key")
        }.get()
        #expect(with.status == .ok)
        #expect(try await CLITests.salvo("-s", "--cacert", certificates.path("ca.pem"), "--cert", certificates.path("client.pem"),
                                   "--key", certificates.path("client.key"), "-o", "/dev/null", server.url()).status == 0)
    }

    @Test func oldProtocolsAreRefused() async throws {
        let certificates = try await TestCertificates.shared.get()
        // A server that speaks TLS 1.0 only (if this OpenSSL still can): below the 1.2 floor.
        let server = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"),
                                       extra: ["-tls1", "-cipher", "DEFAULT:@SECLEVEL=0"])
        defer { server.stop() }
        let result = try await self.fetch(server.url()) { $0.trustRoots = .file(certificates.path("ca.pem")) }
        guard case .failure(let error) = result else { Issue.record("spoke TLS 1.0"); return }
        #expect(error.code == .tlsHandshakeFailed, "\(error)")
        #expect(try await CLITests.salvo("-s", "--cacert", certificates.path("ca.pem"), "-o", "/dev/null", server.url()).status == 35)
    }

    @Test func expiredCertificate() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await OpenSSLServer.start(certificate: certificates.path("expired.pem"), key: certificates.path("expired.key"))
        defer { server.stop() }
        let result = try await self.fetch(server.url()) { $0.trustRoots = .file(certificates.path("ca.pem")) }
        guard case .failure(let error) = result else { Issue.record("accepted an expired certificate"); return }
        #expect(error.code == .tlsCertificateInvalid)
        #expect(error.detail?.contains("expired") == true, "\(error)")
        #expect(try await CLITests.salvo("-s", "--cacert", certificates.path("ca.pem"), "-o", "/dev/null", server.url()).status == 60)
    }

    /// Keep-alive over TLS against nginx: one connection for many requests, large bodies
    /// spanning many TLS records, HEAD, and streaming.
    @Test func nginxOverTLS() async throws {
        let certificates = try await TestCertificates.shared.get()
        let nginx = try await NginxServer.start(tls: (certificates.path("leaf.pem"), certificates.path("leaf.key")))
        defer { nginx.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.maxConnectionsPerHost = 1
        configuration.tls.trustRoots = .file(certificates.path("ca.pem"))
        let client = try HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        let base = "https://localhost:\(nginx.tlsPort)"
        for _ in 0..<50 {
            let response = try await client.execute(try HTTPRequest(method: .get, url: base + "/small"))
            #expect(String(decoding: response.body, as: UTF8.self) == "hello, world\n")
        }
        let big = try await client.execute(try HTTPRequest(method: .get, url: base + "/1m"))
        #expect(big.body == (try nginx.contents(of: "1m")))
        let head = try await client.execute(try HTTPRequest(method: .head, url: base + "/64k"))
        #expect(head.body.isEmpty)
        let streamed = try await client.stream(try HTTPRequest(method: .get, url: base + "/1m"))
        var received: [UInt8] = []
        for try await chunk in streamed.body {
            received += chunk
            if received.count % 4 == 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(received == (try nginx.contents(of: "1m")))
        var post = try HTTPRequest(method: .post, url: base + "/sink")
        post.headerFields[.contentType] = "application/octet-stream"
        #expect(try await client.execute(post, body: .bytes([UInt8](repeating: 1, count: 300_000))).status == .ok)
        // A streamed, chunked upload over TLS (and one that waits for 100 Continue), stored by nginx.
        let payload = (0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 11) }
        let chunks = AsyncStream<[UInt8]> { continuation in
            for start in stride(from: 0, to: payload.count, by: 50_000) {
                continuation.yield(Array(payload[start..<min(payload.count, start + 50_000)]))
            }
            continuation.finish()
        }
        var put = try HTTPRequest(method: .put, url: base + "/dav/tls-upload.bin")
        #expect(try await client.execute(put, body: .stream(chunks)).status.code == 201)
        #expect(try nginx.contents(of: "dav/tls-upload.bin") == payload)
        put.headerFields[.expect] = "100-continue"
        #expect(try await client.execute(put, body: .bytes(payload)).status.code == 204)
        #expect(try nginx.contents(of: "dav/tls-upload.bin") == payload)
        let statistics = await client.poolStatistics()
        #expect(statistics.connectionsOpened == 1, "every request on one TLS connection")
    }

    /// A request's own TLS configuration gets its own connections: one made under the
    /// client's configuration is never handed to a request that asked for another.
    @Test func perRequestTLSConfigurationsArePooledApart() async throws {
        let certificates = try await TestCertificates.shared.get()
        let nginx = try await NginxServer.start(tls: (certificates.path("leaf.pem"), certificates.path("leaf.key")))
        defer { nginx.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.maxConnectionsPerHost = 4
        configuration.tls.trustRoots = .file(certificates.path("ca.pem"))
        let client = try HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        let request = try HTTPRequest(method: .get, url: "https://localhost:\(nginx.tlsPort)/small")
        #expect(try await client.execute(request).status == .ok)

        // Pinned to another key: must fail on a connection of its own, not ride the pooled one.
        var wrongPin = configuration.tls
        wrongPin.pinnedPublicKeys = [try await Self.pin(of: certificates.path("other.pem"))]
        do {
            _ = try await client.execute(request, options: .init(tls: wrongPin))
            Issue.record("a pooled connection was reused under another TLS configuration")
        } catch {
            #expect(error.code == .tlsPinMismatch)
        }
        // Trusting nothing the server has: refused, again on a fresh connection.
        var otherRoots = TLSConfiguration()
        otherRoots.additionalTrustedCertificates = [try String(contentsOfFile: certificates.path("self.pem"), encoding: .utf8)]
        otherRoots.trustRoots = .file(certificates.path("self.pem"))
        await #expect(throws: TransportError.self) { try await client.execute(request, options: .init(tls: otherRoots)) }

        // The right pin works, and its connection is reused by the next request that uses it.
        var rightPin = configuration.tls
        rightPin.pinnedPublicKeys = [try await Self.pin(of: certificates.path("leaf.pem"))]
        for _ in 0..<3 { #expect(try await client.execute(request, options: .init(tls: rightPin)).status == .ok) }
        // A per-request configuration equal to the client's shares the client's connections.
        #expect(try await client.execute(request, options: .init(tls: configuration.tls)).status == .ok)
        let statistics = await client.poolStatistics()
        #expect(statistics.connectionsOpened == 4, "default, wrong pin, other roots, right pin")
        #expect(statistics.connectionsReused == 3)
    }

    @Test func handshakeTimeout() async throws {
        // The fault server waits for an HTTP head; a ClientHello never gives it one, so the
        // handshake never gets an answer.
        let server = try await Shared.faults.get()
        let started = ContinuousClock.now
        let result = try await self.fetch("https://127.0.0.1:\(server.port)/") { $0.handshakeTimeout = .milliseconds(300) }
        guard case .failure(let error) = result else { Issue.record("a silent server completed a handshake"); return }
        #expect(error.code == .tlsHandshakeTimeout)
        #expect(error.detail?.contains("handshake") == true, "\(error)")
        #expect(ContinuousClock.now - started < .seconds(20), "bounded by the handshake timeout, not the 10 s connect timeout")
    }
}
