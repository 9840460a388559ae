import HTTPTypes
import Testing
@testable import SalvoCore
import SalvoTransport

@Suite struct RequestEncoderTests {
    /// The bit-set tchar test against RFC 9110 §5.6.2 spelled out, for every byte.
    @Test func tokenBytesAreRFC9110s() {
        let tchar = Set(Array("!#$%&'*+-.^_`|~".utf8)).union(UInt8(ascii: "0")...UInt8(ascii: "9"))
            .union(UInt8(ascii: "A")...UInt8(ascii: "Z")).union(UInt8(ascii: "a")...UInt8(ascii: "z"))
        for byte in UInt8.min...UInt8.max {
            #expect(HTTPToken.isTokenByte(byte) == tchar.contains(byte), "byte \(byte)")
        }
        // A whole name: any one byte outside the set, at any place, makes it no token.
        func isToken(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { HTTPToken.isToken($0) } }
        #expect(!isToken([]))
        #expect(isToken(Array("Content-Length".utf8)))
        for byte in UInt8.min...UInt8.max {
            for place in [0, 3, 6] {
                var name = Array("X-Field".utf8)
                name[place] = byte
                #expect(isToken(name) == tchar.contains(byte), "byte \(byte) at \(place)")
            }
            // Names long enough to be read a word at a time: each place of each word, the
            // last (overlapping) word's too.
            for length in [8, 9, 15, 16, 17, 23] {
                for place in [0, 5, 7, length / 2, length - 2, length - 1] {
                    var name = Array(repeating: UInt8(ascii: "a"), count: length)
                    name[place] = byte
                    #expect(isToken(name) == tchar.contains(byte), "byte \(byte) at \(place) of \(length)")
                }
            }
        }
        // Random names of every length up to 40 over tchars and their neighbours.
        var random = SystemRandomNumberGenerator()
        let alphabet = Array(0...0x7F as ClosedRange<UInt8>) + [0x80, 0xC3, 0xFF]
        for _ in 0..<5000 {
            let length = Int.random(in: 1...40, using: &random)
            let name = (0..<length).map { _ in Bool.random(using: &random) ? UInt8(ascii: "k") : alphabet.randomElement(using: &random)! }
            #expect(isToken(name) == name.allSatisfy(tchar.contains), "\(name)")
        }
    }

    func encode(_ request: HTTPRequest, _ body: RequestBodyLength = .none) throws -> String {
        var buffer: [UInt8] = []
        try RequestEncoder.encodeHead(request, body: body, into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    @Test func simpleGet() throws {
        var request = HTTPRequest(method: .get, scheme: "http", authority: "example.test:8080", path: "/a?b=c")
        request.headerFields[.accept] = "*/*"
        #expect(try encode(request) == "GET /a?b=c HTTP/1.1\r\nHost: example.test:8080\r\nAccept: */*\r\n\r\n")
    }

    @Test func framingIsTheEncodersToDecide() throws {
        var request = HTTPRequest(method: .post, scheme: "http", authority: "h", path: "/")
        request.headerFields[.contentLength] = "999"
        request.headerFields[.transferEncoding] = "gzip"
        #expect(try encode(request, .known(3)) == "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n")
        #expect(try encode(request, .unknown) == "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(try encode(request, .none) == "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
        let get = HTTPRequest(method: .get, scheme: "http", authority: "h", path: "/")
        #expect(try encode(get, .none) == "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try encode(get, .known(1234567)) == "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1234567\r\n\r\n")
    }

    @Test func explicitHostOverridesTheAuthorityOnce() throws {
        var request = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:80", path: "/")
        request.headerFields.append(HTTPField(name: HTTPField.Name("Host")!, value: "virtual.test"))
        request.headerFields.append(HTTPField(name: HTTPField.Name("Host")!, value: "second.test"))
        #expect(try encode(request) == "GET / HTTP/1.1\r\nHost: virtual.test\r\n\r\n")
    }

    @Test(arguments: ["/a b", "/a\r\nX: y", "/a\0", "/\u{7F}"])
    func badTargetsNeverReachTheWire(path: String) {
        // Either swift-http-types legalizes the byte on the way in, or the encoder refuses it:
        // the request line never carries a space, a control character or a line break.
        let request = HTTPRequest(method: .get, scheme: "http", authority: "h", path: path)
        do {
            let text = try encode(request)
            let line = text.utf8.prefix(while: { $0 != 0x0D })
            #expect(line.filter { $0 == 0x20 }.count == 2, "\(text.debugDescription)")
            #expect(!line.contains(where: { $0 < 0x20 || $0 == 0x7F }), "\(text.debugDescription)")
        } catch {
            #expect((error as? TransportError)?.code == .invalidRequest)
        }
    }

    @Test func badAuthorityIsRefused() {
        let request = HTTPRequest(method: .get, scheme: "http", authority: "h\r\nX: y", path: "/")
        #expect(throws: TransportError.self) { try encode(request) }
    }

    @Test func headerValuesCannotInjectLines() throws {
        // swift-http-types turns CR/LF into spaces on the way in; the wire never sees them.
        var request = HTTPRequest(method: .get, scheme: "http", authority: "h", path: "/")
        request.headerFields[.userAgent] = "a\r\nInjected: yes"
        let text = try encode(request)
        #expect(!text.contains("\r\nInjected"))
    }

    @Test func decimal() {
        for value in [0, 7, 10, 99, 100, 65535, Int.max] {
            var buffer: [UInt8] = []
            RequestEncoder.appendDecimal(value, into: &buffer)
            #expect(String(decoding: buffer, as: UTF8.self) == String(value))
        }
    }
}
