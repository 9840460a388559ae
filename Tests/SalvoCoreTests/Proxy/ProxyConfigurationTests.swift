import HTTPTypes
import Testing
@testable import SalvoCore

/// Proxy settings as curl reads them — spellings, NO_PROXY, the environment — and the bytes
/// a proxy is sent, without sockets.
@Suite struct ProxyConfigurationTests {
    @Test func spellings() throws {
        let plain = try HTTPProxy("proxy.example")
        #expect(plain.host == "proxy.example" && plain.port == 1080 && plain.credentials == nil)
        let full = try HTTPProxy("HTTP://us%40er:p%3Ass@Proxy.Example:3128/")
        #expect(full.host == "proxy.example" && full.port == 3128)
        #expect(full.credentials == HTTPProxy.Credentials(username: "us@er", password: "p:ss"))
        #expect(full.description == "http://us@er@proxy.example:3128")
        let six = try HTTPProxy("[::1]:8080")
        #expect(six.host == "::1" && six.port == 8080 && six.authority == "[::1]:8080")
        #expect(try HTTPProxy("[::1]").port == 1080)
        #expect(try HTTPProxy("user@10.1.2.3:80").credentials?.password == "")

        #expect(try HTTPProxy("proxy:").port == 1080)
        // "/" in a password goes percent-encoded; raw, it cannot be told from a path.
        #expect(try HTTPProxy("user:pa%2F%2Fss@host:81").credentials?.password == "pa//ss")
        for unsupported in ["https://proxy:443", "socks5://proxy:1080", "socks5h://p"] {
            do {
                _ = try HTTPProxy(unsupported)
                Issue.record("\(unsupported) accepted")
            } catch {
                #expect(error.code == .unsupportedScheme)
            }
        }
        // A path means nothing for a proxy (curl's case 346 gives one).
        #expect(try HTTPProxy("http://127.0.0.1:8990/346").port == 8990)
        #expect(try HTTPProxy("proxy/path?x").host == "proxy")
        for bad in ["", "http://", "proxy:99999", "user@", "http://a b", "/path"] {
            do {
                _ = try HTTPProxy(bad)
                Issue.record("\(bad) accepted")
            } catch {
                #expect(error.code == .invalidURL, "\(bad)")
            }
        }
        // A password never shows in an error.
        for leaky in ["http://user:hunter2@proxy:bad", "user:hunter2@proxy:bad", "socks5://user:hunter2@p", "user:hun://ter2@p:x"] {
            do {
                _ = try HTTPProxy(leaky)
                Issue.record("\(leaky) accepted")
            } catch {
                #expect(!error.description.contains("hunter2") && !error.description.contains("ter2"), "\(error)")
            }
        }
    }

    @Test func bypassFollowsCurl() {
        let bypass: ProxyBypass = "example.com, .internal ,10.0.0.0/8 ::1 fd00::/8,192.168.1.5"
        for direct in ["example.com", "API.Example.com", "example.com.", "a.b.internal", "internal", "10.20.30.40",
                       "::1", "[::1]", "fd12::7", "192.168.1.5"] {
            #expect(bypass.matches(direct), "\(direct)")
        }
        for proxied in ["badexample.com", "example.org", "internal.net", "11.0.0.1", "::2", "fe80::1", "192.168.1.6", "com"] {
            #expect(!bypass.matches(proxied), "\(proxied)")
        }
        #expect(ProxyBypass("*").matches("anything.at.all"))
        #expect(ProxyBypass(" * ").matches("anything.at.all"))
        // As curl: "*" means every host only as the whole list; /0 is the address itself.
        #expect(!ProxyBypass("*,example.com").matches("other.test"))
        #expect(!ProxyBypass("10.0.0.0/0").matches("10.0.0.1") && ProxyBypass("10.0.0.1/0").matches("10.0.0.1"))
        #expect(!ProxyBypass("").matches("localhost"))
        #expect(ProxyBypass("127.0.0.1").matches("127.0.0.1"))
        #expect(!ProxyBypass("127.0.0.1").matches("127.0.0.2"))
        #expect(!ProxyBypass("10.0.0.0/40").matches("10.0.0.1"))
    }

    @Test func environmentAsCurlReadsIt() throws {
        // http_proxy only in lower case: HTTP_PROXY can come from a request's "Proxy:" header.
        let upperOnly = try ProxyConfiguration.environment(["HTTP_PROXY": "evil:1", "HTTPS_PROXY": "p2:2"])
        #expect(upperOnly.http == nil && upperOnly.https?.host == "p2")
        let both = try ProxyConfiguration.environment(["https_proxy": "lower:1", "HTTPS_PROXY": "upper:2"])
        #expect(both.https?.host == "lower")
        let fallback = try ProxyConfiguration.environment(["ALL_PROXY": "all:3", "http_proxy": "web:4"])
        #expect(fallback.http?.host == "web" && fallback.https?.host == "all")
        // Set but empty counts as unset (curl's getenv): the next name is asked.
        let empty = try ProxyConfiguration.environment(["http_proxy": "", "https_proxy": " ", "HTTPS_PROXY": "up:5", "all_proxy": "all:3"])
        #expect(empty.http?.host == "all" && empty.https?.host == "up")
        #expect(ProxyBypass.environment(["no_proxy": "", "NO_PROXY": "b.test"]).matches("b.test"))
        let bypass = try ProxyConfiguration.environment(["all_proxy": "p:1", "no_proxy": "a.test", "NO_PROXY": "b.test"])
        #expect(bypass.proxy(for: .http, host: "a.test") == nil)
        #expect(bypass.proxy(for: .https, host: "b.test")?.host == "p")
        // A proxy that cannot be used matters only where it applies: the requests it would
        // carry are refused (never sent direct), naming the variable; the others go on.
        let socks = try ProxyConfiguration.environment(["ALL_PROXY": "socks5://p:1", "http_proxy": "web:4", "NO_PROXY": "direct.test"])
        #expect(socks.http?.host == "web" && socks.https == nil && socks.httpRefusal == nil && socks.isEnabled)
        #expect(socks.refusal(for: .https, host: "a.test")?.code == .unsupportedScheme)
        #expect(socks.refusal(for: .https, host: "a.test")?.detail?.hasPrefix("ALL_PROXY: ") == true)
        #expect(socks.refusal(for: .https, host: "direct.test") == nil && socks.refusal(for: .http, host: "a.test") == nil)
        let unreadable = try ProxyConfiguration.environment(["http_proxy": "http://@", "https_proxy": "p:1"])
        #expect(unreadable.refusal(for: .http, host: "a.test")?.code == .invalidURL && unreadable.https?.host == "p")
        #expect(try ProxyConfiguration.environment([:]) == .none)
    }

    @Test func absoluteFormAndTheProxysCredentials() throws {
        var added = RequestEncoder.AddedFields()
        added.absoluteFormPrefix = "http://origin.test:8080"
        added.proxyAuthorization = "Basic dXNlcjpzZWNyZXQ="
        var head: [UInt8] = []
        let request = try HTTPRequest(method: .get, url: "http://origin.test:8080/p?q=é", headerFields: [.accept: "*/*"])
        try RequestEncoder.encodeHead(request, body: .none, adding: added, into: &head)
        #expect(String(decoding: head, as: UTF8.self) == """
            GET http://origin.test:8080/p?q=%C3%A9 HTTP/1.1\r
            Host: origin.test:8080\r
            Proxy-Authorization: Basic dXNlcjpzZWNyZXQ=\r
            Accept: */*\r
            \r

            """)
        // The request's own Proxy-Authorization wins; OPTIONS * names the origin alone.
        var options = HTTPRequest(method: .options, scheme: "http", authority: "origin.test", path: "*")
        options.headerFields[.proxyAuthorization] = "Bearer mine"
        head = []
        try RequestEncoder.encodeHead(options, body: .none, adding: added, into: &head)
        let text = String(decoding: head, as: UTF8.self)
        #expect(text.hasPrefix("OPTIONS http://origin.test:8080 HTTP/1.1\r\n"))
        #expect(text.components(separatedBy: "Proxy-Authorization").count == 2 && text.contains("Bearer mine"))
        // A target that does not start with "/" would name another host to the proxy.
        let sneaky = HTTPRequest(method: .get, scheme: "http", authority: "origin.test", path: "@evil.test/x")
        head = []
        #expect(throws: TransportError.self) { try RequestEncoder.encodeHead(sneaky, body: .none, adding: added, into: &head) }
    }

    @Test func connectAnswers() {
        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
        #expect(ProxyTunnel.headEnd(bytes("HTTP/1.1 200 OK\r\n\r\n")) == 19)
        #expect(ProxyTunnel.headEnd(bytes("HTTP/1.1 200 OK\n\n")) == 17)
        #expect(ProxyTunnel.headEnd(bytes("HTTP/1.1 200 OK\r\nA: b\r\n")) == nil)
        #expect(ProxyTunnel.status(of: bytes("HTTP/1.1 200 Connection established\r\n")[...]) == 200)
        #expect(ProxyTunnel.status(of: bytes("HTTP/1.0 407\r\n")[...]) == 407)
        for bad in ["SSH-2.0-OpenSSH\r\n", "HTTP/2 200 OK\r\n", "HTTP/1.1 2000 OK\r\n", "HTTP/1.1 2x0 OK\r\n", "HTTP/1.1 200x\r\n"] {
            #expect(ProxyTunnel.status(of: bytes(bad)[...]) == nil, "\(bad)")
        }
        #expect(ProxyTunnel.field("proxy-authenticate", in: bytes("HTTP/1.1 407 X\r\nProxy-Authenticate:  Basic realm=\"r\" \r\n\r\n")[...])
                == "Basic realm=\"r\"")
    }
}
