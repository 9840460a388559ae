import SalvoTestSupport
import Foundation
import Testing

/// curl and salvo run with the same arguments, each in an empty directory of its own, and
/// what each left there compared: the same exit status, the same files with the same bytes.
struct SideBySideDirectories {
    let curl: String
    let root: URL
    var theirs: URL { self.root.appendingPathComponent("curl") }
    var ours: URL { self.root.appendingPathComponent("salvo") }
    private var manager: FileManager { .default }

    /// Nil (and the test told) when curl is not installed.
    init?(sourceLocation: SourceLocation = #_sourceLocation) {
        guard let curl = CLITests.curlPath else {
            Issue.record("curl is not installed (scripts/setup installs it)", sourceLocation: sourceLocation)
            return nil
        }
        self.curl = curl
        self.root = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-side-\(UUID().uuidString)")
    }

    func remove() {
        try? self.manager.removeItem(at: self.root)
    }

    /// Every file under `directory` (relative path, bytes).
    func files(_ directory: URL) -> [String: Data] {
        var found: [String: Data] = [:]
        for case let path as String in self.manager.enumerator(atPath: directory.path) ?? FileManager.DirectoryEnumerator() {
            let url = directory.appendingPathComponent(path)
            var isDirectory: ObjCBool = false
            if self.manager.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                found[path] = try? Data(contentsOf: url)
            }
        }
        return found
    }

    /// Makes both directories afresh (unless `keep`) and runs `prepare` in each first.
    func reset(keep: Bool = false, _ prepare: (URL) throws -> Void = { _ in }) throws {
        for directory in [self.theirs, self.ours] {
            if !keep { try? self.manager.removeItem(at: directory) }
            try self.manager.createDirectory(at: directory, withIntermediateDirectories: true)
            try prepare(directory)
        }
    }

    /// Runs both tools with `-s` and `arguments`, each in its directory (emptied first
    /// unless `keep`); checks status, standard output and files; returns curl's files.
    @discardableResult
    func compare(_ arguments: [String], keep: Bool = false, input: Data = Data(), expectedStatus: Int32? = nil,
                 sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Data] {
        try self.reset(keep: keep)
        let theirs = try await runChild(self.curl, ["-s"] + arguments, input: input, timeLimit: 20, directory: self.theirs)
        let ours = try await runChild(CLITests.salvoPath, ["get", "-s"] + arguments, input: input, timeLimit: 20, directory: self.ours)
        #expect(ours.status == theirs.status, "\(arguments): salvo \(ours.status), curl \(theirs.status)", sourceLocation: sourceLocation)
        #expect(ours.stdout == theirs.stdout, "\(arguments): stdout \(ours.output.debugDescription), curl's \(theirs.output.debugDescription)",
                sourceLocation: sourceLocation)
        if let expectedStatus {
            #expect(theirs.status == expectedStatus, "\(arguments): curl \(theirs.status)", sourceLocation: sourceLocation)
        }
        let expected = self.files(self.theirs)
        #expect(self.files(self.ours) == expected, "\(arguments): files differ: \(self.files(self.ours).keys.sorted()) vs \(expected.keys.sorted())",
                sourceLocation: sourceLocation)
        return expected
    }
}

/// Where bodies go: -O, -J, --output-dir, --create-dirs, and with several URLs each -o and -O
/// taking the next URL, side by side with curl.
@Suite struct CLIOutputFilesTests {
    @Test func remoteNamesLikeCurl() async throws {
        guard let side = SideBySideDirectories() else { return }
        defer { side.remove() }
        let server = try await Shared.faults.get()

        // The URL's last segment, query dropped.
        #expect(try await side.compare(["-O", server.url("/dir/file.txt?x=1")]).keys.sorted() == ["file.txt"])
        // Percent-encoding kept as is.
        #expect(try await side.compare(["-O", server.url("/dir/a%20b.txt")]).keys.sorted() == ["a%20b.txt"])
        // No name: exit 23, nothing written.
        try await side.compare(["-O", server.url("/dir/")], expectedStatus: 23)
        try await side.compare(["-O", server.url("")], expectedStatus: 23)

        // -J: the base name of the server's filename, never a directory above.
        let evil = CLITests.raw(server, "HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"../evil.txt\"\r\nContent-Length: 2\r\n\r\nok")
        #expect(try await side.compare(["-O", "-J", evil]).keys.sorted() == ["evil.txt"])
        #expect(!FileManager.default.fileExists(atPath: side.root.appendingPathComponent("evil.txt").path))
        // ... and never replacing a file that is there: exit 23, the file as it was.
        try side.reset { try Data("mine".utf8).write(to: $0.appendingPathComponent("evil.txt")) }
        let kept = try await side.compare(["-O", "-J", evil], keep: true, expectedStatus: 23)
        #expect(kept["evil.txt"] == Data("mine".utf8))
        // No Content-Disposition: the URL's name.
        let plain = CLITests.raw(server, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(try await side.compare(["-O", "-J", plain]).keys.sorted() == ["raw"])
        // -J with -i: a usage error.
        try await side.compare(["-O", "-J", "-i", evil], expectedStatus: 2)

        // --output-dir: the directory must be there, unless --create-dirs.
        try await side.compare(["--output-dir", "out", "-O", server.url("/ok")], expectedStatus: 23)
        #expect(try await side.compare(["--create-dirs", "--output-dir", "out/x", "-O", server.url("/ok")]).keys.sorted() == ["out/x/ok"])
        try side.reset { try FileManager.default.createDirectory(at: $0.appendingPathComponent("out"), withIntermediateDirectories: true) }
        #expect(try await side.compare(["--output-dir", "out", "-O", server.url("/ok")], keep: true).keys.sorted() == ["out/ok"])
        // --create-dirs with -o, mode 0750 as curl makes them.
        try await side.compare(["-o", "a/b/c.txt", server.url("/ok")], expectedStatus: 23)
        #expect(try await side.compare(["--create-dirs", "-o", "a/b/c.txt", server.url("/ok")]).keys.sorted() == ["a/b/c.txt"])
        for directory in [side.theirs, side.ours] {
            let mode = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("a/b").path)[.posixPermissions] as? Int
            #expect(mode == 0o750, "\(directory.lastPathComponent): mode \(String(mode ?? 0, radix: 8))")
        }
    }

    /// Several URLs: each -o and -O takes the next URL in the order typed, wherever it
    /// stands; the rest go to stdout, or to their names with --remote-name-all; an output
    /// option with no URL left is ignored.
    @Test func eachOutputTakesTheNextURL() async throws {
        guard let side = SideBySideDirectories() else { return }
        defer { side.remove() }
        let server = try await Shared.faults.get()
        let a = server.url("/dir/a.txt")
        let b = server.url("/echo-body")
        let c = server.url("/ok")

        #expect(try await side.compare(["-o", "one", a, b]).keys.sorted() == ["one"])
        #expect(try await side.compare(["-O", "-o", "two", a, c]).keys.sorted() == ["a.txt", "two"])
        #expect(try await side.compare(["-o", "two", "-O", a, c]).keys.sorted() == ["ok", "two"])
        #expect(try await side.compare([a, "-o", "first", c, "-O"]).keys.sorted() == ["first", "ok"])
        #expect(try await side.compare(["-sLO", a, c]).keys.sorted() == ["a.txt"])
        #expect(try await side.compare(["--remote-name-all", a, c]).keys.sorted() == ["a.txt", "ok"])
        #expect(try await side.compare(["--remote-name-all", "-o", "x", a, c]).keys.sorted() == ["ok", "x"])
        #expect(try await side.compare(["-o", "x", "-o", "y", a]).keys.sorted() == ["x"])
        // A failing transfer leaves no file and the next goes on.
        #expect(try await side.compare(["-f", "-o", "bad", "-o", "good", server.url("/status?code=404"), c]).keys.sorted() == ["good"])
        // --output-dir for each of them.
        try side.reset { try FileManager.default.createDirectory(at: $0.appendingPathComponent("d"), withIntermediateDirectories: true) }
        #expect(try await side.compare(["--output-dir", "d", "-O", "-o", "n", a, c], keep: true).keys.sorted() == ["d/a.txt", "d/n"])
    }

    /// -D collects every transfer's head in one file, -i shows each before its body, -w
    /// prints its line after each transfer.
    @Test func headsAndWriteOutForEachURL() async throws {
        guard let side = SideBySideDirectories() else { return }
        defer { side.remove() }
        let server = try await Shared.faults.get()
        let ok = server.url("/ok")
        let missing = server.url("/status?code=404")
        let dumped = try await side.compare(["-D", "heads", "-o", "/dev/null", "-o", "/dev/null", ok, missing])
        #expect(String(decoding: dumped["heads"] ?? Data(), as: UTF8.self).components(separatedBy: "HTTP/1.1 ").count == 3)
        try await side.compare(["-i", ok, missing])
        try await side.compare(["-w", "%{http_code} %{url_effective} %{exitcode}\\n", "-f", ok, missing, ok])
    }

    /// -J prefers RFC 6266's encoded `filename*` to `filename` (curl 7.88 reads `filename`
    /// only: a deliberate difference), still keeping only its base name.
    @Test func remoteHeaderNameReadsTheEncodedFilename() async throws {
        let server = try await Shared.faults.get()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-j-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cases: [(disposition: String, name: String)] = [
            ("attachment; filename=\"plain.txt\"; filename*=UTF-8''na%C3%AFve%20file.txt", "naïve file.txt"),
            ("attachment; filename*=iso-8859-1'en'caf%E9.txt", "café.txt"),
            ("attachment; filename*=UTF-8''..%2F..%2Fup.txt", "up.txt"),
            // A charset other than those two, bytes that are not UTF-8, a broken escape:
            // the plain name.
            ("attachment; filename*=KOI8-R''x.txt; filename=fallback.txt", "fallback.txt"),
            ("attachment; filename*=UTF-8''%FF.txt; filename=fallback.txt", "fallback.txt"),
            ("attachment; filename*=UTF-8''%G1.txt; filename=fallback.txt", "fallback.txt"),
        ]
        for (disposition, name) in cases {
            try? FileManager.default.removeItem(at: directory)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let url = CLITests.raw(server, "HTTP/1.1 200 OK\r\nContent-Disposition: \(disposition)\r\nContent-Length: 2\r\n\r\nok")
            let run = try await runChild(CLITests.salvoPath, ["get", "-s", "-O", "-J", url], timeLimit: 20, directory: directory)
            #expect(run.status == 0, "\(disposition)")
            let written = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(written == [name], "\(disposition): \(written)")
        }
    }
}
