import HTTPTypes
import Testing
@testable import SalvoCore

@Suite struct RequestURLTests {
    @Test func parses() throws {
        let url = try RequestURL("HTTP://User:pw@Example.TEST:8080/a/b?c=d#frag")
        #expect(url.scheme == .http)
        #expect(url.host == "example.test")
        #expect(url.port == 8080)
        #expect(url.target == "/a/b?c=d")
        #expect(url.user == "User")
        #expect(url.password == "pw")
        #expect(url.key.authority == "example.test:8080")
    }

    @Test func defaults() throws {
        #expect(try RequestURL("http://h").target == "/")
        #expect(try RequestURL("http://h?q").target == "/?q")
        #expect(try RequestURL("http://h").port == 80)
        #expect(try RequestURL("https://h").port == 443)
        #expect(try RequestURL("https://h:443/").key.authority == "h")
    }

    @Test func ipv6() throws {
        let url = try RequestURL("http://[::1]:9000/x")
        #expect(url.host == "::1")
        #expect(url.port == 9000)
        #expect(url.key.authority == "[::1]:9000")
    }

    @Test(arguments: ["", "h/x", "http//h", "http://", "http://:80/", "http://h:0/", "http://h:65536/", "http://h:8x/",
                      "http://[::1/", "http://h h/", "http://h/\r\n", "http://[zz]/", "http://h:-1/"])
    func rejects(text: String) {
        do {
            _ = try RequestURL(text)
            Issue.record("accepted \(text.debugDescription)")
        } catch {
            #expect(error.code == .invalidURL, "\(text.debugDescription)")
        }
    }

    @Test func unsupportedScheme() {
        do {
            _ = try RequestURL("ftp://h/")
            Issue.record("accepted")
        } catch {
            #expect(error.code == .unsupportedScheme)
        }
    }

    @Test func httpRequestFromURL() throws {
        let request = try HTTPRequest(method: .get, url: "http://127.0.0.1:81/p?q=1")
        #expect(request.scheme == "http")
        #expect(request.authority == "127.0.0.1:81")
        #expect(request.path == "/p?q=1")
        #expect(try request.connectionKey() == ConnectionKey(scheme: .http, host: "127.0.0.1", port: 81))
    }
}
