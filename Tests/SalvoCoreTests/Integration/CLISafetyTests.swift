import SalvoTestSupport
import Foundation
import Testing
@testable import SalvoCore

/// `salvo get` against the probes of a security review, side by side with the real curl:
/// odd URLs, output files, uploads from pipes, numeric options, credentials and raw bytes.
@Suite(.serialized) struct CLISafetyTests {
    struct Run {
        var status: Int32
        var stdout: Data
    }

    /// Runs a shell command line (so that arguments can carry bytes that are not UTF-8),
    /// feeding `input` to its standard input.
    static func shell(_ command: String, input: Data = Data()) async throws -> Run {
        let run = try await runChild("/bin/sh", ["-c", command], input: input)
        if run.signaled { Issue.record("\(command) died of signal \(run.status)") }
        return Run(status: run.status, stdout: run.stdout)
    }

    /// The same arguments (shell words) through salvo and through curl.
    static func both(_ arguments: String, input: Data = Data()) async throws -> (salvo: Run, curl: Run?) {
        let salvo = try await self.shell("exec '\(CLITests.salvoPath)' get \(arguments)", input: input)
        var curl: Run?
        if let path = CLITests.curlPath { curl = try await self.shell("exec '\(path)' \(arguments)", input: input) }
        return (salvo, curl)
    }

    func temporaryFile(_ contents: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-cli-\(UUID().uuidString)").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `scheme:/host` is `scheme://host`, as curl reads it: never a plaintext request to a
    /// host named after the scheme.
    /// A 307 for standard input, which cannot be sent again: the redirect is not followed
    /// and the call fails (25, as curl's suite expects; curl 7.88 says 65, "rewind failed",
    /// when the body had gone out already — either way it stops there).
    @Test func aRedirectThatWouldReplayStandardInputStops() async throws {
        let server = try await Shared.faults.get()
        let url = server.url("/redirect?code=307&to=%2Fecho-body")
        let ours = try await Self.shell("exec '\(CLITests.salvoPath)' get -s -L -T - '\(url)'", input: Data("from stdin".utf8))
        #expect(ours.status == 25)
        if let curl = CLITests.curlPath {
            let theirs = try await Self.shell("exec '\(curl)' -s -L -T - '\(url)'", input: Data("from stdin".utf8))
            #expect([25, 65].contains(theirs.status), "curl stops there too")
        }
    }

    @Test func oneSlashAfterTheSchemeKeepsTheScheme() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        // https:/ goes over TLS to that host (a TLS-only server answers), for both.
        let certificates = try await TestCertificates.shared.get()
        let tls = try await TLSFaultServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        defer { tls.stop() }
        let https = try await Self.both("-s --cacert '\(certificates.path("ca.pem"))' -H 'Authorization: Bearer secret' 'https:/127.0.0.1:\(tls.port)/ok'")
        #expect(https.salvo.status == 0)
        #expect(String(decoding: https.salvo.stdout, as: UTF8.self) == "ok")
        if let curl = https.curl { #expect(curl.status == 0) }
        for slashes in ["/", "//", "///"] {
            let run = try await Self.both("-s 'http:\(slashes)127.0.0.1:\(server.port)/ok'")
            #expect(run.salvo.status == 0, "http:\(slashes)")
            #expect(String(decoding: run.salvo.stdout, as: UTF8.self) == "hello")
            if let curl = run.curl { #expect(curl.status == 0) }
        }
        let four = try await Self.both("-s 'http:////127.0.0.1:\(server.port)/ok'")
        #expect(four.salvo.status == 3)
        if let curl = four.curl { #expect(curl.status == 3) }
        // No scheme: http, with host:port read as such.
        #expect(try await Self.both("-s '127.0.0.1:\(server.port)/ok'").salvo.status == 0)
    }

    /// `-o FILE` touches the file only once the body starts: a failure leaves it as it was.
    @Test func outputFilesSurviveFailedRequests() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        for (arguments, expected) in [("http://127.0.0.1:1/", Int32(7)), ("-f '\(server.url("/status?code=404"))'", 22),
                                      ("-m 0.3 '\(server.url("/stall"))'", 28)] {
            let salvoFile = try self.temporaryFile("keep me\n")
            let curlFile = try self.temporaryFile("keep me\n")
            defer {
                try? FileManager.default.removeItem(atPath: salvoFile)
                try? FileManager.default.removeItem(atPath: curlFile)
            }
            let salvo = try await Self.shell("exec '\(CLITests.salvoPath)' get -s -o '\(salvoFile)' \(arguments)")
            #expect(salvo.status == expected, "\(arguments)")
            #expect(try String(contentsOfFile: salvoFile, encoding: .utf8) == "keep me\n", "\(arguments)")
            if let curlPath = CLITests.curlPath {
                let curl = try await Self.shell("exec '\(curlPath)' -s -o '\(curlFile)' \(arguments)")
                #expect(curl.status == expected)
                #expect(try String(contentsOfFile: curlFile, encoding: .utf8) == "keep me\n")
            }
        }
        let file = try self.temporaryFile("old contents, longer than the new\n")
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(try await Self.shell("exec '\(CLITests.salvoPath)' get -s -o '\(file)' '\(server.url("/ok"))'").status == 0)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "hello")
        #expect(try await Self.shell("exec '\(CLITests.salvoPath)' get -s -o '\(file)' '\(server.url("/no-content"))'").status == 0)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "", "an empty body empties the file")
    }

    /// `-T -` streams standard input, chunked, as curl does; `--data-binary @FILE` on a file
    /// with no size up front sends what it holds, not `Content-Length: 0`.
    @Test func uploadsFromPipesAndSizelessFiles() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let payload = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let upload = try await Self.both("-s -T - '\(server.url("/echo"))'", input: payload)
        #expect(upload.salvo.status == 0)
        let requests = try server.log().requests
        let salvoRequest = try #require(requests.first)
        #expect(salvoRequest.method == "PUT")
        #expect(salvoRequest.header("transfer-encoding") == "chunked")
        #expect(salvoRequest.bodyLength == payload.count)
        if upload.curl != nil {
            #expect(requests.last?.header("transfer-encoding") == "chunked")
            #expect(requests.last?.bodyLength == payload.count)
        }
        // "-T ." is standard input too.
        try server.resetLog()
        let dot = try await Self.both("-s -T . '\(server.url("/echo"))'", input: Data("dot".utf8))
        #expect(dot.salvo.status == 0)
        #expect(try server.log().requests.allSatisfy { $0.method == "PUT" && $0.bodyLength == 3 })

        try server.resetLog()
        let version = try String(contentsOfFile: "/proc/version", encoding: .utf8)
        let sizeless = try await Self.both("-s --data-binary @/proc/version '\(server.url("/echo"))'")
        #expect(sizeless.salvo.status == 0)
        let sent = try server.log().requests
        #expect(sent.first?.bodyLength == version.utf8.count, "the file's contents, read to the end")
        if sizeless.curl != nil { #expect(sent.last?.bodyLength == version.utf8.count) }
    }

    /// Numeric options are range-checked as curl checks them (exit 2), never a trap.
    @Test(arguments: ["-m 1e300", "--connect-timeout 1e17", "-m -1", "-m inf", "-m abc", "--max-redirs -2",
                      "--max-filesize -5", "--max-filesize 99999999999999999999999", "--max-redirs 99999999999999999999"])
    func numericOptionsOutOfRange(option: String) async throws {
        let run = try await Self.both("-s \(option) http://127.0.0.1:1/")
        #expect(run.salvo.status == 2, "\(option)")
        if let curl = run.curl { #expect(curl.status == 2, "curl \(option)") }
    }

    @Test func zeroMeansNoTimeout() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let run = try await Self.both("-s -m 0 --connect-timeout 0 '\(server.url("/ok"))'")
        #expect(run.salvo.status == 0)
        if let curl = run.curl { #expect(curl.status == 0) }
    }

    /// Userinfo becomes Basic credentials, percent-decoded, as curl sends them; a URL's
    /// non-ASCII bytes go percent-encoded and header bytes as typed; numeric hosts reach the
    /// Host header as a dotted quad.
    @Test func credentialsRawBytesAndNumericHosts() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let port = server.port
        let arguments = [
            "-s 'http://u%41:p%3Aw@127.0.0.1:\(port)/echo'",
            "-s \"$(printf 'http://127.0.0.1:\(port)/caf\\351')\" -H \"$(printf 'X-Raw: a\\377b')\"",
            "-s 'http://0x7f.1:\(port)/echo'",
        ]
        for argument in arguments {
            try server.resetLog()
            let run = try await Self.both(argument)
            #expect(run.salvo.status == 0, "\(argument)")
            let requests = try server.log().requests
            let salvo = try #require(requests.first)
            if run.curl != nil, let curl = requests.last, requests.count == 2 {
                #expect(salvo.path.lowercased() == curl.path.lowercased(), "\(argument)")
                for name in ["authorization", "host", "x-raw"] {
                    #expect(salvo.header(name) == curl.header(name), "\(name) for \(argument)")
                }
            }
        }
        try server.resetLog()
        _ = try await Self.both("-s 'http://u%41:p%3Aw@127.0.0.1:\(port)/echo'")
        #expect(try server.log().requests.first?.header("authorization") == "Basic dUE6cDp3")
        try server.resetLog()
        _ = try await Self.shell("exec '\(CLITests.salvoPath)' get -s \"$(printf 'http://127.0.0.1:\(port)/caf\\351')\" -H \"$(printf 'X-Raw: a\\377b')\"")
        let raw = try #require(try server.log().requests.first)
        #expect(raw.path == "/caf%E9")
        // Valid UTF-8 in the query is encoded too (curl 7.88 sends it raw; RFC 3986 wants ASCII).
        try server.resetLog()
        _ = try await Self.shell("exec '\(CLITests.salvoPath)' get -s \"$(printf 'http://127.0.0.1:\(port)/q?\\303\\251')\"")
        #expect(try server.log().requests.first?.path == "/q?%C3%A9")
        #expect(raw.header("x-raw").map { Array($0.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }) } == [0x61, 0xFF, 0x62])
        // A host name outside ASCII is refused, clearly, before any lookup.
        #expect(try await Self.shell("exec '\(CLITests.salvoPath)' get -s 'http://b\u{fc}cher.test/'").status == 3)
    }

    /// A standard output closed by its reader is curl's exit 23, not death by SIGPIPE.
    @Test func closedStandardOutputIsAWriteError() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let run = try await Self.shell("""
            exec bash -c "'\(CLITests.salvoPath)' get -s '\(server.url("/big?n=4000000"))' | head -c 1 >/dev/null; echo \\${PIPESTATUS[0]}"
            """)
        #expect(String(decoding: run.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "23")
    }
}
