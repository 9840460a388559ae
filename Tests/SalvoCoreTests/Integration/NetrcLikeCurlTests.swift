import SalvoTestSupport
import Foundation
import Testing

/// `--netrc-file` and `--location-trusted` as curl 7.88 reads them: both tools run with the
/// same netrc file against the fault server's /echo (127.0.0.1 and localhost being two hosts
/// of one server), and the credentials the last hop got are compared.
extension RedirectCredentialsLikeCurlTests {
    /// A netrc file holding `text`, removed after `body`.
    static func withNetrc(_ text: String, _ body: (String) async throws -> Void) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-netrc-\(UUID().uuidString)").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await body(path)
    }

    static func basic(_ credentials: String) -> String { "Basic " + Data(credentials.utf8).base64EncodedString() }

    @Test func aMatchingMachine() async throws {
        let server = try await Shared.faults.get()
        let text = "machine example.com login x password y\n# a comment\nmachine 127.0.0.1\n  login alice\n  password s3cret\ndefault login d password pd\n"
        try await Self.withNetrc(text) { path in
            try await Self.compare(["-s", "--netrc-file", path, server.url("/echo")], "a machine entry",
                                   expected: (Self.basic("alice:s3cret"), nil))
        }
    }

    @Test func theDefaultEntry() async throws {
        let server = try await Shared.faults.get()
        try await Self.withNetrc("machine example.com login x password y\ndefault login d password pd\n") { path in
            try await Self.compare(["-s", "--netrc-file", path, server.url("/echo")], "the default entry",
                                   expected: (Self.basic("d:pd"), nil))
        }
    }

    /// Quoted tokens with escapes; a macdef's lines (up to an empty one) are not entries; the
    /// first matching machine wins; an account is passed over.
    @Test func quotedTokensAndMacros() async throws {
        let server = try await Shared.faults.get()
        let text = "macdef init\nmachine 127.0.0.1 login evil password x\n\n"
            + "machine 127.0.0.1 account acc login \"al ice\" password \"p\\\"w\\\\d\\t\"\n"
            + "machine 127.0.0.1 login second password no\n"
        try await Self.withNetrc(text) { path in
            try await Self.compare(["-s", "--netrc-file", path, server.url("/echo")], "quoted tokens",
                                   expected: (Self.basic("al ice:p\"w\\d\t"), nil))
        }
    }

    @Test func userOptionWinsOverNetrc() async throws {
        let server = try await Shared.faults.get()
        try await Self.withNetrc("machine 127.0.0.1 login alice password s3cret\n") { path in
            try await Self.compare(["-s", "-u", "bob:pw", "--netrc-file", path, server.url("/echo")], "-u and netrc",
                                   expected: (Self.basic("bob:pw"), nil))
            try await Self.compare(["-s", "--netrc-optional", "--netrc-file", path, server.url("/echo")], "--netrc-optional",
                                   expected: (Self.basic("alice:s3cret"), nil))
        }
    }

    /// A URL with a user and no password: the password of that user's entry for the host; a
    /// user the file does not name goes with an empty one (not compared: curl 7.88 sends it
    /// with another login's password, a flaw later versions fixed).
    @Test func aURLsUserTakesItsPasswordFromNetrc() async throws {
        let server = try await Shared.faults.get()
        let text = "machine 127.0.0.1 login bob password b\nmachine 127.0.0.1 login alice password s3cret\n"
        try await Self.withNetrc(text) { path in
            try await Self.compare(["-s", "--netrc-file", path, "http://alice@127.0.0.1:\(server.port)/echo"], "a URL's user",
                                   expected: (Self.basic("alice:s3cret"), nil))
            let ours = try await CLITests.salvoGet(["-s", "--netrc-file", path, "http://carol@127.0.0.1:\(server.port)/echo"])
            #expect(ours.status == 0 && Self.credentials(ours.stdout).authorization == Self.basic("carol:"))
        }
    }

    /// A → B with entries for both: B gets its own, never A's.
    @Test func aRedirectGetsTheNextHostsOwnEntry() async throws {
        let server = try await Shared.faults.get()
        let url = server.url("/redirect?to=" + Self.encoded("http://localhost:\(server.port)/echo"))
        let both = "machine 127.0.0.1 login alice password a\nmachine localhost login bob password b\n"
        try await Self.withNetrc(both) { path in
            try await Self.compare(["-s", "-L", "--netrc-file", path, url], "netrc for A and B", expected: (Self.basic("bob:b"), nil))
        }
        try await Self.withNetrc("machine 127.0.0.1 login alice password a\n") { path in
            try await Self.compare(["-s", "-L", "--netrc-file", path, url], "netrc for A only", expected: (nil, nil))
        }
        try await Self.withNetrc("machine 127.0.0.1 login alice password a\ndefault login d password pd\n") { path in
            try await Self.compare(["-s", "-L", "--netrc-file", path, url], "netrc for A, default", expected: (Self.basic("d:pd"), nil))
        }
        // -u wins over netrc: with -L (not trusted) B gets nothing.
        try await Self.withNetrc(both) { path in
            try await Self.compare(["-s", "-L", "-u", "u:p", "--netrc-file", path, url], "-u and netrc, A -> B", expected: (nil, nil))
        }
    }

    /// --location-trusted: the -u credentials (and a -H Authorization) go to the second host too.
    @Test func locationTrustedSendsCredentialsEverywhere() async throws {
        let server = try await Shared.faults.get()
        let url = server.url("/redirect?to=" + Self.encoded("http://localhost:\(server.port)/echo"))
        try await Self.compare(["-s", "--location-trusted", "-u", "alice:pw", url], "--location-trusted -u",
                               expected: (Self.basic("alice:pw"), nil))
        try await Self.compare(["-s", "--location-trusted", "-H", "Authorization: Bearer t", "-H", "Cookie: a=1", url],
                               "--location-trusted -H", expected: ("Bearer t", "a=1"))
    }

    /// A netrc file that is not there: no credentials, and no error (curl 7.88's exit 0).
    @Test func aMissingNetrcFile() async throws {
        let server = try await Shared.faults.get()
        let missing = "/nonexistent-\(UUID().uuidString)/netrc"
        try await Self.compare(["-s", "--netrc-file", missing, server.url("/echo")], "a missing file", expected: (nil, nil))
        let ours = try await CLITests.salvoGet(["-s", "--netrc-file", missing, server.url("/echo")])
        if let curl = CLITests.curlPath {
            let theirs = try await CLITests.run(curl, ["-s", "--netrc-file", missing, server.url("/echo")])
            #expect(ours.status == theirs.status)
        }
    }
}
