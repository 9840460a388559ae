import HTTPTypes
@testable import SalvoCore
import Testing

/// What preparing a request fixes before it reaches a loop: here, the bounds on waiting.
@Suite struct RequestPreparerTests {
    static func preparer(_ adjust: (inout HTTPClient.Configuration) -> Void = { _ in }) throws -> RequestPreparer {
        var configuration = HTTPClient.Configuration()
        adjust(&configuration)
        return RequestPreparer(configuration: configuration, tlsContexts: TLSContexts(primary: try TLSContext(configuration.tls)))
    }

    /// Every wait on a server is bounded by default: the head within 300 s of the call, and
    /// no silence longer than 300 s while a response is due.
    @Test func waitsAreBoundedByDefault() throws {
        let prepared = try Self.preparer().prepare(try HTTPRequest(method: .get, url: "http://a.test/"), body: nil, options: .init())
        #expect(prepared.readTimeout == .seconds(300))
        let headWithin = prepared.headDeadline.nanoseconds - prepared.startedAt.nanoseconds
        #expect(headWithin == 300_000_000_000)
        #expect(prepared.deadline == .distantFuture, "no total bound: a long download is not cut")
    }

    @Test func aRequestCanLiftOrChangeTheBounds() throws {
        let preparer = try Self.preparer()
        let request = try HTTPRequest(method: .get, url: "http://a.test/events")
        var unbounded = HTTPClient.RequestOptions()
        unbounded.readTimeout = .zero
        unbounded.headTimeout = .zero
        let quiet = try preparer.prepare(request, body: nil, options: unbounded)
        #expect(quiet.readTimeout == nil && quiet.headDeadline == .distantFuture)
        let short = try preparer.prepare(request, body: nil, options: .init(headTimeout: .seconds(2), readTimeout: .seconds(1)))
        #expect(short.readTimeout == .seconds(1))
        #expect(short.headDeadline.nanoseconds - short.startedAt.nanoseconds == 2_000_000_000)
    }

    @Test func aClientWithoutBoundsLeavesThemOff() throws {
        let preparer = try Self.preparer { $0.readTimeout = nil; $0.headTimeout = nil }
        let prepared = try preparer.prepare(try HTTPRequest(method: .get, url: "http://a.test/"), body: nil, options: .init())
        #expect(prepared.readTimeout == nil && prepared.headDeadline == .distantFuture)
    }

    /// A caller's own `Proxy-Authorization` is the proxy's: after a redirect to another host it
    /// goes on while the same proxy carries the request, and to no other proxy or origin.
    @Test func aProxyAuthorizationFollowsItsProxyOnly() throws {
        let proxyA = HTTPProxy(host: "10.0.0.1", port: 3128)
        let proxyB = HTTPProxy(host: "10.0.0.2", port: 3128)
        let viaA = try Self.preparer { $0.proxy = .all(proxyA) }
        let viaB = try Self.preparer { $0.proxy = .all(proxyB) }
        let direct = try Self.preparer()
        var next = try HTTPRequest(method: .get, url: "http://b.test/next")
        next.headerFields[.proxyAuthorization] = "Basic dXNlcjpzZWNyZXQ="
        var first = ConnectionKey(scheme: .http, host: "a.test", port: 80)
        first.proxy = proxyA
        func sends(_ prepared: PreparedRequest) -> Bool {
            String(decoding: prepared.head, as: UTF8.self).contains("Proxy-Authorization: Basic dXNlcjpzZWNyZXQ=")
        }
        #expect(sends(try viaA.prepare(next, body: nil, options: .init(), redirectedFrom: first)), "the same proxy")
        #expect(!sends(try viaB.prepare(next, body: nil, options: .init(), redirectedFrom: first)), "another proxy")
        #expect(!sends(try direct.prepare(next, body: nil, options: .init(), redirectedFrom: first)), "an origin")
        #expect(sends(try viaA.prepare(next, body: nil, options: .init())), "a first request through a forwarding proxy")
    }

    /// The client's default fields follow the rule both layers share: each one the request
    /// lacks, with all its values; and the body's type is written after the framing, where
    /// curl writes it.
    @Test func defaultFieldsAndTheBodysType() throws {
        let preparer = try Self.preparer {
            $0.headerFields.append(HTTPField(name: .accept, value: "application/json"))
            $0.headerFields.append(HTTPField(name: .accept, value: "text/plain;q=0.5"))
            $0.userAgent = nil
        }
        var request = try HTTPRequest(method: .post, url: "http://a.test/notes")
        request.headerFields[HTTPField.Name("X-Trace")!] = "t1"
        let prepared = try preparer.prepare(request, body: .string("{}", contentType: "application/json"), options: .init())
        let head = String(decoding: prepared.head, as: UTF8.self)
        #expect(head == "POST /notes HTTP/1.1\r\nHost: a.test\r\nX-Trace: t1\r\nAccept: application/json\r\n"
                    + "Accept: text/plain;q=0.5\r\nAccept-Encoding: gzip, deflate\r\nContent-Length: 2\r\n"
                    + "Content-Type: application/json\r\n\r\n", "\(head)")
    }

    /// Once its client (or the client it derives from) is shut down, nothing more is prepared:
    /// not a new request, nor a redirect's next one, which an owner prepares on its loop.
    @Test func nothingIsPreparedAfterAShutdown() throws {
        let base = ClientLife(base: nil)
        let derived = ClientLife(base: base)
        let preparer = RequestPreparer(configuration: HTTPClient.Configuration(),
                                       tlsContexts: TLSContexts(primary: try TLSContext(TLSConfiguration())), life: derived)
        let request = try HTTPRequest(method: .get, url: "http://a.test/next")
        _ = try preparer.prepare(request, body: nil, options: .init())
        #expect(base.stop())
        #expect(!base.stop(), "once")
        #expect(throws: TransportError(.shutdown, phase: .request)) {
            try preparer.prepare(request, body: nil, options: .init(), redirectedFrom: ConnectionKey(scheme: .http, host: "a.test", port: 80))
        }
    }

    /// The engine writes the body's own type, not a default one, as the typed layer does.
    @Test func aDefaultContentTypeYieldsToTheBodys() throws {
        let preparer = try Self.preparer { $0.headerFields[.contentType] = "application/json"; $0.userAgent = nil }
        let request = try HTTPRequest(method: .post, url: "http://a.test/upload")
        let prepared = try preparer.prepare(request, body: .bytes([1, 2], contentType: "multipart/form-data; boundary=b1"), options: .init())
        let head = String(decoding: prepared.head, as: UTF8.self)
        #expect(head.contains("Content-Type: multipart/form-data; boundary=b1\r\n"))
        #expect(!head.contains("application/json"), "\(head)")
        let plain = try preparer.prepare(request, body: .bytes([1, 2]), options: .init())
        #expect(String(decoding: plain.head, as: UTF8.self).contains("Content-Type: application/json\r\n"), "a body without a type takes the default")
    }
}
