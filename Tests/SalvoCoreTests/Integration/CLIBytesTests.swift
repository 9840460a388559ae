import SalvoTestSupport
import Foundation
import Testing
@testable import SalvoCore

/// Every argument keeps its bytes, UTF-8 or not, as curl sends them: credentials (`-u`,
/// `-U`, a proxy's and a URL's userinfo) and bodies (`-d`, `--data-binary`).
@Suite(.serialized) struct CLIBytesTests {
    typealias Run = CLISafetyTests.Run

    static func shell(_ command: String, input: Data = Data()) async throws -> Run {
        try await CLISafetyTests.shell(command, input: input)
    }

    static func both(_ arguments: String, input: Data = Data()) async throws -> (salvo: Run, curl: Run?) {
        try await CLISafetyTests.both(arguments, input: input)
    }

    /// `u:p` then the byte 0xE4 (Latin-1 "ä"), which is not UTF-8 on its own: curl's
    /// `Basic dTpw5A==`, never the U+FFFD of a repaired string (`dTpw77+9`).
    @Test func credentialsKeepTheirBytes() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let port = server.port
        let cases: [(arguments: String, field: String)] = [
            ("-s -u \"$(printf 'u:p\\344')\" '\(server.url("/echo"))'", "authorization"),
            ("-s \"$(printf 'http://u:p\\344@127.0.0.1:\(port)/echo')\"", "authorization"),
            // A proxy the fault server plays: it logs the request whatever it answers.
            ("-s -x \"$(printf 'http://u:p\\344@127.0.0.1:\(port)')\" http://example.test/echo", "proxy-authorization"),
            ("-s -U \"$(printf 'u:p\\344')\" -x 127.0.0.1:\(port) http://example.test/echo", "proxy-authorization"),
        ]
        for (arguments, field) in cases {
            try server.resetLog()
            let run = try await Self.both(arguments)
            #expect(run.salvo.status == 0, "\(arguments)")
            let requests = try server.log().requests
            #expect(requests.first?.header(field) == "Basic dTpw5A==", "\(arguments)")
            if run.curl != nil {
                #expect(requests.count == 2, "\(arguments)")
                #expect(requests.last?.header(field) == requests.first?.header(field), "curl: \(arguments)")
            }
        }
    }

    /// A proxy variable's userinfo keeps its bytes too (the environment is bytes, like argv).
    @Test func aProxyVariableKeepsItsBytes() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let variable = "http_proxy=\"$(printf 'http://u:p\\344@127.0.0.1:\(server.port)')\""
        let salvo = try await CLISafetyTests.shell("\(variable) exec '\(CLITests.salvoPath)' get -s http://example.test/echo")
        #expect(salvo.status == 0)
        let requests = try server.log().requests
        #expect(requests.first?.header("proxy-authorization") == "Basic dTpw5A==")
        if let curl = CLITests.curlPath {
            try server.resetLog()
            _ = try await CLISafetyTests.shell("\(variable) exec '\(curl)' -s http://example.test/echo")
            #expect(try server.log().requests.first?.header("proxy-authorization") == "Basic dTpw5A==", "curl's")
        }
    }

    /// `--data-binary` sends its bytes as is (two bytes, not six of U+FFFD's UTF-8), and `-d`
    /// its bytes joined by `&`, as curl does.
    @Test func bodiesKeepTheirBytes() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let cases: [(arguments: String, body: [UInt8])] = [
            ("--data-binary \"$(printf '\\344\\377')\"", [0xE4, 0xFF]),
            ("-d \"$(printf 'a\\344')\" -d \"$(printf 'b\\377')\"", [0x61, 0xE4, 0x26, 0x62, 0xFF]),
            ("-d \"$(printf 'a\\344')\" --data-binary \"$(printf '\\377')\"", [0x61, 0xE4, 0x26, 0xFF]),
        ]
        for (arguments, body) in cases {
            let run = try await Self.both("-s \(arguments) '\(server.url("/echo-body"))'")
            #expect(run.salvo.status == 0, "\(arguments)")
            #expect(Array(run.salvo.stdout) == body, "\(arguments)")
            if let curl = run.curl { #expect(curl.stdout == run.salvo.stdout, "curl: \(arguments)") }
        }
        // The spellings curl does not read (--option=value), salvo's alone.
        let attached = try await Self.shell("exec '\(CLITests.salvoPath)' get -s --data-binary=\"$(printf '\\344\\377')\" '\(server.url("/echo-body"))'")
        #expect(Array(attached.stdout) == [0xE4, 0xFF])
        try server.resetLog()
        _ = try await Self.shell("exec '\(CLITests.salvoPath)' get -s --user=\"$(printf 'u:p\\344')\" '\(server.url("/echo"))'")
        #expect(try server.log().requests.first?.header("authorization") == "Basic dTpw5A==")
    }

    /// A data file's name keeps its bytes too: a name that is not UTF-8 is opened as typed.
    @Test func dataFileNamesKeepTheirBytes() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-names-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let made = try await Self.shell("printf 'a=1' > '\(directory)'/\"$(printf 'f\\344')\"")
        #expect(made.status == 0)
        for option in ["-d", "--data-binary", "--data-urlencode"] {
            let run = try await Self.both("-s \(option) @'\(directory)'/\"$(printf 'f\\344')\" '\(server.url("/echo-body"))'")
            #expect(run.salvo.status == 0, "\(option)")
            #expect(!run.salvo.stdout.isEmpty, "\(option): the file was read")
            if let curl = run.curl { #expect(curl.stdout == run.salvo.stdout, "curl: \(option)") }
        }
    }

    /// `--data-binary @-` streams standard input as it is read, chunked (curl holds all of it
    /// first: a deliberate difference), so 64 MiB from a pipe go through a process whose
    /// peak resident memory stays below the body's size; a regular file goes with its length.
    @Test(.timeLimit(.minutes(1))) func dataBinaryStreamsInBoundedMemory() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let size = 64 << 20
        let measures = FileManager.default.isExecutableFile(atPath: "/usr/bin/time")
        let peakFile = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-peak-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: peakFile) }
        let timer = measures ? "/usr/bin/time -f %M -o '\(peakFile)' " : ""
        let run = try await Self.shell(
            "head -c \(size) /dev/zero | \(timer)'\(CLITests.salvoPath)' get -s --data-binary @- '\(server.url("/echo"))'")
        #expect(run.status == 0)
        let echoed = try JSONDecoder().decode(FaultServerLog.Request.self, from: run.stdout)
        #expect(echoed.bodyLength == size)
        #expect(echoed.header("transfer-encoding") == "chunked")
        #expect(echoed.header("content-length") == nil)
        // Not under a sanitizer (`make test-asan`): its shadow memory and quarantine make the
        // process's peak (240 MB seen) say nothing of what Salvo holds.
        if measures, ProcessInfo.processInfo.environment["SALVO_SANITIZED"] == nil {
            // Kilobytes; a debug build idles near 30 MB, and holding the body would add 64 MiB.
            let peak = try #require(Int(try String(contentsOfFile: peakFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(peak < 56 * 1024, "peak resident memory \(peak) kB for a \(size)-byte body")
        }

        // A regular file: streamed from disk with its length, its bytes exactly, with text around it.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-data-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let contents = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        try contents.write(to: URL(fileURLWithPath: file))
        let both = try await Self.both("-s -d a --data-binary @'\(file)' '\(server.url("/echo-body"))'")
        #expect(both.salvo.stdout == Data("a&".utf8) + contents)
        if let curl = both.curl { #expect(curl.stdout == both.salvo.stdout) }
        try server.resetLog()
        _ = try await Self.both("-s -d a --data-binary @'\(file)' '\(server.url("/echo"))'")
        let requests = try server.log().requests
        #expect(requests.first?.header("content-length") == "\(contents.count + 2)")
        if both.curl != nil { #expect(requests.last?.header("content-length") == requests.first?.header("content-length")) }
    }

    /// What must be held in memory (`-d @file` drops newlines) is bounded: past the bound
    /// (lowered here) the command fails before sending anything, exit 2, saying why; at the
    /// bound it goes as curl sends it. `-d @/dev/zero` ends the same way instead of growing
    /// until the process dies.
    @Test(.timeLimit(.minutes(1))) func heldDataIsBounded() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-held-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(repeating: UInt8(ascii: "x"), count: 100).write(to: URL(fileURLWithPath: file))

        let past = try await Self.shell("exec '\(CLITests.salvoPath)' get --held-data-limit 99 -d @'\(file)' '\(server.url("/echo"))' 2>&1")
        #expect(past.status == 2)
        let message = String(decoding: past.stdout, as: UTF8.self)
        #expect(message.contains("-d @\(file): more than 99 bytes of data to hold in memory"), "\(message)")
        #expect(try server.log().requests.isEmpty, "nothing sent")

        let at = try await Self.shell("exec '\(CLITests.salvoPath)' get -s --held-data-limit 100 -d @'\(file)' '\(server.url("/echo-body"))'")
        #expect(at.status == 0)
        #expect(at.stdout == Data(repeating: UInt8(ascii: "x"), count: 100))

        let endless = try await Self.shell("exec '\(CLITests.salvoPath)' get --held-data-limit 1048576 -d @/dev/zero '\(server.url("/echo"))' 2>&1")
        #expect(endless.status == 2)
        #expect(String(decoding: endless.stdout, as: UTF8.self).contains("more than 1048576 bytes"))
        // Standard input too, and the items together count.
        let piped = try await Self.shell("head -c 60 /dev/zero | exec '\(CLITests.salvoPath)' get -s --held-data-limit 100 -d @- -d @'\(file)' '\(server.url("/echo"))'")
        #expect(piped.status == 2)
    }
}
