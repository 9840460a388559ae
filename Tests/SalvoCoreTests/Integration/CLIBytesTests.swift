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
}
