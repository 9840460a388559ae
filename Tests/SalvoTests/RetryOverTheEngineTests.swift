import Foundation
import Salvo
import SalvoCore
import SalvoTestSupport
import Testing

/// A self-signed certificate for 127.0.0.1, made by the openssl CLI for this run.
struct SelfSignedCertificate: Sendable {
    let certificate: String
    let key: String

    static let shared = SharedFixture { try SelfSignedCertificate() }

    init() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-retry-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.certificate = directory.appendingPathComponent("cert.pem").path
        self.key = directory.appendingPathComponent("key.pem").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.key, "-out", self.certificate,
                             "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try launching { try process.run() }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestServerError("openssl req failed") }
    }
}

/// `RetryMiddleware(RetryPolicy(maxAttempts: 3))` over the engine, against servers that count
/// what they receive: a failure the same request would meet again is sent once — every hop
/// of its one attempt, and no more — while a connection reset is still tried three times.
@Suite struct RetryOverTheEngineTests {
    func client(_ baseURL: String, transport: (any Transport)? = nil) throws -> Client {
        try Client(baseURL: baseURL, transport: transport, configuration: .init(middleware: [RetryMiddleware(RetryPolicy(maxAttempts: 3))]))
    }

    /// The paths a fault server received, in order.
    func paths(_ server: FaultServer) async throws -> [String] {
        try await offThePool { try server.log().requests.map(\.path) }
    }

    /// /ping and /pong redirect to each other: the loop ends at the count of redirects, once.
    @Test func aRedirectLoopIsOneAttempt() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let error = try await withWatchdog(.seconds(60)) {
            await (try self.client(server.url(""))).outcome(Endpoint<String>.get("/ping")).error
        }
        #expect(error?.code == .transportFailed && error?.transportError?.code == .tooManyRedirects, "\(String(describing: error))")
        #expect(error?.isTransient == false)
        let paths = try await self.paths(server)
        #expect(paths.count == 11, "the first request and ten redirects, no retry: \(paths)")
    }

    /// A chain longer than the 10 redirects followed: the first request and ten more.
    @Test func tooManyRedirectsAreOneAttempt() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let error = try await withWatchdog(.seconds(60)) {
            await (try self.client(server.url(""))).outcome(Endpoint<String>.get("/chain", query: [QueryItem("n", "20")])).error
        }
        #expect(error?.transportError?.code == .tooManyRedirects, "\(String(describing: error))")
        let paths = try await self.paths(server)
        #expect(paths == (10...20).reversed().map { "/chain?n=\($0)" }, "\(paths.count) requests: \(paths)")
    }

    /// An https server redirecting to http: refused after its one request, and the http
    /// server never asked.
    @Test func aRedirectFromHTTPSToHTTPIsOneAttempt() async throws {
        let certificate = try await SelfSignedCertificate.shared.get()
        let tls = try await TLSRecordServer.start(certificate: certificate.certificate, key: certificate.key)
        defer { tls.stop() }
        let plain = try await FaultServer.start()
        defer { plain.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.tls.trustRoots = .file(certificate.certificate)
        let engine = try HTTPClient(configuration: configuration)
        defer { engine.shutdown() }
        let error = try await withWatchdog(.seconds(60)) {
            await (try self.client(tls.url(""), transport: engine))
                .outcome(Endpoint<String>.get("/redirect", query: [QueryItem("to", plain.url("/ok"))])).error
        }
        #expect(error?.transportError?.code == .redirectRefused, "\(String(describing: error))")
        let count = try await engine.execute(try HTTPRequest(method: .get, url: tls.url("/count?path=/redirect")))
        #expect(String(decoding: count.body, as: UTF8.self) == "1")
        #expect(try await self.paths(plain).isEmpty)
    }

    /// A certificate the client does not trust: one handshake, not three.
    @Test func anUntrustedCertificateIsOneAttempt() async throws {
        let certificate = try await SelfSignedCertificate.shared.get()
        let tls = try await TLSRecordServer.start(certificate: certificate.certificate, key: certificate.key)
        defer { tls.stop() }
        let untrusting = try HTTPClient(configuration: HTTPClient.Configuration())
        defer { untrusting.shutdown() }
        let error = try await withWatchdog(.seconds(60)) {
            await (try self.client(tls.url(""), transport: untrusting)).outcome(Endpoint<String>.get("/one-record")).error
        }
        #expect(error?.transportError?.code == .tlsCertificateInvalid, "\(String(describing: error))")
        var configuration = HTTPClient.Configuration()
        configuration.tls.trustRoots = .file(certificate.certificate)
        let trusting = try HTTPClient(configuration: configuration)
        defer { trusting.shutdown() }
        let failed = try await trusting.execute(try HTTPRequest(method: .get, url: tls.url("/failed-handshakes")))
        #expect(String(decoding: failed.body, as: UTF8.self) == "1")
    }

    /// A reset in the middle of the body might not happen again: three attempts.
    @Test func aResetIsRetried() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let error = try await withWatchdog(.seconds(60)) {
            await (try self.client(server.url(""))).outcome(Endpoint<String>.get("/reset")).error
        }
        #expect(error?.transportError?.code == .readFailed, "\(String(describing: error))")
        #expect(error?.isTransient == true)
        let paths = try await self.paths(server)
        #expect(paths == ["/reset", "/reset", "/reset"], "\(paths.count) requests: \(paths)")
    }

    /// The retry table's row of the cancellation phases (the engine's rows are in
    /// SalvoCoreTests' CancellationPhaseTests): cancelled while it waits out a backoff, the
    /// call ends at once, as a cancellation; no second attempt is sent later, and the
    /// first attempt's connection, its answer read whole, is back in the pool, idle.
    @Test func aCancellationInsideTheBackoffEndsTheCallOnce() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        let engine = try HTTPClient(configuration: configuration)
        defer { engine.shutdown() }
        // The backoff is a random wait up to the delay: a day makes a short one vanishingly rare.
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(86_400), maxDelay: .seconds(86_400), budget: nil)
        let client = try Client(baseURL: server.url(""), transport: engine, configuration: .init(middleware: [RetryMiddleware(policy)]))
        let call = Task { await client.outcome(Endpoint<String>.get("/status", query: [QueryItem("code", "503")])) }
        // In the backoff once the 503 is read whole: its connection is idle in the pool.
        while await engine.poolStatistics().hosts.values.reduce(0, { $0 + $1.idle }) == 0 {
            try await Task.sleep(for: .milliseconds(10))
        }
        let start = ContinuousClock.now
        call.cancel()
        let outcome = await call.value
        #expect(outcome.error?.code == .cancelled, "\(String(describing: outcome.error))")
        // A day's backoff, ended by the cancellation: the bound leaves room for a loaded machine.
        #expect(ContinuousClock.now - start < .seconds(15))
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await self.paths(server).count == 1)
        let statistics = await engine.poolStatistics()
        #expect(statistics.openConnections == 1 && statistics.hosts.values.reduce(0) { $0 + $1.idle } == 1,
                "the answered connection is idle in the pool: \(statistics)")
    }
}
