import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore

/// Redirects over real connections: chains, limits, loops, method changes, what crosses
/// to another origin (a second server on 127.0.0.2), and the CLI's -L.
@Suite(.serialized) struct RedirectIntegrationTests {
    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    @Test func chainsAreFollowedOnTheSameConnection() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient { $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        let response = try await client.execute(try get(server.url("/chain?n=5")))
        #expect(response.status == .ok)
        #expect(response.text == "end of chain")
        #expect(response.redirectChain.count == 6)
        #expect(response.redirectChain.last == server.url("/chain?n=0"))
        let log = try server.log()
        #expect(log.requests.map(\.path) == (0...5).reversed().map { "/chain?n=\($0)" })
        #expect(log.connections == 1, "each redirect reused the released connection")

        // Streaming and completion handlers follow too.
        let streamed = try await client.stream(try get(server.url("/chain?n=2")))
        var text: [UInt8] = []
        for try await chunk in streamed.body { text += chunk }
        #expect(String(decoding: text, as: UTF8.self) == "end of chain")
        #expect(streamed.redirectChain.count == 3)
        let viaCallback = await withCheckedContinuation { continuation in
            client.execute(try! get(server.url("/chain?n=3"))) { continuation.resume(returning: $0) }
        }
        #expect(try viaCallback.get().redirectChain.count == 4)
    }

    @Test func limitsLoopsAndOffSwitch() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let tooMany = await errorCode { _ = try await client.execute(try get(server.url("/chain?n=11"))) }
        #expect(tooMany == .tooManyRedirects)
        #expect(try await client.execute(try get(server.url("/chain?n=10"))).status == .ok)
        let few = await errorCode {
            _ = try await client.execute(try get(server.url("/chain?n=3")), options: .init(redirects: RedirectPolicy(maxRedirects: 2)))
        }
        #expect(few == .tooManyRedirects)
        let loop = await errorCode { _ = try await client.execute(try get(server.url("/ping"))) }
        #expect(loop == .tooManyRedirects, "a loop ends at the count")
        let off = try await client.execute(try get(server.url("/chain?n=1")), options: .init(redirects: .disabled))
        #expect(off.status == .found)
        #expect(off.headerFields[.location] == "chain?n=0")
        #expect(off.redirectChain.isEmpty)
        let noLocation = try await client.execute(try get(server.url("/redirect?code=301")))
        #expect(noLocation.status == .movedPermanently)
        let refused = await errorCode { _ = try await client.execute(try get(server.url("/redirect?to=ftp%3A%2F%2F127.0.0.1%2Ff"))) }
        #expect(refused == .redirectRefused)
    }

    /// A redirect's body is skipped, but not read forever: past 1 MiB the connection is
    /// dropped and the redirect followed all the same.
    @Test func longRedirectBodiesAreNotRead() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient { $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        let small = try await client.execute(try get(server.url("/redirect?pad=100000&to=%2Fok")))
        #expect(small.text == "hello")
        #expect(try server.log().connections == 1, "a short redirect body is read and the connection reused")
        let long = try await client.execute(try get(server.url("/redirect?pad=50000000&to=%2Fok")))
        #expect(long.text == "hello")
        #expect(try server.log().connections == 2, "the long one's connection was closed")
        let refused = await errorCode {
            _ = try await client.execute(try get(server.url("/redirect?pad=50000000&to=ftp%3A%2F%2Fx%2F")))
        }
        #expect(refused == .redirectRefused)
    }

    @Test func methodsAndBodiesAcrossRedirects() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        func post(_ code: Int) async throws -> FaultServerLog.Request? {
            try server.resetLog()
            var request = try HTTPRequest(method: .post, url: server.url("/redirect?code=\(code)&to=%2Fecho"))
            request.headerFields[.contentType] = "text/plain"
            let response = try await client.execute(request, body: .string("payload"))
            #expect(response.status == .ok)
            return try server.log().requests.last
        }
        for code in [301, 302, 303] {
            let final = try await post(code)
            #expect(final?.method == "GET", "\(code)")
            #expect(final?.bodyLength == 0)
            #expect(final?.header("content-type") == nil)
            #expect(final?.header("content-length") == nil)
        }
        for code in [307, 308] {
            let final = try await post(code)
            #expect(final?.method == "POST", "\(code)")
            #expect(final?.bodyLength == 7)
            #expect(final?.header("content-type") == "text/plain")
        }
    }

    /// Leaving the origin drops credentials: asserted on what the second server received.
    @Test func credentialsDoNotCrossOrigins() async throws {
        let first = try await FaultServer.start()
        defer { first.stop() }
        let second = try await FaultServer.start(host: "127.0.0.2")
        defer { second.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let secret = HTTPField.Name("X-Tenant-Secret")!
        var request = try get(first.url("/redirect?to=") + Self.encoded(second.url("/echo")))
        request.headerFields[.authorization] = "Bearer token"
        request.headerFields[.cookie] = "session=1"
        request.headerFields[.proxyAuthorization] = "Basic eA=="
        request.headerFields[HTTPField.Name("X-Api-Key")!] = "k"
        request.headerFields[secret] = "t"
        request.headerFields[.accept] = "application/json"
        request.headerFields[HTTPField.Name("Host")!] = "internal.example"
        let response = try await client.execute(request, options: .init(redirects: RedirectPolicy(credentialFields: .standard.adding([secret]))))
        #expect(response.status == .ok)
        #expect(response.redirectChain == [request.urlString, second.url("/echo")])
        let received = try #require(try second.log().requests.last)
        #expect(received.header("authorization") == nil)
        #expect(received.header("cookie") == nil)
        #expect(received.header("proxy-authorization") == nil, "no proxy carries it: it never reaches an origin")
        #expect(received.header("x-api-key") == nil, "dropped by default, as the logging middleware redacts it")
        #expect(received.header("x-tenant-secret") == nil, "the caller's own credential field")
        #expect(received.header("accept") == "application/json")
        #expect(received.header("host") == "127.0.0.2:\(second.port)")

        // Same origin: everything stays.
        var same = try get(first.url("/redirect?to=%2Fecho"))
        same.headerFields[.authorization] = "Bearer token"
        same.headerFields[.cookie] = "session=1"
        same.headerFields[HTTPField.Name("Host")!] = "internal.example"
        _ = try await client.execute(same)
        let kept = try #require(try first.log().requests.last)
        #expect(kept.header("authorization") == "Bearer token")
        #expect(kept.header("cookie") == "session=1")
        #expect(kept.header("host") == "internal.example")
    }

    /// A client's default fields (`Configuration.headerFields`) are the first request's: a
    /// credential among them is dropped on the way to another origin like any other, and does
    /// not come back for the next request of the chain.
    @Test func defaultCredentialsDoNotCrossOriginsEither() async throws {
        let first = try await FaultServer.start()
        defer { first.stop() }
        let second = try await FaultServer.start(host: "127.0.0.2")
        defer { second.stop() }
        let client = try makeClient {
            $0.headerFields[.authorization] = "Bearer default"
            $0.headerFields[HTTPField.Name("X-Tenant")!] = "acme"
        }
        defer { client.shutdown() }
        let response = try await client.execute(try get(first.url("/redirect?to=") + Self.encoded(second.url("/echo"))))
        #expect(response.status == .ok)
        #expect(try first.log().requests.last?.header("authorization") == "Bearer default")
        let received = try #require(try second.log().requests.last)
        #expect(received.header("authorization") == nil)
        #expect(received.header("x-tenant") == "acme")
    }

    /// Userinfo in a URL is sent as Basic credentials, to that URL's origin only; a Location
    /// with userinfo brings its own only for the same host and port (as curl).
    @Test func userinfoCredentialsStayWithTheirOrigin() async throws {
        let first = try await FaultServer.start()
        defer { first.stop() }
        let second = try await FaultServer.start(host: "127.0.0.2")
        defer { second.stop() }
        let client = try makeClient()
        defer { client.shutdown() }
        let withUser = "http://alice:s%40cret@127.0.0.1:\(first.port)"
        _ = try await client.execute(try get(withUser + "/redirect?to=" + Self.encoded(second.url("/echo"))))
        #expect(try first.log().requests.last?.header("authorization") == "Basic YWxpY2U6c0BjcmV0")
        #expect(try first.log().requests.last?.header("host") == "127.0.0.1:\(first.port)")
        #expect(try second.log().requests.last?.header("authorization") == nil)
        let located = "http://bob:pw@127.0.0.2:\(second.port)/echo"
        _ = try await client.execute(try get(first.url("/redirect?to=") + Self.encoded(located)))
        #expect(try second.log().requests.last?.header("authorization") == nil, "credentials a redirect chose for another host")
        let sameHost = "http://bob:pw@127.0.0.1:\(first.port)/echo"
        _ = try await client.execute(try get(first.url("/redirect?to=") + Self.encoded(sameHost)))
        #expect(try first.log().requests.last?.header("authorization") == "Basic Ym9iOnB3")

        // Numeric host forms reach the server as a dotted quad, in the Host header too.
        let numeric = HTTPRequest(method: .get, scheme: "http", authority: "0x7f.1:\(first.port)", path: "/echo")
        _ = try await client.execute(numeric)
        #expect(try first.log().requests.last?.header("host") == "127.0.0.1:\(first.port)")
    }
}
