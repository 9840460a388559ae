import SalvoTestSupport
import Foundation
import Testing

/// `salvo get -L` sends credentials across redirects as curl does: only to the chain's first
/// origin (host, port and scheme). Both tools run the same chains against the fault server's
/// /echo, and the credentials the last hop got are compared. 127.0.0.1 and localhost are two
/// origins of one server.
@Suite struct RedirectCredentialsLikeCurlTests {
    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    /// The Authorization and Cookie values the final /echo saw (nil when absent).
    static func credentials(_ output: Data) -> (authorization: String?, cookie: String?) {
        guard let object = try? JSONSerialization.jsonObject(with: output) as? [String: Any],
              let headers = object["headers"] as? [[String]] else { return (nil, nil) }
        func value(_ name: String) -> String? { headers.first { $0.first?.lowercased() == name }?.last }
        return (value("authorization"), value("cookie"))
    }

    /// Runs `salvo get` (and curl, where it is installed) with `arguments`; the last hop must
    /// have got `expected`, and curl's the same.
    static func compare(_ arguments: [String], _ what: String, expected: (authorization: String?, cookie: String?),
                        sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let ours = try await CLITests.salvoGet(arguments)
        #expect(ours.status == 0, "\(what): salvo \(ours.status) \(ours.stderr)", sourceLocation: sourceLocation)
        let salvoSaw = Self.credentials(ours.stdout)
        #expect(salvoSaw.authorization == expected.authorization && salvoSaw.cookie == expected.cookie,
                "\(what): salvo sent \(salvoSaw)", sourceLocation: sourceLocation)
        guard let curl = CLITests.curlPath else { return }
        let theirs = try await CLITests.run(curl, arguments)
        let curlSaw = Self.credentials(theirs.stdout)
        #expect(theirs.status == 0 && salvoSaw.authorization == curlSaw.authorization && salvoSaw.cookie == curlSaw.cookie,
                "\(what): curl sent \(curlSaw), salvo \(salvoSaw)", sourceLocation: sourceLocation)
    }

    /// A → B → A: the -H credentials go again on the last hop, back at the first origin.
    @Test func backToTheFirstOriginGetsTheCredentialsAgain() async throws {
        let server = try await Shared.faults.get()
        let home = "http://127.0.0.1:\(server.port)"
        let away = "http://localhost:\(server.port)"
        let back = home + "/echo"
        let viaAway = away + "/redirect?to=" + Self.encoded(back)
        let url = home + "/redirect?to=" + Self.encoded(viaAway)
        try await Self.compare(["-s", "-L", "-H", "Authorization: Bearer t0k3n", "-H", "Cookie: session=1", url], "A -> B -> A, -H",
                               expected: ("Bearer t0k3n", "session=1"))
    }

    /// `-u` with a Location that brings userinfo for the same origin: the -u credentials stay
    /// (the caller's win over a URL's userinfo).
    @Test func userOptionWinsOverALocationsUserinfo() async throws {
        let server = try await Shared.faults.get()
        let target = "http://mallory:x@127.0.0.1:\(server.port)/echo"
        let url = server.url("/redirect?to=" + Self.encoded(target))
        try await Self.compare(["-s", "-L", "-u", "alice:pw", url], "-u, then a Location with userinfo",
                               expected: ("Basic YWxpY2U6cHc=", nil))
    }

    /// A → B → B-with-userinfo: no credentials to a host that is not the first.
    @Test func aLocationsUserinfoOffTheFirstHost() async throws {
        let server = try await Shared.faults.get()
        let target = "http://bob:x@localhost:\(server.port)/echo"
        let viaAway = "http://localhost:\(server.port)/redirect?to=" + Self.encoded(target)
        let url = server.url("/redirect?to=" + Self.encoded(viaAway))
        try await Self.compare(["-s", "-L", url], "A -> B -> userinfo@B", expected: (nil, nil))
    }
}

extension CLITests {
    static func salvoGet(_ arguments: [String]) async throws -> Run { try await run(salvoPath, ["get"] + arguments) }
}
