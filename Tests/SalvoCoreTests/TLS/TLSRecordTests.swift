import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore

/// How a request is cut into TLS records. A server that reads one record, answers and closes
/// loses the body of a request sent as two — and its kernel may then reset the connection
/// before the client has read the answer. A request whose head and in-memory body fit one
/// record goes as one; a larger one goes as before, head first.
///
/// The server (`tls_record_server.py`) answers 200 only when its first read — one record at
/// most — held the whole request, and says how long the head was.
@Suite struct TLSRecordTests {
    /// A POST of `bodySize` bytes to the server: its status, its body, and the head's length.
    func post(_ bodySize: Int, to server: TLSRecordServer, with client: HTTPClient) async throws -> (Int, String, Int?) {
        var post = try HTTPRequest(method: .post, url: server.url("/one-record"))
        post.headerFields[.contentType] = "application/octet-stream"
        let body = (0..<bodySize).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let response = try await client.execute(post, body: .bytes(body), options: .init(timeout: .seconds(30)))
        let headBytes = response.headerFields[HTTPField.Name("X-Head-Bytes")!].flatMap { Int($0) }
        return (response.status.code, String(decoding: response.body, as: UTF8.self), headBytes)
    }

    @Test func aSmallRequestIsOneRecord() async throws {
        let certificates = try await TestCertificates.shared.get()
        let server = try await TLSRecordServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.tls.trustRoots = .file(certificates.path("ca.pem"))
        let client = try HTTPClient(configuration: configuration)
        defer { client.shutdown() }
        try await withWatchdog(.seconds(60)) {
            let (status, text, _) = try await self.post(100, to: server, with: client)
            #expect(status == 200 && text == "one-record", "\(status) \(text)")
            // At the edge: head and body of exactly one record's 16 KiB are one write; one
            // byte more, and the head goes first, as for any larger request. The head's length
            // is learnt from a body whose length has as many digits as theirs.
            let probe = try await self.post(10_000, to: server, with: client)
            #expect(probe.0 == 200, "\(probe)")
            let head = try #require(probe.2)
            let fits = TLSSession.maxRecordPlaintext - head
            let atTheLimit = try await self.post(fits, to: server, with: client)
            #expect(atTheLimit.0 == 200 && atTheLimit.2 == head, "\(atTheLimit)")
            let pastTheLimit = try await self.post(fits + 1, to: server, with: client)
            #expect(pastTheLimit.0 == 400 && pastTheLimit.1 == "split" && pastTheLimit.2 == head, "\(pastTheLimit)")
        }
    }
}
