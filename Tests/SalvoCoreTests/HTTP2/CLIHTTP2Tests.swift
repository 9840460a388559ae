import Foundation
import SalvoTestSupport
import Testing

/// `salvo get` over HTTP/2 side by side with curl against nginx with HTTP/2 on: the same bytes
/// with `-i`, the same `%{http_version}` and exit status with `--http2`, `--http2-prior-knowledge`
/// and `--http1.1`, and several URLs on one multiplexed connection.
@Suite struct CLIHTTP2Tests {
    func urls() async throws -> (tls: String, h2c: String, ca: String) {
        let fixture = try await HTTP2ClientTests.shared.get()
        return ("https://localhost:\(fixture.nginx.tlsPort)", "http://127.0.0.1:\(fixture.nginx.h2cPort)",
                fixture.certificates.path("ca.pem"))
    }

    /// `-i` prints `HTTP/2 200 ` and the fields as curl does; `%{http_version}` is 2.
    @Test func headsAndVersionLikeCurl() async throws {
        let (tls, h2c, ca) = try await self.urls()
        // nginx's Date may tick between the two runs: compare without it.
        try await CLITests.sideBySide(["-s", "-i", "--cacert", ca, "-H", "Accept-Encoding: identity", tls + "/1k"], ignoringDate: true)
        try await CLITests.sideBySide(["-s", "-i", "--http2", "--cacert", ca, tls + "/status/404"], ignoringDate: true)
        try await CLITests.sideBySide(["-s", "-i", "--http1.1", "--cacert", ca, tls + "/small"], ignoringDate: true)
        try await CLITests.sideBySide(["-s", "-i", "--http2-prior-knowledge", h2c + "/small"], ignoringDate: true)
        for flag in ["--http2", "--http1.1", "--http2-prior-knowledge"] {
            try await CLITests.sideBySide(["-s", flag, "-o", "/dev/null", "-w", "%{http_version} %{http_code}\\n", "--cacert", ca, tls + "/small"])
        }
        // The last of the flags wins, as in curl.
        try await CLITests.sideBySide(["-s", "--http2", "--http1.1", "-o", "/dev/null", "-w", "%{http_version}", "--cacert", ca, tls + "/small"])
        try await CLITests.sideBySide(["-s", "--http1.1", "--http2", "-o", "/dev/null", "-w", "%{http_version}", "--cacert", ca, tls + "/small"])
        // A redirect followed over HTTP/2, and HEAD.
        try await CLITests.sideBySide(["-s", "-L", "--cacert", ca, tls + "/redirect"])
        try await CLITests.sideBySide(["-s", "-I", "--cacert", ca, tls + "/64k"], ignoringDate: true)
    }

    /// `-v` says the connection speaks HTTP/2 and shows the request and response heads in it.
    @Test func verboseShowsTheProtocol() async throws {
        let (tls, _, ca) = try await self.urls()
        let run = try await CLITests.salvo("-s", "-v", "-o", "/dev/null", "--cacert", ca, tls + "/small")
        #expect(run.status == 0)
        #expect(run.stderr.contains("* using HTTP/2\r\n"))
        #expect(run.stderr.contains("> GET /small HTTP/2\r\n"))
        #expect(run.stderr.contains("< HTTP/2 200 \r\n"))
        let old = try await CLITests.salvo("-s", "-v", "--http1.1", "-o", "/dev/null", "--cacert", ca, tls + "/small")
        #expect(!old.stderr.contains("HTTP/2"))
        #expect(old.stderr.contains("> GET /small HTTP/1.1\r\n"))
    }

    /// Several URLs of one command line share one connection, at once with `-Z`.
    @Test func severalURLsShareOneConnection() async throws {
        let (tls, _, ca) = try await self.urls()
        let many = (0..<6).map { tls + "/small?\($0)" }
        for parallel in [[], ["-Z"]] {
            let run = try await CLITests.salvo(["-s", "--cacert", ca, "-w", "%{num_connects} %{http_version}\\n"] + parallel + many)
            #expect(run.status == 0)
            let lines = String(decoding: run.stdout, as: UTF8.self).split(separator: "\n").filter { $0.hasSuffix(" 2") }
            #expect(lines.count == 6, "\(parallel): \(String(decoding: run.stdout, as: UTF8.self))")
            #expect(lines.filter { $0.hasPrefix("1 ") }.count == 1, "\(parallel): one connection opened for all")
        }
    }
}
