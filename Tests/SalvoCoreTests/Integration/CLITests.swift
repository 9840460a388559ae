import SalvoTestSupport
import Foundation
import Testing

/// `salvo get` run side by side with curl against the same hostile responses: the exit
/// status must be curl's, except where Salvo is stricter on purpose (listed below).
@Suite struct CLITests {
    static var salvoPath: String { TestFixtures.product("salvo") }

    struct Run {
        var status: Int32
        var stdout: Data
        var stderr: String
    }

    /// Runs `executable` to its end, off the cooperative pool (a run may take seconds).
    static func run(_ executable: String, _ arguments: [String]) async throws -> Run {
        let run = try await runChild(executable, arguments)
        if run.signaled { Issue.record("\(executable) \(arguments) died of signal \(run.status): \(run.errors)") }
        return Run(status: run.status, stdout: run.stdout, stderr: run.errors)
    }

    static func salvo(_ arguments: String...) async throws -> Run { try await run(salvoPath, ["get"] + arguments) }
    static func salvo(_ arguments: [String]) async throws -> Run { try await run(salvoPath, ["get"] + arguments) }

    static var curlPath: String? {
        ["/usr/bin/curl", "/usr/local/bin/curl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func raw(_ server: FaultServer, _ bytes: String, then: String = "close") -> String {
        let b64 = Data(bytes.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return server.url("/raw?b=\(b64)&then=\(then)")
    }

    /// Responses on which Salvo and curl must agree.
    static let agreed: [(String, String)] = [
        ("ok", "/ok"), ("truncated", "/truncated"), ("truncated-chunked", "/truncated-chunked"),
        ("reset", "/reset"), ("garbage", "/garbage"), ("empty", "/empty"), ("stall-body", "/stall-body"),
        ("one-byte", "/one-byte"), ("chunked", "/chunked"), ("close-delimited", "/close-delimited"),
        ("http10", "/http10"), ("continue", "/continue"), ("no-content", "/no-content"),
        ("not-modified", "/not-modified"), ("status-500", "/status?code=500"),
    ]

    // Not listed: a folded (obs-fold) header line, which llhttp 8 accepts and llhttp 9
    // refuses in strict mode; Salvo follows whichever llhttp it is built with.
    static let agreedRaw: [(String, String)] = [
        ("no reason phrase", "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok"),
        ("bad version", "HTTP/2.5 200 OK\r\nContent-Length: 2\r\n\r\nok"),
        ("bad status", "HTTP/1.1 abc OK\r\nContent-Length: 2\r\n\r\nok"),
        ("HTTP/0.9", "hello world"),
        ("bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nok\r\n0\r\n\r\n"),
        ("negative length", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nok"),
        ("gzip transfer coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok"),
        ("NUL in a value", "HTTP/1.1 200 OK\r\nX-A: a\u{0}b\r\nContent-Length: 2\r\n\r\nok"),
        ("bytes after the body", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"),
        ("only 100 Continue", "HTTP/1.1 100 Continue\r\n\r\n"),
        ("close in chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5"),
        ("304 with length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"),
    ]

    @Test func exitStatusMatchesCurl() async throws {
        guard let curl = Self.curlPath else {
            Issue.record("curl is not installed (scripts/setup installs it)")
            return
        }
        let server = try await Shared.faults.get()
        var cases = Self.agreed.map { ($0.0, server.url($0.1)) }
        cases += Self.agreedRaw.map { ($0.0, Self.raw(server, $0.1)) }
        for (name, url) in cases {
            let theirs = try await Self.run(curl, ["-s", "-m", "3", "-o", "/dev/null", url])
            let ours = try await Self.salvo("-s", "-m", "3", "-o", "/dev/null", url)
            #expect(ours.status == theirs.status, "\(name): salvo \(ours.status), curl \(theirs.status)")
        }
    }

    /// Runs curl and salvo with the same arguments: same exit status, same bytes out
    /// (`ignoringDate`: but for a Date line, which a server's clock may change between the runs).
    static func sideBySide(_ arguments: [String], ignoringDate: Bool = false,
                           sourceLocation: SourceLocation = #_sourceLocation) async throws {
        guard let curl = Self.curlPath else {
            Issue.record("curl is not installed (scripts/setup installs it)", sourceLocation: sourceLocation)
            return
        }
        let theirs = try await Self.run(curl, arguments)
        let ours = try await Self.run(salvoPath, ["get"] + arguments)
        #expect(ours.status == theirs.status, "\(arguments): salvo \(ours.status), curl \(theirs.status)", sourceLocation: sourceLocation)
        let clean = { (data: Data) -> Data in
            guard ignoringDate else { return data }
            // Split as bytes: a String would hold each CR LF as one character.
            let lines = [UInt8](data).split(separator: 0x0A, omittingEmptySubsequences: false)
            let kept = lines.filter { !String(decoding: $0.prefix(5), as: UTF8.self).lowercased().hasPrefix("date:") }
            return Data(kept.joined(separator: [0x0A]))
        }
        #expect(clean(ours.stdout) == clean(theirs.stdout), "\(arguments): output differs", sourceLocation: sourceLocation)
    }

    @Test func redirectsLikeCurl() async throws {
        let server = try await Shared.faults.get()
        try await Self.sideBySide(["-s", "-L", server.url("/chain?n=3")])
        try await Self.sideBySide(["-s", server.url("/chain?n=3")])
        try await Self.sideBySide(["-s", "-L", "--max-redirs", "2", server.url("/chain?n=3")])
        try await Self.sideBySide(["-s", "-L", "--max-redirs", "3", server.url("/chain?n=3")])
        try await Self.sideBySide(["-s", "-L", "-o", "/dev/null", server.url("/ping")])
        try await Self.sideBySide(["-s", "-L", "-d", "x=1", server.url("/redirect?code=303&to=%2Fok")])
    }

    @Test func uploadsLikeCurl() async throws {
        let server = try await Shared.faults.get()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-cli-\(UUID().uuidString).bin").path
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await Self.sideBySide(["-s", "-T", path, server.url("/echo-body")])
        try await Self.sideBySide(["-s", "--data-binary", "@" + path, server.url("/echo-body")])
        try await Self.sideBySide(["-s", "-T", path, "-H", "Expect: 100-continue", server.url("/echo-body")])
        try await Self.sideBySide(["-s", "-T", path, "-H", "Expect: 100-continue", server.url("/echo-body?expect=417")])
        try await Self.sideBySide(["-s", "-T", path + ".missing", server.url("/echo-body")])
        try await Self.sideBySide(["-s", "-L", "-T", path, server.url("/redirect?code=307&to=%2Fecho-body")])
        // The method and framing the server saw.
        _ = try await Self.salvo("-s", "-o", "/dev/null", "-T", path, server.url("/echo"))
        let echoed = try await Self.salvo("-s", "-T", path, server.url("/echo"))
        let text = String(decoding: echoed.stdout, as: UTF8.self)
        #expect(text.contains("\"method\": \"PUT\""))
        #expect(text.contains("\"body_len\": 300000"))
    }

    @Test func compressionAndSizeLimitsLikeCurl() async throws {
        let server = try await Shared.faults.get()
        for coding in ["gzip", "deflate", "raw", "chain"] {
            try await Self.sideBySide(["-s", "--compressed", server.url("/coded?n=200000&coding=\(coding)")])
        }
        // curl 7.88 stops after the first of concatenated gzip members (exit 23); all are decoded here.
        let members = try await Self.salvo("-s", "--compressed", server.url("/coded?n=200000&coding=gzip2"))
        #expect(members.status == 0)
        #expect(members.stdout == (try await Self.salvo("-s", server.url("/plain?n=200000")).stdout))
        try await Self.sideBySide(["-s", server.url("/coded?n=2000")])  // no --compressed: bytes as sent
        try await Self.sideBySide(["-s", "--compressed", "-o", "/dev/null", server.url("/coded?n=200000&corrupt=1")])
        try await Self.sideBySide(["-s", "--compressed", "-o", "/dev/null", server.url("/coded?n=2000&ce=br")])
        try await Self.sideBySide(["-s", "--max-filesize", "1000", "-o", "/dev/null", server.url("/big?n=5000")])
        try await Self.sideBySide(["-s", "--max-filesize", "5000", server.url("/big?n=5000")])
        // Past curl 7.88 (which only checks a Content-Length): the decoded size is bounded too.
        let bomb = try await Self.salvo("-s", "--compressed", "--max-filesize", "1000000", "-o", "/dev/null", server.url("/bomb?mib=64"))
        #expect(bomb.status == 63)
    }

    /// What RFC 9112 lets a recipient accept and curl does: bare LF line ends, one length
    /// repeated, chunked with a Content-Length beside it (chunked wins).
    @Test func acceptsWhatCurlAccepts() async throws {
        let server = try await Shared.faults.get()
        for text in [
            "HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n\nok",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.1 200 OK\r\nContent-Length: 2,2\r\n\r\nok",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n",   // cut short in the head: partial (18)
        ] {
            try await Self.sideBySide(["-s", Self.raw(server, text)])
        }
    }

    /// `-i` writes every head as it arrived: bare LF lines, the server's version and reason,
    /// trailing spaces, interim heads, and with `-L` each response of the chain.
    @Test func headsAsReceived() async throws {
        let server = try await Shared.faults.get()
        let final = Self.raw(server, "HTTP/1.0 200 Fine  \nX-Odd:  spaced  \nContent-Length: 2\n\nok")
        let path = String(final.drop(while: { $0 != "/" }).dropFirst(2).drop(while: { $0 != "/" }))
        for text in [
            "HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b \n\nok",
            "HTTP/1.0 404 Not Here\r\nContent-Length: 2\r\n\r\nno",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        ] {
            try await Self.sideBySide(["-s", "-i", Self.raw(server, text)])
        }
        let redirect = Self.raw(server, "HTTP/1.1 302 Found\r\nLocation: \(path)\r\nContent-Length: 0\r\n\r\n", then: "keep")
        try await Self.sideBySide(["-s", "-i", "-L", redirect])
        try await Self.sideBySide(["-s", "-I", "-L", redirect])
    }

    /// Control characters in a reason phrase (ESC, the rest of C0 but tab, DEL) are shown
    /// as `\xHH` with `-i` and `-v`, where curl 7.88 writes them raw to the terminal: the
    /// same output as curl's otherwise. A file given with `-o` gets the bytes as they came.
    @Test func controlsInAReasonPhraseAreShownEscaped() async throws {
        let server = try await Shared.faults.get()
        let text = "HTTP/1.1 100 Go\u{1B}]0;title\u{7}\r\n\r\nHTTP/1.1 200 O\u{1B}[31mK\u{1}\tX\u{7F}\r\nContent-Length: 2\r\n\r\nok"
        let interim = Self.raw(server, text)
        let escaped = "HTTP/1.1 100 Go\\x1b]0;title\\x07\r\n\r\nHTTP/1.1 200 O\\x1b[31mK\\x01\tX\\x7f\r\nContent-Length: 2\r\n\r\n"
        let shown = try await Self.salvo("-s", "-i", interim)
        #expect(shown.status == 0)
        #expect(String(decoding: shown.stdout, as: UTF8.self) == escaped + "ok")
        let verbose = try await Self.salvo("-s", "-v", "-o", "/dev/null", interim)
        #expect(verbose.stderr.contains("< HTTP/1.1 200 O\\x1b[31mK\\x01\tX\\x7f\r\n"))
        #expect(!verbose.stderr.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x7F })
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ours = directory.appendingPathComponent("salvo").path
        #expect(try await Self.salvo("-s", "-i", "-o", ours, interim).status == 0)
        if let curl = Self.curlPath {
            let theirs = try await Self.run(curl, ["-s", "-i", interim])
            #expect(theirs.status == 0)
            // curl's output is the raw bytes; salvo's is the same with the controls escaped.
            var rawShown = ""
            for scalar in String(decoding: theirs.stdout, as: UTF8.self).unicodeScalars {
                let value = scalar.value
                let control = (value < 0x20 && value != 0x09 && value != 0x0D && value != 0x0A) || value == 0x7F
                rawShown += control ? "\\x" + (value < 0x10 ? "0" : "") + String(value, radix: 16) : String(scalar)
            }
            #expect(String(decoding: shown.stdout, as: UTF8.self) == rawShown)
            let file = directory.appendingPathComponent("curl").path
            #expect(try await Self.run(curl, ["-s", "-i", "-o", file, interim]).status == 0)
            #expect(FileManager.default.contents(atPath: ours) == FileManager.default.contents(atPath: file))
        }
        #expect(FileManager.default.contents(atPath: ours) == Data(text.utf8))
    }

    /// The request fields as curl sends them, for each way of giving a body: the same names
    /// in the same order (values of User-Agent aside), seen by the server.
    @Test func requestFieldsInCurlsOrder() async throws {
        guard let curl = Self.curlPath else {
            Issue.record("curl is not installed (scripts/setup installs it)")
            return
        }
        let server = try await Shared.faults.get()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("upload.txt").path
        let empty = directory.appendingPathComponent("empty.txt").path
        try Data("some bytes\n".utf8).write(to: URL(fileURLWithPath: file))
        try Data().write(to: URL(fileURLWithPath: empty))
        struct Seen: Decodable { var method: String; var headers: [[String]] }
        let url = server.url("/echo")
        for arguments in [
            ["-T", file], ["-T", empty], ["-d", "a=1"], ["-d", "a=1", "-H", "Content-Type: text/plain", "-H", "X-A: b"],
            ["-d", "", "-H", "Transfer-Encoding: chunked"], ["-H", "Accept: text/html", "-H", "Host: example.test"],
            ["-T", file, "-H", "Expect:"], ["-H", "Host:", "-H", "Accept;"], ["-H", "User-Agent:", "-H", "X-Empty;"],
        ] {
            func names(_ output: Data) throws -> [String] {
                try JSONDecoder().decode(Seen.self, from: output).headers.map { $0[0].lowercased() }
            }
            let theirs = try await Self.run(curl, ["-s"] + arguments + [url])
            let ours = try await Self.run(Self.salvoPath, ["get", "-s"] + arguments + [url])
            #expect(ours.status == theirs.status, "\(arguments)")
            #expect(try names(ours.stdout) == names(theirs.stdout), "\(arguments)")
        }
    }

    /// A redirect whose body would end only at the close is followed at once, even when the
    /// server keeps the connection open (it used to wait for the close).
    @Test func aRedirectWithoutLengthIsFollowedAtOnce() async throws {
        let server = try await Shared.faults.get()
        let moved = Self.raw(server, "HTTP/1.1 301 Moved\r\nLocation: /ok\r\nConnection: close\r\n\r\nsee /ok", then: "stall")
        try await Self.sideBySide(["-s", "-L", "-m", "10", moved])
        try await Self.sideBySide(["-s", "-i", "-L", "-m", "10", moved])
        // The same with bare LF line ends (curl 7.88 waits for the close here, until -m):
        // followed at once, the repaired head shown once, as it came.
        let head = "HTTP/1.1 302 OK swsclose\nLocation: /ok\nConnection: close\n\n"
        let bare = try await Self.salvo("-s", "-i", "-L", "-m", "10", Self.raw(server, head, then: "stall"))
        #expect(bare.status == 0)
        let text = String(decoding: bare.stdout, as: UTF8.self)
        #expect(text.hasPrefix(head) && text.hasSuffix("hello") && text.components(separatedBy: "302 OK").count == 2, "\(text)")
    }

    /// Past 16 KiB of chunk extensions on one line: exit 8 (curl 7.88 reads them all).
    @Test func endlessChunkExtensionsAreRefused() async throws {
        let server = try await Shared.faults.get()
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=" + String(repeating: "a", count: 30_000) + "\r\nok\r\n0\r\n\r\n"
        let run = try await Self.salvo("-s", "-m", "10", Self.raw(server, text))
        #expect(run.status == 8)
    }

    /// A server that answers a POST with a 307 and then closes the keep-alive connection
    /// without saying so: the replayed POST goes on a fresh connection, as curl sends it
    /// (it used to meet the closed one: exit 56).
    @Test func aPostNeverMeetsAConnectionTheServerClosed() async throws {
        let server = try await Shared.faults.get()
        for _ in 0..<5 {
            let moved = Self.raw(server, "HTTP/1.1 307 Temporary Redirect\r\nLocation: /echo-body\r\nContent-Length: 0\r\n\r\n")
            try await Self.sideBySide(["-s", "-L", "-m", "10", "-d", "posted", moved])
        }
    }

    /// `--resolve` sends a name to the address given, as curl; `-4`/`-6` pick the family.
    @Test func resolveAndAddressFamilies() async throws {
        let server = try await Shared.faults.get()
        try await Self.sideBySide(["-s", "--resolve", "api.test:\(server.port):127.0.0.1", "http://api.test:\(server.port)/ok"])
        try await Self.sideBySide(["-s", "--resolve", "*:\(server.port):127.0.0.1", "http://api.test:\(server.port)/ok"])
        try await Self.sideBySide(["-s", "--resolve", "api.test:*:127.0.0.1", "http://api.test:\(server.port)/ok"])   // 49: bad syntax
        try await Self.sideBySide(["-s", "-4", "http://localhost:\(server.port)/ok"])
        try await Self.sideBySide(["-s", "-6", "http://127.0.0.1:\(server.port)/ok"])
        try await Self.sideBySide(["-s", "-6", "-4", "http://127.0.0.1:\(server.port)/ok"])   // the last one counts
        try await Self.sideBySide(["-s", "-4", "-6", "http://127.0.0.1:\(server.port)/ok"])
    }

    /// `--resolve -host:port`, its own argument: curl's removal of an earlier entry, read as
    /// the option's value (not as an option). 127.0.0.2 has no server: an entry still there
    /// fails the request (7); removed, the name resolves as usual.
    @Test func resolveRemovalEntries() async throws {
        let server = try await Shared.faults.get()
        let url = "http://localhost:\(server.port)/ok"
        let add = ["--resolve", "localhost:\(server.port):127.0.0.2"]
        try await Self.sideBySide(["-s", "-4", "-m", "10"] + add + [url])   // 7: the entry is used
        try await Self.sideBySide(["-s", "-4", "-m", "10"] + add + ["--resolve", "-localhost:\(server.port)", url])
        try await Self.sideBySide(["-s", "-4", "-m", "10"] + add + ["--resolve", "-LOCALHOST:\(server.port):127.0.0.2", url])
        // Added again after its removal: used again.
        try await Self.sideBySide(["-s", "-4", "-m", "10"] + add + ["--resolve", "-localhost:\(server.port)"] + add + [url])
        // Removing what was never added changes nothing; another port's entry stays.
        try await Self.sideBySide(["-s", "-4", "-m", "10", "--resolve", "-localhost:\(server.port)", url])
        try await Self.sideBySide(["-s", "-4", "-m", "10"] + add + ["--resolve", "-localhost:1", url])
        let attached = try await Self.salvo("-s", "-4", "-m", "10", "--resolve", "localhost:\(server.port):127.0.0.2",
                                            "--resolve=-localhost:\(server.port)", url)
        #expect(attached.status == 0 && attached.stdout == Data("hello".utf8))
    }

    /// curl's cases 497 and 498: a head that keeps growing past the limit is a receive error
    /// (56) for both. (Salvo's limit is lower than curl's; this head is past both.)
    @Test func anOversizedHeadIsAReceiveError() async throws {
        let server = try await Shared.faults.get()
        try await Self.sideBySide(["-s", "-m", "10", "-o", "/dev/null", server.url("/many-headers?n=900&pad=400")])
        let ours = try await Self.salvo("-s", "-m", "10", "-o", "/dev/null", server.url("/many-headers?n=900&pad=400"))
        #expect(ours.status == 56)
    }

    /// Where Salvo is stricter than curl 7.88 on purpose: ambiguous framing is how responses
    /// are smuggled, so it is refused (RFC 9112 §6.3).
    @Test func stricterThanCurlOnAmbiguousFraming() async throws {
        let server = try await Shared.faults.get()
        let cases = [
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
            "HTTP/1.1 200 OK\r\nX-A : b\r\nContent-Length: 2\r\n\r\nok",
        ]
        for text in cases {
            let ours = try await Self.salvo("-s", "-o", "/dev/null", Self.raw(server, text))
            #expect(ours.status == 8, "\(text.debugDescription)")
        }
    }

    @Test func bodyHeadAndFail() async throws {
        let server = try await Shared.faults.get()
        let body = try await Self.salvo(server.url("/ok"))
        #expect(body.status == 0)
        #expect(String(decoding: body.stdout, as: UTF8.self) == "hello")
        let include = try await Self.salvo("-i", server.url("/ok"))
        let text = String(decoding: include.stdout, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.hasSuffix("\r\n\r\nhello"))
        let fail = try await Self.salvo("-f", server.url("/status?code=404"))
        #expect(fail.status == 22)
        #expect(fail.stdout.isEmpty)
        #expect(fail.stderr.contains("404"))
        let head = try await Self.salvo("-I", server.url("/head-cl"))
        #expect(head.status == 0)
        #expect(String(decoding: head.stdout, as: UTF8.self).contains("Content-Length: 1000"))
    }

    @Test func failuresPrintOneLine() async throws {
        let held = try RefusedPort()
        defer { withExtendedLifetime(held) {} }
        let port = held.port
        let refused = try await Self.salvo("http://127.0.0.1:\(port)/")
        #expect(refused.status == 7)
        #expect(refused.stderr.split(separator: "\n").count == 1)
        let malformed = try await Self.salvo("http://[::1/")
        #expect(malformed.status == 3)
        #expect(malformed.stderr.split(separator: "\n").count == 1)
        let silent = try await Self.salvo("-s", "http://127.0.0.1:\(port)/")
        #expect(silent.status == 7)
        #expect(silent.stderr.isEmpty)
        let shown = try await Self.salvo("-sS", "http://127.0.0.1:\(port)/")
        #expect(!shown.stderr.isEmpty)
    }

    @Test func timeouts() async throws {
        let server = try await Shared.faults.get()
        let started = Date()
        let stalled = try await Self.salvo("--max-time", "0.3", server.url("/stall"))
        #expect(stalled.status == 28)
        #expect(Date().timeIntervalSince(started) < 20, "bounded by --max-time, not by the server, which never answers")
    }

    @Test func postsDataAndFiles() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-cli-\(UUID().uuidString)")
        try Data("line1\nline2\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try await Self.salvo("-d", "a=1", "-d", "b=2", server.url("/echo")).status == 0)
        #expect(try await Self.salvo("-d", "@\(file.path)", server.url("/echo")).status == 0)
        #expect(try await Self.salvo("--data-binary", "@\(file.path)", server.url("/echo")).status == 0)
        #expect(try await Self.salvo("-X", "PUT", "-H", "X-Custom: yes", server.url("/echo")).status == 0)
        let log = try server.log().requests
        #expect(log.count == 4)
        #expect(log.map(\.method) == ["POST", "POST", "POST", "PUT"])
        #expect(log.map(\.bodyLength) == [7, 10, 12, 0])
        #expect(log[0].header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(log[3].header("X-Custom") == "yes")
    }

    @Test func outputFile() async throws {
        let server = try await Shared.faults.get()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-out-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await Self.salvo("-o", file.path, server.url("/big?n=100000"))
        #expect(run.status == 0)
        #expect(run.stdout.isEmpty)
        #expect(try Data(contentsOf: file).count == 100_000)
    }

    /// `-D FILE` gets every head byte for byte as curl writes it: interim heads, and with
    /// `-L` each head of the chain, each with its blank line; `-D -` puts them on stdout.
    @Test func dumpHeaderLikeCurl() async throws {
        guard let curl = Self.curlPath else {
            Issue.record("curl is not installed (scripts/setup installs it)")
            return
        }
        let server = try await Shared.faults.get()
        let final = Self.raw(server, "HTTP/1.1 200 OK\r\nX-A:  b \r\nContent-Length: 2\r\n\r\nok")
        let path = String(final.drop(while: { $0 != "/" }).dropFirst(2).drop(while: { $0 != "/" }))
        let redirect = Self.raw(server, "HTTP/1.1 302 Found\r\nLocation: \(path)\r\nContent-Length: 0\r\n\r\n", then: "keep")
        let directory = FileManager.default.temporaryDirectory
        let theirsFile = directory.appendingPathComponent("salvo-dump-curl-\(UUID().uuidString)")
        let oursFile = directory.appendingPathComponent("salvo-dump-salvo-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: theirsFile)
            try? FileManager.default.removeItem(at: oursFile)
        }
        let cases: [[String]] = [
            [final],
            [Self.raw(server, "HTTP/1.0 404 Not Here\nContent-Length: 2\n\nno")],
            [Self.raw(server, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")],
            [redirect],
            ["-L", redirect],
            ["-L", server.url("/chain?n=2")],
        ]
        for arguments in cases {
            let theirs = try await Self.run(curl, ["-s", "-o", "/dev/null", "-D", theirsFile.path] + arguments)
            let ours = try await Self.salvo(["-s", "-o", "/dev/null", "-D", oursFile.path] + arguments)
            #expect(ours.status == theirs.status, "\(arguments)")
            let expected = try Data(contentsOf: theirsFile)
            #expect(!expected.isEmpty)
            #expect(try Data(contentsOf: oursFile) == expected, "\(arguments): the dumped heads differ")
        }
        try await Self.sideBySide(["-s", "-D", "-", final])
        try await Self.sideBySide(["-s", "-L", "-D", "-", redirect])
    }

    /// `-w` prints curl's variables as curl does; the times only by their shape.
    @Test func writeOutLikeCurl() async throws {
        let server = try await Shared.faults.get()
        let format = "%{http_code} %{response_code} %{size_download} %{size_header} %{url_effective} %{num_redirects} [%{content_type}] %{exitcode} 100%%\\t%header{x-a}\\n"
        let typed = Self.raw(server, "HTTP/1.1 201 Made\r\nContent-Type: text/plain; charset=utf-8\r\nX-A: b\r\nContent-Length: 5\r\n\r\nhello")
        for arguments in [[typed], [server.url("/ok")], [server.url("/chain?n=3")], ["-L", server.url("/chain?n=3")],
                          ["-L", server.url("/status?code=404")], ["-m", "1", server.url("/stall-body")]] {
            try await Self.sideBySide(["-s", "-o", "/dev/null", "-w", format] + arguments)
        }
        // A format from a file, from stdin, and %{stderr}.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-format-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("code=%{http_code}\n".utf8).write(to: file)
        let fromFile = try await Self.salvo("-s", "-o", "/dev/null", "-w", "@" + file.path, server.url("/ok"))
        #expect(String(decoding: fromFile.stdout, as: UTF8.self) == "code=200\n")
        let fromStdin = try await runChild(Self.salvoPath, ["get", "-s", "-o", "/dev/null", "-w", "@-", server.url("/ok")],
                                           input: Data("%{size_download}".utf8))
        #expect(String(decoding: fromStdin.stdout, as: UTF8.self) == "5")
        let split = try await Self.salvo("-s", "-o", "/dev/null", "-w", "a%{stderr}b%{stdout}c", server.url("/ok"))
        #expect(String(decoding: split.stdout, as: UTF8.self) == "ac")
        #expect(split.stderr == "b")

        // Times: seconds with six decimals, each phase ending no earlier than the one before.
        let times = try await Self.salvo("-s", "-o", "/dev/null", "-w",
                                         "%{time_namelookup} %{time_connect} %{time_appconnect} %{time_pretransfer} %{time_starttransfer} %{time_total}",
                                         server.url("/ok"))
        let fields = String(decoding: times.stdout, as: UTF8.self).split(separator: " ").map(String.init)
        #expect(fields.count == 6)
        for field in fields {
            let parts = field.split(separator: ".", omittingEmptySubsequences: false)
            #expect(parts.count == 2 && parts[1].count == 6 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) },
                    "\(field) is not a time as curl prints it")
        }
        let values = fields.compactMap(Double.init)
        if values.count == 6 {
            #expect(values[0] >= 0 && values[1] >= values[0] && values[4] >= values[1] && values[5] >= values[4])
            #expect(values[2] == 0, "no TLS: no app connect time")
        }

        // %{json}: one object of the variables.
        let json = try await Self.salvo("-s", "-o", "/dev/null", "-w", "%{json}", "-L", server.url("/chain?n=2"))
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        #expect(object?["http_code"] as? Int == 200)
        #expect(object?["num_redirects"] as? Int == 2)
        #expect(object?["size_download"] as? Int != nil)
        #expect(object?["time_total"] as? Double != nil)
        let headers = try await Self.salvo("-s", "-o", "/dev/null", "-w", "%{header_json}", typed)
        let fieldsObject = try JSONSerialization.jsonObject(with: headers.stdout) as? [String: [String]]
        #expect(fieldsObject?["x-a"] == ["b"])

        // An unknown variable: a warning on stderr (even with -s), nothing in the output.
        let unknown = try await Self.salvo("-s", "-o", "/dev/null", "-w", "[%{no_such_thing}]", server.url("/ok"))
        #expect(unknown.status == 0)
        #expect(String(decoding: unknown.stdout, as: UTF8.self) == "[]")
        #expect(unknown.stderr.contains("unknown --write-out variable: 'no_such_thing'"))
    }
}
