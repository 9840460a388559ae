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
                      "http://[::1/", "http://h h/", "http://h/\r\n", "http://[zz]/", "http://h:-1/", "http://h:+80/",
                      "http://h: 80/", "http://bücher.example/", "http://[fe80::1%25]/", "http://[::1%25a b]/", "http://[1.2.3.4]/"])
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

    /// Numeric IPv4 forms mean what inet_aton (and curl, and browsers) read in them, and are
    /// sent as a dotted quad; what does not parse as one stays a name.
    @Test(arguments: [("127.1", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("2130706433", "127.0.0.1"),
                      ("0177.0.0.1", "127.0.0.1"), ("127.0.1", "127.0.0.1"), ("0x7F000001", "127.0.0.1"),
                      ("10.0.0.256", "10.0.0.256"), ("1.2.3.4.5", "1.2.3.4.5"), ("08.1.1.1", "08.1.1.1"),
                      ("4294967296", "4294967296"), ("0x", "0x"), ("1password.test", "1password.test"), ("127.0.0.1.", "127.0.0.1.")])
    func numericIPv4Forms(written: String, host: String) throws {
        let url = try RequestURL("http://\(written):8080/")
        #expect(url.host == host)
        #expect(url.key.authority == "\(host):8080")
    }

    @Test func ipv6FormsAndZones() throws {
        let long = try RequestURL("http://[0:0:0:0:0:FFFF:7F00:1]/")
        #expect(long.host == "::ffff:127.0.0.1")
        #expect(long.key.authority == "[::ffff:127.0.0.1]")
        let zoned = try RequestURL("http://[FE80::1%25eth0]:8080/x")
        #expect(zoned.host == "fe80::1%eth0", "the zone stays for connecting")
        #expect(zoned.key.authority == "[fe80::1]:8080", "but never reaches the Host header")
        #expect(try RequestURL("http://[fe80::1%eth0]/").host == "fe80::1%eth0")
    }

    @Test func nonASCIIGoesPercentEncodedOrIsRefused() throws {
        #expect(try RequestURL("http://h/caf\u{e9}?q=\u{1F600}").target == "/caf%C3%A9?q=%F0%9F%98%80")
        do {
            _ = try RequestURL("http://b\u{fc}cher.example/")
            Issue.record("accepted a non-ASCII host")
        } catch {
            #expect(error.detail?.contains("IDNA") == true)
        }
        var head: [UInt8] = []
        let raw = HTTPRequest(method: .get, scheme: "http", authority: "h", path: "/\u{e9}")
        try RequestEncoder.encodeHead(raw, body: .none, into: &head)
        #expect(String(decoding: head, as: UTF8.self).hasPrefix("GET /%C3%A9 HTTP/1.1\r\n"))
    }

    @Test func userinfoBecomesBasicCredentials() throws {
        let url = try RequestURL("http://us%65r:p%3Ass@h/")
        #expect(url.basicAuthorization == "Basic dXNlcjpwOnNz")
        #expect(try RequestURL("http://user@h/").basicAuthorization == "Basic dXNlcjo=")
        #expect(try RequestURL("http://h/").basicAuthorization == nil)
        let request = try HTTPRequest(method: .get, url: "http://user:secret@h/")
        #expect(request.headerFields[.authorization] == "Basic dXNlcjpzZWNyZXQ=")
        #expect(request.authority == "h", "userinfo never goes into the Host header")
        let explicit = try HTTPRequest(method: .get, url: "http://user:secret@h/", headerFields: [.authorization: "Bearer t"])
        #expect(explicit.headerFields[.authorization] == "Bearer t")
    }

    /// The per-request split of a plain `host[:port]` takes exactly letters, digits and
    /// `-._~` in a host; anything else goes to the full URL parser.
    @Test func plainHostsAreSplitByTheirBytes() {
        let hostBytes = Set(Array("-._~".utf8)).union(UInt8(ascii: "0")...UInt8(ascii: "9"))
            .union(UInt8(ascii: "A")...UInt8(ascii: "Z")).union(UInt8(ascii: "a")...UInt8(ascii: "z"))
        for byte in UInt8(0)...UInt8(127) where byte != UInt8(ascii: ":") {
            let authority = String(decoding: [UInt8(ascii: "h"), byte, UInt8(ascii: "t")], as: UTF8.self)
            let key = ConnectionKey(scheme: .http, authority: authority + ":81")
            #expect((key != nil) == hostBytes.contains(byte), "byte \(byte)")
            if let key { #expect(key.host == authority.lowercased() && key.port == 81) }
        }
        // Past ASCII (a byte of a UTF-8 sequence): the full parser's.
        #expect(ConnectionKey(scheme: .http, authority: "h\u{E9}t:81") == nil)
    }

    /// An authority longer than 15 bytes is split once per thread and then taken from the
    /// thread's cache — which must tell apart schemes (another default port), authorities that
    /// differ in one byte, the same text in other bytes, and never remember what the full
    /// parser had to mend.
    @Test func aThreadsLastHostIsKeptButNeverConfused() throws {
        func key(_ scheme: String, _ authority: String) throws -> (ConnectionKey, Bool) {
            let request = HTTPRequest(method: .get, scheme: scheme, authority: authority, path: "/")
            let (key, rewrite) = try request.canonicalConnectionKey()
            return (key, rewrite)
        }
        func remembered(_ scheme: String, _ authority: String) -> ConnectionKey? {
            PreparationCache.withCurrent { $0.rememberedKey(scheme: scheme, authority: authority) } ?? nil
        }
        let long = "service-a.internal.test"
        #expect(try key("http", long) == (ConnectionKey(scheme: .http, host: long, port: 80), false))
        #expect(remembered("http", long) == ConnectionKey(scheme: .http, host: long, port: 80))
        // The same bytes in a string of their own: found by comparing them, not the bits.
        let copy = String(decoding: Array(long.utf8), as: UTF8.self)
        #expect(remembered("http", copy) != nil)
        #expect(try key("http", copy) == (ConnectionKey(scheme: .http, host: long, port: 80), false))
        #expect(try key("https", long) == (ConnectionKey(scheme: .https, host: long, port: 443), false))
        #expect(try key("http", long + ":8080") == (ConnectionKey(scheme: .http, host: long, port: 8080), false))
        #expect(try key("http", "service-b.internal.test") == (ConnectionKey(scheme: .http, host: "service-b.internal.test", port: 80), false))
        // The same text in other bytes (a Kelvin sign is a K to Unicode, not to a host name):
        // not the remembered host — refused by the full parser, as it would be on its own.
        #expect(try key("http", "service-K.internal.test").0.host == "service-k.internal.test")
        #expect("service-\u{212A}.internal.test" == "service-K.internal.test")   // to String's ==
        #expect(throws: TransportError.self) { try key("http", "service-\u{212A}.internal.test") }
        // Mended by the full parser (userinfo): rewritten every time, never kept.
        for _ in 0..<2 {
            #expect(try key("http", "user:pw@service-c.internal.test") == (ConnectionKey(scheme: .http, host: "service-c.internal.test", port: 80), true))
        }
        #expect(remembered("http", "user:pw@service-c.internal.test") == nil)
        #expect(throws: TransportError.self) { try key("ftp", long) }
        #expect(throws: TransportError.self) { try key("http", long + ":0") }
    }

    /// A request built by hand with an odd authority goes out with the key's spelling.
    @Test func handBuiltAuthoritiesAreCanonicalized() throws {
        func canonical(_ authority: String) throws -> String? {
            let request = HTTPRequest(method: .get, scheme: "http", authority: authority, path: "/")
            let (key, rewrite) = try request.canonicalConnectionKey()
            return rewrite ? key.authority : nil
        }
        #expect(try canonical("127.0.0.1:8080") == nil)
        #expect(try canonical("example.test") == nil)
        #expect(try canonical("127.1:8080") == "127.0.0.1:8080")
        #expect(try canonical("2130706433") == "127.0.0.1")
        #expect(try canonical("u:p@h:81") == "h:81")
        #expect(try canonical("[::1]:81") == nil)
        #expect(try canonical("[0::1]:81") == "[::1]:81")
        #expect(try canonical("[fe80::1%25lo]") == "[fe80::1]")
    }

    @Test func base64() {
        #expect(Base64.encode(Array("".utf8)) == "")
        #expect(Base64.encode(Array("f".utf8)) == "Zg==")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        #expect(Base64.encode(Array("foo".utf8)) == "Zm9v")
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode([0xFF, 0xFE, 0x00]) == "//4A")
    }
}
