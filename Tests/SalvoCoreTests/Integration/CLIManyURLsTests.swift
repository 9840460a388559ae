import SalvoTestSupport
import Foundation
import Testing

/// `salvo get URL1 URL2 …`: curl's exit-code rules, one connection reused from URL to URL,
/// the same data sent to each, `-Z` fetching them at once.
@Suite struct CLIManyURLsTests {
    /// One after another the exit code is the last transfer's (an earlier failure shows only
    /// in its message); --fail-early stops at the first failure with its code; with -Z it is
    /// the last failure's.
    @Test func exitCodesLikeCurl() async throws {
        let server = try await Shared.faults.get()
        let ok = server.url("/ok")
        let missing = server.url("/status?code=404")
        // Port 1 is privileged: no test's server can take it, as one may take a port found free.
        let refused = "http://127.0.0.1:1/"
        let cases: [(arguments: [String], status: Int32)] = [
            (["-s", "-f", missing, ok], 0),
            (["-s", "-f", ok, missing], 22),
            (["-s", refused, ok], 0),
            (["-s", "-f", missing, refused], 7),
            (["-s", ok, "htp://x"], 1),
            (["-s", "-f", "--fail-early", missing, ok], 22),
            (["-s", "-f", "-Z", ok, missing], 22),
            (["-s", "-f", "-Z", missing, ok], 22),
            (["-s", "-Z", ok, ok], 0),
        ]
        for (arguments, status) in cases {
            try await CLITests.sideBySide(arguments)
            let ours = try await CLITests.salvo(arguments)
            #expect(ours.status == status, "\(arguments)")
        }
        // Messages for each failure, not only the last.
        let both = try await CLITests.salvo(["-S", "-s", "-f", missing, refused, ok])
        #expect(both.status == 0)
        #expect(both.stderr.contains("(22)") && both.stderr.contains("(7)"), "\(both.stderr)")
        // No URL at all: a usage error.
        #expect(try await CLITests.salvo(["-s"]).status == 2)
    }

    /// URLs to one server go over one connection, one after another; with -Z each transfer
    /// in flight has its own (up to --parallel-max).
    @Test func oneConnectionUnlessParallel() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let slow = server.url("/slow-head?ms=300")

        let serial = try await CLITests.salvo(["-s", slow, slow, slow])
        #expect(serial.status == 0 && String(decoding: serial.stdout, as: UTF8.self) == "okokok")
        var log = try server.log()
        #expect(log.requests.count == 3)
        #expect(log.connections == 1)
        if let curl = CLITests.curlPath {
            try server.resetLog()
            _ = try await CLITests.run(curl, ["-s", slow, slow, slow])
            #expect(try server.log().connections == 1, "curl")
        }

        try server.resetLog()
        let parallel = try await CLITests.salvo(["-s", "-Z", slow, slow, slow])
        #expect(parallel.status == 0 && parallel.stdout.count == 6)
        log = try server.log()
        #expect(log.requests.count == 3)
        #expect(log.connections == 3, "three transfers at once, each on its own connection")

        try server.resetLog()
        _ = try await CLITests.salvo(["-s", "-Z", "--parallel-max", "1", slow, slow, slow])
        #expect(try server.log().connections == 1, "one at a time")
    }

    /// With -Z, each transfer's head reaches -D's file and stdout whole, never mixed with
    /// another's (the transfers run at once; their heads arrive interleaved).
    @Test func parallelHeadsStayWhole() async throws {
        let server = try await Shared.faults.get()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-heads-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let urls = (0..<60).map { server.url("/many-headers?n=30&i=\($0)") }
        let run = try await CLITests.salvo(["-s", "-Z", "-i", "-D", file, "-o", "/dev/null"] + urls)
        #expect(run.status == 0)
        func checkWhole(_ text: String, _ what: String) {
            let heads = text.components(separatedBy: "HTTP/1.1 200 OK\r\n").dropFirst()
            #expect(heads.count >= 59, "\(what): \(heads.count) heads")
            for head in heads {
                let numbered = head.components(separatedBy: "\r\n").filter { $0.hasPrefix("X-Header-") }
                #expect(numbered == (0..<30).map { "X-Header-\($0): value-\($0)" }, "\(what): a head mixed with another")
            }
        }
        checkWhole(try String(contentsOfFile: file, encoding: .utf8), "-D")
        checkWhole(String(decoding: run.stdout, as: UTF8.self), "-i")
    }

    /// The data goes to every URL (standard input read once); -T pairs with the first URL
    /// only; items join in the order given; -G puts them in each URL's query.
    @Test func dataForEachURLLikeCurl() async throws {
        let server = try await Shared.faults.get()
        let echo = server.url("/echo-body")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-many-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data("from a file\nsecond line ü&".utf8).write(to: URL(fileURLWithPath: file))

        for arguments in [
            "-d x=1 '\(echo)' '\(echo)'",
            "--data-binary @- '\(echo)' '\(echo)'",
            "--data-binary @'\(file)' '\(echo)' '\(echo)'",
            "-T - '\(echo)' '\(echo)'",
            "-T '\(file)' '\(echo)' '\(echo)'",
            "-d a=1 --data-binary b=2 -d c=3 --data-urlencode 'd=e f' '\(echo)'",
            "--data-urlencode 'q=a b&c~ü*' --data-urlencode @'\(file)' --data-urlencode '=x y' --data-urlencode n@'\(file)' --data-urlencode plain '\(echo)'",
            "-d @'\(file)' --data-raw @'\(file)' --data-ascii 'z' '\(echo)'",
            "-G -d a=1 --data-urlencode 'b=x y' '\(server.url("/echo?z=0"))'",
            "-G -I -d a=1 '\(server.url("/ok"))'",
        ] {
            let run = try await CLIBytesTests.both("-s \(arguments)", input: Data("standard input".utf8))
            #expect(run.salvo.status == 0, "\(arguments)")
            guard let curl = run.curl else { continue }
            #expect(curl.status == run.salvo.status, "\(arguments)")
            // /echo describes the request: compare it without the User-Agent and connection ids.
            #expect(Self.comparable(run.salvo.stdout) == Self.comparable(curl.stdout),
                    "\(arguments): \(String(decoding: run.salvo.stdout, as: UTF8.self)) vs curl's \(String(decoding: curl.stdout, as: UTF8.self))")
        }
    }

    /// /echo's JSON without what differs between two clients by nature; other bodies as is.
    static func comparable(_ output: Data) -> String {
        let text = String(decoding: output, as: UTF8.self)
        guard text.hasPrefix("{\"method\"") else { return text }
        return text.replacingOccurrences(of: #"\["User-Agent", "[^"]*"\], "#, with: "", options: .regularExpression)
            .replacingOccurrences(of: #""conn": [0-9]+"#, with: "", options: .regularExpression)
    }

    /// What must be held for several URLs (standard input sent to each) is bounded like -d.
    @Test func heldStandardInputIsBounded() async throws {
        let server = try await Shared.faults.get()
        let echo = server.url("/echo-body")
        let run = try await CLISafetyTests.shell(
            "exec '\(CLITests.salvoPath)' get --held-data-limit 10 --data-binary @- '\(echo)' '\(echo)' 2>&1",
            input: Data("more than ten bytes".utf8))
        #expect(run.status == 2)
        #expect(String(decoding: run.stdout, as: UTF8.self).contains("more than 10 bytes"))
    }

    /// The option table `salvo get` reads its command line's order with knows every option
    /// that takes a value, and no flag.
    @Test func theOptionOrderTableMatchesTheOptions() async throws {
        let help = try await CLITests.salvo(["--help"])
        var withValue: Set<String> = []
        var flags: Set<String> = []
        for line in String(decoding: help.stdout, as: UTF8.self).split(separator: "\n") {
            // An option's own line (continuation lines are indented further).
            guard line.hasPrefix("  -") else { continue }
            let words = line.split(separator: " ")
            let names = words.prefix { $0.hasPrefix("-") }.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) }
            let takesValue = words.count > names.count && words[names.count].hasPrefix("<")
            for name in names where name != "--help" && name != "-h" {
                if takesValue { withValue.insert(name) } else { flags.insert(name) }
            }
        }
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../Sources/salvo/OptionOrder.swift").standardized, encoding: .utf8)
        func quoted(in section: String) -> Set<String> {
            let start = source.range(of: section)!.upperBound
            let end = source[start...].range(of: "]")!.lowerBound
            let pattern = try! NSRegularExpression(pattern: #""([a-z0-9.-]+)""#)
            let text = String(source[start..<end])
            return Set(pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
                String(text[Range($0.range(at: 1), in: text)!])
            })
        }
        let long = quoted(in: "static let longWithValue: Set<String> = [")
        let shortLine = source.components(separatedBy: "\n").first { $0.contains("static let shortWithValue") }!
        let short = Set((shortLine.split(separator: "\"")[1]).map { "-\($0)" })
        let tabled = Set(long.map { "--" + $0 }).union(short)
        #expect(withValue.subtracting(tabled).isEmpty, "options with a value missing from the table: \(withValue.subtracting(tabled))")
        #expect(tabled.intersection(flags).isEmpty, "flags in the table: \(tabled.intersection(flags))")
        #expect(withValue.count > 20 && flags.count > 20, "the help was read: \(withValue.count) options, \(flags.count) flags")
    }
}
