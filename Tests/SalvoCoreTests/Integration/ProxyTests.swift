import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore

/// Requests through HTTP proxies: tinyproxy from the distribution (forwarding, CONNECT
/// tunnels with TLS to the origin, Basic credentials), and a scripted proxy that refuses,
/// asks for credentials, closes mid-CONNECT or answers nonsense.
@Suite(.serialized) struct ProxyTests {
    static let credentials = HTTPProxy.Credentials(username: "user", password: "secret")

    func client(_ proxies: ProxyConfiguration, _ adjust: (inout HTTPClient.Configuration) -> Void = { _ in }) throws -> HTTPClient {
        try makeClient {
            $0.threads = 1
            $0.proxy = proxies
            $0.connectTimeout = .seconds(5)
            $0.requestTimeout = .seconds(20)
            adjust(&$0)
        }
    }

    func failure(_ client: HTTPClient, _ url: String) async -> TransportError? {
        do {
            _ = try await client.execute(try get(url))
            return nil
        } catch let error as TransportError {
            return error
        } catch {
            return nil
        }
    }

    // MARK: Forwarding (http:// in absolute form)

    @Test func plainRequestsGoWholeToTheProxyWithItsCredentialsOnly() async throws {
        let proxy = try await ScriptedProxy.start()
        var settings = HTTPProxy(host: "127.0.0.1", port: proxy.port, credentials: Self.credentials)
        settings.connectHeaderFields[.userAgent] = "never-sent-without-connect"
        let client = try self.client(.all(settings))
        defer { client.shutdown() }
        // The origin's name is never resolved here: only the proxy's is.
        let response = try await client.execute(try get("http://origin.test:8080/a/b?c=1"))
        #expect(response.status == .ok)
        #expect(response.text.hasPrefix("""
            GET http://origin.test:8080/a/b?c=1 HTTP/1.1\r
            Host: origin.test:8080\r
            Proxy-Authorization: Basic dXNlcjpzZWNyZXQ=\r

            """))
        #expect(!response.text.contains("never-sent"))
        // A proxy that keeps connections alive gets the next requests on the same one.
        for _ in 0..<2 { _ = try await client.execute(try get("http://origin.test:8080/again")) }
        let statistics = await client.poolStatistics()
        #expect(statistics.hosts.values.map(\.opened) == [1])
        #expect(statistics.hosts.values.map(\.reused) == [2])
    }

    @Test func tinyproxyForwards() async throws {
        let nginx = try await Shared.nginx.get()
        let proxy = try await TinyProxy.start()
        let client = try self.client(.all(try HTTPProxy(proxy.url)))
        defer { client.shutdown() }
        for _ in 0..<3 {
            let response = try await client.execute(try get(nginx.url("/64k")))
            #expect(response.status == .ok && response.body.count == 65536)
        }
        // tinyproxy closes each client connection after one response; pooled under the proxy.
        let statistics = await client.poolStatistics()
        #expect(statistics.hosts.keys.map { $0.proxy?.port } == [proxy.port])
        #expect(statistics.hosts.values.map(\.requestsCompleted) == [3])
    }

    @Test func credentialsReachTheProxyAndNeverTheOrigin() async throws {
        let origin = try await FaultServer.start(lifetime: 120)
        let proxy = try await TinyProxy.start(requiresCredentials: true)
        let without = try self.client(.all(try HTTPProxy(proxy.url)))
        defer { without.shutdown() }
        // A forwarding proxy's 407 is a response like any other.
        #expect(try await without.execute(try get(origin.url("/ok"))).status.code == 407)

        let with = try self.client(.all(try HTTPProxy("http://user:secret@127.0.0.1:\(proxy.port)")))
        defer { with.shutdown() }
        let response = try await with.execute(try get(origin.url("/ok")))
        #expect(response.status == .ok && response.text == "hello")
        let seen = try origin.log().requests
        #expect(!seen.isEmpty)
        #expect(seen.allSatisfy { $0.header("Proxy-Authorization") == nil })
    }

    /// A caller's own `Proxy-Authorization` on a request redirected to another host: the same
    /// proxy carries the next request, so the credentials meant for it go on (curl keeps them
    /// too); no origin sees them. Dropped, the proxy would refuse the second request with 407.
    @Test func aProxyAuthorizationFollowsARedirectThroughTheSameProxy() async throws {
        let first = try await FaultServer.start(lifetime: 120)
        let second = try await FaultServer.start(lifetime: 120, host: "127.0.0.2")
        let proxy = try await TinyProxy.start(requiresCredentials: true)
        let client = try self.client(.all(try HTTPProxy(proxy.url)))
        defer { client.shutdown() }
        let target = second.url("/echo").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        var request = try get(first.url("/redirect?to=") + target)
        request.headerFields[.proxyAuthorization] = "Basic dXNlcjpzZWNyZXQ="
        request.headerFields[.authorization] = "Bearer for-the-first-origin"
        let response = try await client.execute(request)
        #expect(response.status == .ok, "the proxy refused the redirected request: \(response.status)")
        #expect(response.redirectChain.count == 2)
        let seen = try first.log().requests + second.log().requests
        #expect(seen.count == 2 && seen.allSatisfy { $0.header("Proxy-Authorization") == nil })
        #expect(try second.log().requests.first?.header("Authorization") == nil)
    }

    // MARK: Tunnels (https:// through CONNECT)

    @Test func httpsGoesThroughATunnelAndTheOriginIsVerified() async throws {
        let certificates = try await TestCertificates.shared.get()
        let origin = try await OpenSSLServer.start(certificate: certificates.path("leaf.pem"), key: certificates.path("leaf.key"))
        let proxy = try await TinyProxy.start(requiresCredentials: true)
        let client = try self.client(.all(try HTTPProxy("user:secret@127.0.0.1:\(proxy.port)"))) {
            $0.tls.trustRoots = .file(certificates.path("ca.pem"))
        }
        defer { client.shutdown() }
        for _ in 0..<2 {
            let response = try await client.execute(try get(origin.url()))
            #expect(response.status == .ok)
        }
        #expect(proxy.log.contains("CONNECT"))

        // The tunnel changes nothing in what TLS checks: a certificate for another name fails.
        let other = try await OpenSSLServer.start(certificate: certificates.path("other.pem"), key: certificates.path("other.key"))
        #expect(await self.failure(client, other.url())?.code == .tlsCertificateInvalid)
    }

    @Test func aTunnelRefusedOrBrokenIsATypedError() async throws {
        let proxy = try await ScriptedProxy.start()
        let origin = try await FaultServer.start(lifetime: 120)
        // Ten seconds to connect and hear the CONNECT's answer: a busy machine must not turn a
        // proxy's answer into a timeout. The silent proxy below gets a client of its own.
        let client = try self.client(.all(HTTPProxy(host: "127.0.0.1", port: proxy.port))) { $0.connectTimeout = .seconds(10) }
        defer { client.shutdown() }
        let port = origin.port
        let refused = await self.failure(client, "https://refuse.test:\(port)/")
        #expect(refused?.code == .proxyTunnelFailed)
        #expect(refused?.detail?.contains("403 Forbidden") == true)
        let auth = await self.failure(client, "https://auth.test:\(port)/")
        #expect(auth?.code == .proxyAuthenticationRequired)
        #expect(auth?.detail?.contains("Basic realm=\"scripted\"") == true)
        for label in ["close", "half", "garbage", "extra"] {
            let error = await self.failure(client, "https://\(label).test:\(port)/")
            #expect(error?.code == .proxyTunnelFailed, "\(label): \(String(describing: error))")
            #expect(error?.mayHaveBeenProcessed == false)
        }
        // A proxy that never answers CONNECT: the connect timeout ends it.
        let impatient = try self.client(.all(HTTPProxy(host: "127.0.0.1", port: proxy.port))) { $0.connectTimeout = .seconds(1) }
        defer { impatient.shutdown() }
        let silent = await self.failure(impatient, "https://silent.test:\(port)/")
        #expect(silent?.code == .connectTimeout)
        #expect(silent?.detail?.contains("CONNECT") == true)
    }

    @Test func tunnelledPlainHTTPWithCredentialsAndAnInterimAnswer() async throws {
        let proxy = try await ScriptedProxy.start()
        let origin = try await FaultServer.start(lifetime: 120)
        var settings = HTTPProxy(host: "127.0.0.1", port: proxy.port, credentials: Self.credentials)
        settings.tunnelsPlainHTTP = true
        settings.connectHeaderFields[.userAgent] = "salvo-test"
        let client = try self.client(.all(settings))
        defer { client.shutdown() }
        for label in ["auth", "interim"] {
            let response = try await client.execute(try get("http://\(label).test:\(origin.port)/ok"))
            #expect(response.status == .ok && response.text == "hello")
        }
        let connect = proxy.heads.first { $0.hasPrefix("CONNECT auth.test:") }
        #expect(connect == """
            CONNECT auth.test:\(origin.port) HTTP/1.1\r
            Host: auth.test:\(origin.port)\r
            Proxy-Authorization: Basic dXNlcjpzZWNyZXQ=\r
            User-Agent: salvo-test\r
            \r

            """)
        // Through a tunnel the origin gets origin-form and never the proxy's credentials.
        let seen = try origin.log().requests
        #expect(seen.count == 2 && seen.allSatisfy { $0.path == "/ok" && $0.header("Proxy-Authorization") == nil })
    }

    /// Fields meant for a forwarding proxy never reach an origin: not the caller's own
    /// `Proxy-Authorization` through a tunnel or on a direct request, nor after a redirect to
    /// a host that bypasses the proxy.
    @Test func proxyFieldsNeverReachAnOrigin() async throws {
        let proxy = try await ScriptedProxy.start()
        let origin = try await FaultServer.start(lifetime: 120)
        var tunnelling = HTTPProxy(host: "127.0.0.1", port: proxy.port)
        tunnelling.tunnelsPlainHTTP = true
        let client = try self.client(.all(tunnelling)) { $0.headerFields[.proxyAuthorization] = "Basic ZGVmYXVsdDp4" }
        defer { client.shutdown() }
        var request = try get("http://through.test:\(origin.port)/echo")
        request.headerFields[HTTPField.Name("Proxy-Connection")!] = "Keep-Alive"
        _ = try await client.execute(request)
        var direct = HTTPClient.RequestOptions()
        direct.proxy = ProxyConfiguration.none
        var own = try get(origin.url("/echo"))
        own.headerFields[.proxyAuthorization] = "Basic b3duOng="
        _ = try await client.execute(own, options: direct)

        // Forwarded to the proxy, then redirected to a host that goes direct.
        let forwarding = try self.client(.all(HTTPProxy(host: "127.0.0.1", port: proxy.port, credentials: Self.credentials),
                                              bypass: "127.0.0.1"))
        defer { forwarding.shutdown() }
        var viaProxy = try get("http://named.test/x")
        viaProxy.headerFields[.proxyAuthorization] = "Basic b3duOng="
        let echoed = try await forwarding.execute(viaProxy)
        // The request's own value wins over the configured credentials, once.
        #expect(echoed.text.components(separatedBy: "Proxy-Authorization").count == 2 && echoed.text.contains("b3duOng="))

        let seen = try origin.log().requests
        #expect(seen.count == 2)
        for request in seen {
            #expect(request.header("proxy-authorization") == nil, "\(request.path)")
            #expect(request.header("proxy-connection") == nil, "\(request.path)")
        }
    }

    @Test func aTargetThatWouldNameAnotherHostIsRefused() async throws {
        let proxy = try await ScriptedProxy.start()
        let client = try self.client(.all(HTTPProxy(host: "127.0.0.1", port: proxy.port)))
        defer { client.shutdown() }
        let sneaky = HTTPRequest(method: .get, scheme: "http", authority: "origin.test", path: "@evil.test/x")
        #expect(await errorCode { _ = try await client.execute(sneaky) } == .invalidRequest)
        #expect(proxy.heads.isEmpty)
    }

    // MARK: Choosing the proxy

    @Test func bypassOverridesAndTheEnvironment() async throws {
        let proxy = try await ScriptedProxy.start()
        let origin = try await FaultServer.start(lifetime: 120)
        let settings = HTTPProxy(host: "127.0.0.1", port: proxy.port)
        let bypassed = try self.client(.all(settings, bypass: "localhost, 127.0.0.0/8"))
        defer { bypassed.shutdown() }
        #expect(try await bypassed.execute(try get(origin.url("/ok"))).text == "hello")
        #expect(proxy.heads.isEmpty)

        let client = try self.client(.all(settings))
        defer { client.shutdown() }
        var direct = HTTPClient.RequestOptions()
        direct.proxy = ProxyConfiguration.none
        #expect(try await client.execute(try get(origin.url("/ok")), options: direct).text == "hello")
        #expect(proxy.heads.isEmpty)
        // The same URL through the proxy: its echo, and a connection of its own.
        #expect(try await client.execute(try get(origin.url("/ok"))).text.hasPrefix("GET http://127.0.0.1:"))
        #expect(proxy.heads.count == 1)

        let environment = try ProxyConfiguration.environment(["http_proxy": "127.0.0.1:\(proxy.port)", "NO_PROXY": "example.com,127.0.0.1"])
        let fromEnvironment = try self.client(environment)
        defer { fromEnvironment.shutdown() }
        #expect(try await fromEnvironment.execute(try get("http://named.test/x")).text.hasPrefix("GET http://named.test/x "))
        #expect(proxy.heads.count == 2)
        #expect(try await fromEnvironment.execute(try get(origin.url("/ok"))).text == "hello")
        #expect(proxy.heads.count == 2)
    }

    @Test func theProxysNameAndAddressFailAsTheProxys() async throws {
        let nobody = try freePort()
        let unresolved = try self.client(.all(HTTPProxy(host: "proxy.test", port: 3128))) {
            $0.nameResolution.resolver = { host, _ in throw TestServerError("no such host \(host)") }
        }
        defer { unresolved.shutdown() }
        let dns = await self.failure(unresolved, "http://origin.test/")
        #expect(dns?.code == .proxyDNSFailure)
        #expect(dns?.detail?.contains("proxy.test:3128") == true)

        let refusing = try self.client(.all(HTTPProxy(host: "127.0.0.1", port: nobody)))
        defer { refusing.shutdown() }
        let refused = await self.failure(refusing, "https://origin.test/")
        #expect(refused?.code == .connectionRefused)
        #expect(refused?.host == "127.0.0.1")
        #expect(refused?.detail?.contains("proxy") == true)
    }
}
