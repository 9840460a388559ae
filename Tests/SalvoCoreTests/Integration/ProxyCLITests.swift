import SalvoTestSupport
import Foundation
import SalvoTransport
import Testing

/// `salvo get -x/-U/-p/--noproxy` and the proxy environment, side by side with curl.
@Suite(.serialized) struct ProxyCLITests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr = ""
    }

    /// Runs `executable` (bounded to 30 s) with `environment` replacing the proxy variables.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> Run {
        var variables = ProcessInfo.processInfo.environment
        for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"] {
            variables[name] = nil
        }
        let run = try await runChild(executable, arguments, environment: variables.merging(environment) { $1 }, timeLimit: 30)
        if run.signaled { Issue.record("\(executable) \(arguments) died of signal \(run.status)") }
        return Run(status: run.status, stdout: run.output, stderr: run.errors)
    }

    /// Salvo's and curl's runs of `arguments` (curl's nil where it is not installed).
    static func both(_ arguments: [String], environment: [String: String] = [:]) async throws -> (salvo: Run, curl: Run?) {
        let salvo = try await run(CLITests.salvoPath, ["get"] + arguments, environment: environment)
        var curl: Run?
        if let path = CLITests.curlPath { curl = try await run(path, arguments, environment: environment) }
        return (salvo, curl)
    }

    @Test func forwardedRequestsAreCurls() async throws {
        let proxy = try await ScriptedProxy.start()
        let (salvo, curl) = try await Self.both(["-s", "-x", "user:secret@127.0.0.1:\(proxy.port)", "http://origin.test:8080/a?b=1"])
        #expect(salvo.status == 0)
        #expect(salvo.stdout == """
            GET http://origin.test:8080/a?b=1 HTTP/1.1\r
            Host: origin.test:8080\r
            Proxy-Authorization: Basic dXNlcjpzZWNyZXQ=\r
            User-Agent: \(SalvoVersion.userAgent)\r
            Accept: */*\r
            Proxy-Connection: Keep-Alive\r
            \r

            """)
        if let curl {
            #expect(curl.status == 0)
            let curlsAgent = curl.stdout.split(separator: "\r\n").first { $0.hasPrefix("User-Agent:") }.map(String.init) ?? ""
            #expect(salvo.stdout.replacingOccurrences(of: "User-Agent: \(SalvoVersion.userAgent)", with: curlsAgent) == curl.stdout)
        }
    }

    /// curl's cases 663 and 1180: dot segments resolved in the command-line URL; a
    /// `Proxy-Connection` of the caller's not doubled.
    @Test func dotSegmentsAndTheCallersProxyConnection() async throws {
        let proxy = try await ScriptedProxy.start()
        let (salvo, curl) = try await Self.both(["-s", "-x", "127.0.0.1:\(proxy.port)", "-H", "Proxy-Connection: Keep-Alive",
                                           "http://example.com/please/../gimme/663?foobar#hello"])
        #expect(salvo.status == 0)
        #expect(salvo.stdout.hasPrefix("GET http://example.com/gimme/663?foobar HTTP/1.1\r\n"))
        #expect(salvo.stdout.components(separatedBy: "Proxy-Connection").count == 2)
        if let curl { #expect(curl.stdout.hasPrefix("GET http://example.com/gimme/663?foobar HTTP/1.1\r\n")) }
    }

    /// curl's case 346: a proxy URL with a path, blank passwords for both, in curl's order.
    @Test func credentialsForTheProxyAndTheServer() async throws {
        let proxy = try await ScriptedProxy.start()
        let (salvo, curl) = try await Self.both(["-s", "-x", "http://127.0.0.1:\(proxy.port)/346", "-U", "puser:", "-u", "suser:",
                                           "http://remote.example/346"])
        let expected = "GET http://remote.example/346 HTTP/1.1\r\nHost: remote.example\r\nProxy-Authorization: Basic cHVzZXI6\r\n"
            + "Authorization: Basic c3VzZXI6\r\n"
        #expect(salvo.status == 0)
        #expect(salvo.stdout.hasPrefix(expected), "\(salvo.stdout)")
        if let curl { #expect(curl.stdout.hasPrefix(expected)) }
    }

    @Test func tunnelFailuresExitAsCurls() async throws {
        let proxy = try await ScriptedProxy.start()
        let port = try freePort()
        for label in ["refuse", "auth", "close", "half", "garbage"] {
            let (salvo, curl) = try await Self.both(["-s", "-x", "127.0.0.1:\(proxy.port)", "https://\(label).test:\(port)/"])
            #expect(salvo.status == 56, "\(label)")
            if let curl { #expect(curl.status == salvo.status, "\(label)") }
        }
        // With the credentials it wants, the tunnel opens (-p tunnels http:// too).
        let origin = try await FaultServer.start(lifetime: 120)
        let (salvo, curl) = try await Self.both(["-s", "-p", "-x", "127.0.0.1:\(proxy.port)", "-U", "user:secret", "http://auth.test:\(origin.port)/ok"])
        #expect(salvo.status == 0 && salvo.stdout == "hello")
        if let curl { #expect(curl.status == 0 && curl.stdout == "hello") }
        // Nobody listening where the proxy should be: 7.
        let nobody = try await Self.both(["-s", "-x", "127.0.0.1:\(port)", "http://origin.test/"])
        #expect(nobody.salvo.status == 7)
        if let curl = nobody.curl { #expect(curl.status == 7) }
    }

    @Test func theEnvironmentAndWhatOverridesIt() async throws {
        let proxy = try await ScriptedProxy.start()
        let origin = try await FaultServer.start(lifetime: 120)
        let through = ["http_proxy": "http://127.0.0.1:\(proxy.port)"]
        let cases: [(arguments: [String], environment: [String: String], proxied: Bool)] = [
            ([], through, true),
            // Upper-case HTTP_PROXY is not read (a CGI server sets it from a request's header).
            ([], ["HTTP_PROXY": "http://127.0.0.1:\(proxy.port)"], false),
            ([], ["ALL_PROXY": "127.0.0.1:\(proxy.port)"], true),
            ([], through.merging(["NO_PROXY": "127.0.0.1"]) { $1 }, false),
            (["--noproxy", "*"], through, false),
            (["--noproxy", "example.com"], through.merging(["NO_PROXY": "127.0.0.1"]) { $1 }, true),
            (["-x", ""], through, false),
            // NO_PROXY applies to a -x proxy too; --noproxy replaces it.
            (["-x", "127.0.0.1:\(proxy.port)"], ["NO_PROXY": "127.0.0.1"], false),
            (["-x", "127.0.0.1:\(proxy.port)", "--noproxy", "other.test"], ["NO_PROXY": "127.0.0.1"], true),
        ]
        for (arguments, environment, proxied) in cases {
            let (salvo, curl) = try await Self.both(["-s"] + arguments + [origin.url("/ok")], environment: environment)
            #expect(salvo.status == 0)
            #expect(salvo.stdout.hasPrefix("GET http://") == proxied, "\(arguments) \(environment)")
            if proxied { #expect(!salvo.stdout.contains("hello")) } else { #expect(salvo.stdout == "hello") }
            if let curl { #expect(curl.stdout.hasPrefix("GET http://") == proxied, "curl: \(arguments) \(environment)") }
        }
    }

    /// A proxy variable Salvo cannot use (SOCKS) matters only for the requests it applies
    /// to, as with curl: a more specific variable or NO_PROXY wins over it; where it does
    /// apply, the request fails (7, naming the variable) rather than go direct. (curl speaks
    /// SOCKS, but nothing listens there: 7 for it too.)
    @Test func anUnusableProxyVariableMattersOnlyWhereItApplies() async throws {
        let proxy = try await ScriptedProxy.start()
        let origin = try await FaultServer.start(lifetime: 120)
        let socks = ["ALL_PROXY": "socks5://127.0.0.1:\(try freePort())"]
        let cases: [(environment: [String: String], status: Int32, proxied: Bool)] = [
            (socks.merging(["http_proxy": "http://127.0.0.1:\(proxy.port)"]) { $1 }, 0, true),
            (socks.merging(["NO_PROXY": "127.0.0.1"]) { $1 }, 0, false),
            (socks.merging(["https_proxy": "http://127.0.0.1:\(proxy.port)"]) { $1 }, 7, false),
            (socks, 7, false),
        ]
        for (environment, status, proxied) in cases {
            let (salvo, curl) = try await Self.both(["-s", "-S", origin.url("/ok")], environment: environment)
            #expect(salvo.status == status, "\(environment)")
            if status == 0 {
                #expect(salvo.stdout.hasPrefix("GET http://") == proxied, "\(environment)")
                if !proxied { #expect(salvo.stdout == "hello") }
            } else {
                #expect(salvo.stdout.isEmpty && salvo.stderr.contains("ALL_PROXY"), "\(salvo.stderr)")
            }
            if let curl {
                #expect(curl.status == status, "curl: \(environment)")
                if status == 0 { #expect(curl.stdout.hasPrefix("GET http://") == proxied, "curl: \(environment)") }
            }
        }
    }

    @Test func httpsThroughTinyproxy() async throws {
        let certificates = try await TestCertificates.shared.get()
        let origin = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        let proxy = try await TinyProxy.start()
        let (salvo, curl) = try await Self.both(["-s", "-o", "/dev/null", "--cacert", certificates.path("ca.pem"), "-x", proxy.url, origin.url()])
        #expect(salvo.status == 0)
        if let curl { #expect(curl.status == 0) }
        let other = try await OpenSSLServer.start(certificate: certificates.path("other.pem"), key: certificates.path("other.key"))
        let (wrong, curlWrong) = try await Self.both(["-s", "-o", "/dev/null", "--cacert", certificates.path("ca.pem"), "-x", proxy.url, other.url()])
        #expect(wrong.status == 60)
        if let curlWrong { #expect(curlWrong.status == 60) }
    }
}
