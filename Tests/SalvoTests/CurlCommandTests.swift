import Foundation
@testable import Salvo
import SalvoTestSupport
import Testing

/// Requests exported as `curl` commands, run with the real curl against the test API's echo:
/// the server must receive what the request says.
@Suite struct CurlCommandTests {
    func request(_ head: HTTPRequest, body: HTTPBody? = nil) throws -> ClientRequest {
        ClientRequest(head: head, body: body, operationName: "test", baseURL: try BaseURL("http://api.test"))
    }

    @Test func quotingAndSpellings() async throws {
        var head = HTTPRequest(method: .get, scheme: "http", authority: "api.test", path: "/a?b[]=1&c='x'")
        head.headerFields[HTTPField.Name("X-Empty")!] = ""
        let get = try await self.request(head).curlCommand()
        #expect(get == #"curl --http1.1 --globoff --path-as-is -H 'User-Agent:' -H 'Accept:' -H 'X-Empty;' 'http://api.test/a?b[]=1&c='\''x'\'''"#)
        head.method = .head
        #expect(try await self.request(head).curlCommand().contains(" --head "))
        let binary = try await self.request(HTTPRequest(method: .put, scheme: "http", authority: "api.test", path: "/b"),
                                            body: .bytes([0, 0x25, 0x5C, 0x27, 0x41, 0xFF])).curlCommand()
        #expect(binary.hasPrefix(#"printf '\000\045\134\047A\377' | curl "#))
        let streamed = try await self.request(HTTPRequest(method: .post, scheme: "http", authority: "api.test", path: "/c"),
                                              body: .stream(AsyncStream<[UInt8]> { $0.finish() })).curlCommand()
        #expect(streamed.hasPrefix("# the body"))
        #expect(streamed.hasSuffix("--data-binary @- 'http://api.test/c'"))
        for risky in ["@/etc/passwd", "a\u{7F}b", "tab\there", "cr\r"] {
            let command = try await self.request(HTTPRequest(method: .post, scheme: "http", authority: "api.test", path: "/d"),
                                                 body: .bytes(Array(risky.utf8))).curlCommand()
            #expect(command.hasPrefix("printf '"), "\(risky) must not go in quotes: \(command)")
        }
    }

    /// For a bug report, the credential fields (the one list the redirects and the logging
    /// middleware use) show without their values, and the command says so.
    @Test func credentialsCanBeRedacted() async throws {
        var head = HTTPRequest(method: .get, scheme: "https", authority: "api.test", path: "/me")
        head.headerFields[.authorization] = "Bearer s3cret"
        head.headerFields[HTTPField.Name("X-Api-Key")!] = "k3y"
        head.headerFields[HTTPField.Name("X-Tenant")!] = "acme"
        let full = try await self.request(head).curlCommand()
        #expect(full.contains("'Authorization: Bearer s3cret'"), "by default the command sends what the request does")
        let redacted = try await self.request(head).curlCommand(redacting: .standard)
        #expect(!redacted.contains("s3cret") && !redacted.contains("k3y"))
        #expect(redacted.contains("'Authorization: ‹redacted›'") && redacted.contains("'X-Api-Key: ‹redacted›'"))
        #expect(redacted.contains("'X-Tenant: acme'"))
        #expect(redacted.hasPrefix("# credentials and query values redacted"))
        var keyed = head
        keyed.path = "/me?api_key=k3y&page=2"
        let withQuery = try await self.request(keyed).curlCommand(redacting: .standard)
        #expect(!withQuery.contains("k3y") && withQuery.hasSuffix("'https://api.test/me?api_key=‹redacted›&page=‹redacted›'"))
        #expect(ClientRequest.redactedURL("http://u:p@a.test:8/x?q=1") == "http://a.test:8/x?q=‹redacted›")
        let own = try await self.request(head).curlCommand(redacting: .standard.adding([HTTPField.Name("X-Tenant")!]))
        #expect(own.contains("'X-Tenant: ‹redacted›'"))
    }

    /// Runs `command` in `sh` and decodes the echo it prints.
    func run(_ command: String) async throws -> Echo {
        // Read by the shell as a script, as when pasted: no single argument holds it.
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-curl-\(UUID().uuidString).sh")
        try Data((command + " --silent --show-error --max-time 10\n").utf8).write(to: script)
        defer { try? FileManager.default.removeItem(at: script) }
        let run = try await runChild("/bin/sh", [script.path])
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            return try decoder.decode(Echo.self, from: run.stdout)
        } catch {
            throw CurlRunFailed(status: run.status, errors: run.errors, decoding: error)
        }
    }

    @Test func theRealCurlSendsWhatTheRequestSays() async throws {
        let client = try await SharedAPI.client(.init(headerFields: [HTTPField.Name("X-Team")!: "it's \"ours\" $HOME `x`"]))
        struct Note: Encodable, Sendable { var text: String }
        let cases: [Endpoint<Empty>] = [
            .post("/echo", body: Note(text: "it's a \"note\"\nwith $(two) lines & 100%"), query: [QueryItem("tag[]", "a b"), QueryItem("q", "ü")]),
            .get("/echo", headers: [.accept: "text/plain", HTTPField.Name("X-Empty")!: ""]),
            Endpoint(method: .put, path: "/echo", body: .raw(.bytes([0, 1, 2, 0x25, 0x5C, 0x27, 0x0A, 0xFF, 0xFE]))),
            Endpoint(method: .patch, path: "/echo", body: .raw(.bytes(Array("é plain utf-8 ✓".utf8), contentType: "text/plain"))),
            // Bytes a terminal or curl would take otherwise: a file name, DEL, tab, CR.
            Endpoint(method: .post, path: "/echo", body: .raw(.bytes(Array("@/etc/hostname".utf8), contentType: "text/plain"))),
            Endpoint(method: .post, path: "/echo", body: .raw(.bytes(Array("a\u{7F}'; touch /tmp/salvo-curl-test #\tb\r\n".utf8)))),
            // A multipart body starts with "--", which printf would take for an option.
            Endpoint(method: .post, path: "/echo", body: .raw(.bytes(
                Array("--b0undary\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--b0undary--\r\n".utf8),
                contentType: "multipart/form-data; boundary=b0undary"))),
            // Longer than one argument may be; longer than curl's threshold for Expect.
            Endpoint(method: .post, path: "/echo", body: .raw(.bytes(Array(String(repeating: "0123456789abcdef", count: 9 * 1024).utf8),
                                                                      contentType: "text/plain"))),
            Endpoint(method: .post, path: "/echo", body: .raw(.bytes(Array(String(repeating: "ab\n", count: 400_000).utf8),
                                                                      contentType: "text/plain"))),
        ]
        for endpoint in cases {
            let (head, body) = try client.prepare(endpoint)
            let command = try await client.curlCommand(for: endpoint)
            let echo = try await self.run(command)
            #expect(echo.method == head.method.rawValue, "\(command)")
            let target = (head.path ?? "/").split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            #expect(echo.path == String(target[0]))
            #expect(echo.query == (target.count > 1 ? String(target[1]) : ""))
            let sent: [UInt8] = if case .bytes(let bytes) = body?.content { bytes } else { [] }
            #expect(echo.body.unicodeScalars.map { UInt8($0.value) } == sent, "\(command)")
            // The fields the server got: the request's own, plus Host and the body's length.
            let expected = head.headerFields.map { "\($0.name.rawName.lowercased()): \($0.value)" }.sorted()
            let received = echo.headers.filter { !["host", "content-length"].contains($0[0].lowercased()) }
                .map { "\($0[0].lowercased()): \($0[1])" }.sorted()
            #expect(received == expected, "\(command)")
        }
    }
}

/// What curl printed when its output was not the echo expected.
struct CurlRunFailed: Error, CustomStringConvertible {
    var status: Int32
    var errors: String
    var decoding: any Error
    var description: String { "curl exited \(self.status): \(self.errors) (\(self.decoding))" }
}
