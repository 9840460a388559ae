import SalvoTestSupport
import Foundation
import Testing

/// curl's ways of writing a command line, and more of its output, side by side with curl:
/// values joined to their letters, values that start with a dash, -T per URL, trailers with
/// -i and -D, and the write-out variables about connections and responses.
@Suite struct CLICurlSpellingTests {
    @Test func spellingsLikeCurl() async throws {
        guard let side = SideBySideDirectories() else { return }
        defer { side.remove() }
        let server = try await Shared.faults.get()
        let ok = server.url("/ok")
        let echo = server.url("/echo-body")

        #expect(try await side.compare(["-oout", ok]).keys.sorted() == ["out"])
        #expect(try await side.compare(["-sLoout", ok]).keys.sorted() == ["out"])
        // curl's -o=x names a file "=x".
        #expect(try await side.compare(["-o=x", ok]).keys.sorted() == ["=x"])
        // A value that starts with a dash is the value.
        try await side.compare(["-d", "-x", echo])
        try await side.compare(["-d-y", "--data-binary", "-z", echo])
        try await side.compare(["-HX-A: b", "-d", "a", echo])
        // An empty value is a value, not a missing one.
        try await side.compare(["--proxy", "", ok])
        try await side.compare(["--noproxy", "", ok])
        try await side.compare(["-o", "", ok], expectedStatus: 2)
        // A missing value: a usage error.
        try await side.compare([ok, "-o"], expectedStatus: 2)
        // Said even with -s, as curl says it.
        let badly = try await CLITests.salvo(["-s", "-o", "", ok])
        #expect(badly.status == 2 && badly.stderr.contains("option -o: is badly used here"))
        // A cluster with something other than letters is not an option curl knows, and "-"
        // is not a URL: usage errors, nothing fetched.
        try await side.compare(["-s-", "-o", "ff", ok], expectedStatus: 2)
        try await side.compare(["-", ok], expectedStatus: 2)
        try await side.compare(["-Z", "--parallel-max", "-3", ok, ok], expectedStatus: 2)
        // A -O that cannot name its file stops the run before any transfer.
        try await side.compare(["-O", server.url("/"), "-O", server.url("/ok")], expectedStatus: 23)
    }

    /// Each -T takes the next URL, like -o.
    @Test func eachUploadTakesTheNextURL() async throws {
        guard let side = SideBySideDirectories() else { return }
        defer { side.remove() }
        let server = try await FaultServer.start()
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-up-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data("uploaded\n".utf8).write(to: URL(fileURLWithPath: file))
        let echo = server.url("/echo-body")
        try await side.compare(["-T", file, echo, "-T", file, echo, echo])
        let requests = try server.log().requests
        #expect(requests.map(\.method) == ["PUT", "PUT", "GET", "PUT", "PUT", "GET"], "curl's three, then salvo's")
    }

    /// A chunked body's trailer fields follow the body with -i, and the head in -D's file.
    @Test func trailersLikeCurl() async throws {
        guard let side = SideBySideDirectories() else { return }
        defer { side.remove() }
        let server = try await Shared.faults.get()
        let dumped = try await side.compare(["-i", "-D", "heads", server.url("/chunked")])
        #expect(String(decoding: dumped["heads"] ?? Data(), as: UTF8.self).hasSuffix("X-Trailer: yes\r\n"))
    }

    /// Variables about the connection and the response, compared with curl's where the two
    /// must agree (the local port differs by nature: only its presence is checked).
    @Test func writeOutVariablesLikeCurl() async throws {
        let server = try await Shared.faults.get()
        let ok = server.url("/ok")
        let format = "%{num_headers} %{http_version} %{scheme} %{method} %{remote_ip} %{remote_port} %{local_ip} %{num_connects} %{urlnum} %{redirect_url}|"
        // Two URLs, one connection: the second opens none.
        try await CLITests.sideBySide(["-s", "-o", "/dev/null", "-o", "/dev/null", "-w", format, ok, ok])
        let moved = server.url("/redirect?code=301&to=%2Fok")
        try await CLITests.sideBySide(["-s", "-o", "/dev/null", "-w", format, moved])
        try await CLITests.sideBySide(["-s", "-o", "/dev/null", "-w", "%{http_version}", server.url("/http10")])
        try await CLITests.sideBySide(["-s", "-L", "-o", "/dev/null", "-w", format, "-d", "x", server.url("/redirect?code=303&to=%2Fok")])
        // Past --max-redirs: what the last response said (the connection's addresses are not
        // known once the call failed: curl tells them, a difference).
        try await CLITests.sideBySide(["-s", "-L", "--max-redirs", "0", "-o", "/dev/null", "-w",
                                       "%{http_code} %{num_headers} %{http_version} %{method} %{redirect_url}|", moved])
        // %{onerror}: the rest only for a transfer that failed; %{errormsg} says why.
        let errors = try await CLITests.salvo(["-s", "-f", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{onerror}%{urlnum}: %{errormsg}\\n",
                                               ok, server.url("/status?code=404")])
        #expect(String(decoding: errors.stdout, as: UTF8.self) == "1: The requested URL returned error: 404\n")
        // Nothing to say is null in %{json}, as curl writes it.
        let json = try await CLITests.salvo(["-s", "-o", "/dev/null", "-w", "%{json}", ok])
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        #expect(object?["errormsg"] is NSNull && object?["redirect_url"] is NSNull)
        let ports = try await CLITests.salvo(["-s", "-o", "/dev/null", "-w", "%{local_port} %{speed_download} %{filename_effective}", ok])
        let words = String(decoding: ports.stdout, as: UTF8.self).split(separator: " ")
        #expect(words.count == 3 && (Int(words[0]) ?? 0) > 0 && Int(words[1]) != nil && words[2] == "/dev/null", "\(words)")
    }

    /// A netrc entry with a password and no login sends the password with an empty user.
    @Test func aNetrcPasswordWithoutLogin() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-netrc-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data("machine 127.0.0.1 password s3cret\n".utf8).write(to: URL(fileURLWithPath: path))
        let run = try await CLITests.salvo(["-s", "-o", "/dev/null", "--netrc-file", path, server.url("/echo")])
        #expect(run.status == 0)
        #expect(try server.log().requests.first?.header("authorization") == "Basic " + Data(":s3cret".utf8).base64EncodedString())
    }
}
