import Foundation
import HTTPTypes
@testable import SalvoCore
import SalvoTestSupport
import Synchronization
import Testing

/// Prepared calls: a template's parameters, fields and body spliced into a head encoded
/// once (unit tests, no sockets), and calls whose responses are lent to a handler, against
/// the scripted server — bad templates, handlers that throw, bodies past the limit,
/// redirects left alone, cancellation and timeouts as for `execute`.
@Suite struct PreparedCallTests {
    // MARK: Templates and heads, without sockets

    @Test func templateParametersAreFoundInThePathAndTheQuery() throws {
        let url = try TemplateURL("http://example.test/users/{id}/orders?page={page}&size=10")
        #expect(url.names == ["id", "page"])
        #expect(url.places == [.path, .query])
        #expect(url.marked == "http://example.test/users/\(TemplateURL.marker(0))/orders?page=\(TemplateURL.marker(1))&size=10")
    }

    @Test func badTemplatesAreRefused() {
        for template in ["http://{host}/x", "http://example.test/{", "http://example.test/}", "http://example.test/{}",
                         "http://example.test/{a b}", "http://example.test/x#{frag}", "{scheme}://example.test/"] {
            #expect(throws: TransportError.self, "\(template)") { try TemplateURL(template) }
        }
    }

    @Test func valuesArePercentEncodedForWhereTheyLand() {
        func encoded(_ value: String, _ place: TemplateURL.Place) -> String {
            var bytes: [UInt8] = []
            TemplateURL.encode(value, for: place, into: &bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        #expect(encoded("a/b c", .path) == "a%2Fb%20c")
        #expect(encoded("a=b&c+d", .path) == "a=b&c+d")
        #expect(encoded("a=b&c+d", .query) == "a%3Db%26c%2Bd")
        #expect(encoded("a/b?c", .query) == "a/b?c")
        #expect(encoded("é%\r\n", .path) == "%C3%A9%25%0D%0A")
        #expect(encoded("-._~!$'()*,:@", .path) == "-._~!$'()*,:@")
        #expect(encoded("a;b", .path) == "a%3Bb")
        #expect(encoded("a;b", .query) == "a%3Bb")
    }

    func head(_ text: String) -> [UInt8] { Array(text.replacingOccurrences(of: "\n", with: "\r\n").utf8) }

    @Test func aHeadIsSplicedWithTheCallsValues() throws {
        let url = try TemplateURL("http://h.test/u/{id}?q={q}")
        let prepared = head("POST /u/\(TemplateURL.marker(0))?q=\(TemplateURL.marker(1)) HTTP/1.1\nhost: h.test\ncontent-length: \(PreparedHead.lengthMarker)\n\n")
        let spliced = try PreparedHead(prepared, url: url, sendsBody: true)
        let call = try spliced.head(parameters: ["a b", "x&y"], fields: [.init("X-Trace")!: "7"], bodyLength: 12)
        #expect(String(decoding: call, as: UTF8.self) == String(decoding: head("POST /u/a%20b?q=x%26y HTTP/1.1\nhost: h.test\ncontent-length: 12\nX-Trace: 7\n\n"), as: UTF8.self))
        #expect(try spliced.url(["a b", "x&y"]) == "http://h.test/u/a%20b?q=x%26y")
        // A parameter's value holding another's marker stays where it is put.
        #expect(try spliced.url([TemplateURL.marker(1), "../x"]) == "http://h.test/u/\(TemplateURL.marker(1))?q=../x")
        for value in ["", ".", ".."] {
            #expect(throws: TransportError.self) { try spliced.head(parameters: [value, "q"], fields: [:], bodyLength: 0) }
        }
    }

    /// A GET head for `template` (an http://h.test URL) as the client would prepare it.
    func prepared(_ template: String) throws -> PreparedHead {
        let url = try TemplateURL(template)
        let target = String(url.marked.dropFirst("http://h.test".count))
        return try PreparedHead(head("GET \(target) HTTP/1.1\nhost: h.test\n\n"), url: url, sendsBody: false)
    }

    @Test func valuesCannotMakeDotOrEmptySegments() throws {
        let beside = try self.prepared("http://h.test/x/{a}{b}/y")
        #expect(throws: TransportError.self) { try beside.head(parameters: [".", "."], fields: [:], bodyLength: 0) }
        #expect(throws: TransportError.self) { try beside.head(parameters: ["", ""], fields: [:], bodyLength: 0) }
        #expect(throws: TransportError.self) { try beside.url([".", ""]) }
        _ = try beside.head(parameters: [".", "a"], fields: [:], bodyLength: 0)
        let dotted = try self.prepared("http://h.test/x/{a}.")
        #expect(throws: TransportError.self) { try dotted.head(parameters: ["."], fields: [:], bodyLength: 0) }
        // An empty name before a literal suffix is a segment still.
        let json = try self.prepared("http://h.test/x/{a}.json")
        #expect(String(decoding: try json.head(parameters: [""], fields: [:], bodyLength: 0), as: UTF8.self).hasPrefix("GET /x/.json "))
        // In the query a dot is data.
        let query = try self.prepared("http://h.test/x?q={q}")
        _ = try query.head(parameters: [".."], fields: [:], bodyLength: 0)
    }

    @Test func aHeadWithoutGapsIsSentAsPrepared() throws {
        let prepared = head("GET / HTTP/1.1\nhost: h.test\n\n")
        let spliced = try PreparedHead(prepared, url: try TemplateURL("http://h.test/"), sendsBody: false)
        #expect(try spliced.head(parameters: [], fields: [:], bodyLength: 0) == prepared)
    }

    @Test func aCallsOwnFieldsCannotFrameOrSplitTheHead() throws {
        let spliced = try PreparedHead(head("GET / HTTP/1.1\nhost: h.test\n\n"), url: try TemplateURL("http://h.test/"), sendsBody: false)
        for name in ["Content-Length", "Transfer-Encoding", "Host", "Connection", "Proxy-Authorization", "Expect", "TE"] {
            let fields = HTTPFields([HTTPField(name: .init(name)!, value: "x")])
            #expect(throws: TransportError.self, "\(name)") { try PreparedHead.check(fields, besides: []) }
        }
        // Nor one the template or the client sends already.
        #expect(throws: TransportError.self) { try PreparedHead.check([.authorization: "Bearer b"], besides: ["authorization"]) }
        try PreparedHead.check([.authorization: "Bearer b"], besides: ["user-agent"])
        // A value cannot end its line (HTTPField itself blanks CR and LF; NUL is refused).
        let injected = try spliced.head(parameters: [], fields: [.init("X-Bad")!: "a\r\nInjected: 1"], bodyLength: 0)
        #expect(!String(decoding: injected, as: UTF8.self).contains("\r\nInjected"))
    }

    // MARK: Calls against the scripted server

    struct Echo: Decodable { let path: String; let method: String; let headers: [[String]]; let conn: Int }

    @Test func parametersFieldsAndTheLentResponse() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        var template = RequestTemplate(.get, server.url("/{route}?user={user}"))
        template.headerFields[.accept] = "application/json"
        let call = try client.prepare(template)
        #expect(call.parameterNames == ["route", "user"])
        try await withWatchdog {
            for user in ["ann", "b&b=c", "é"] {
                let echo = try await call.send(["echo", user], fields: [.init("X-Call")!: user == "ann" ? "1" : "2"]) { response in
                    #expect(response.status == .ok)
                    #expect(response.value(of: .contentType) == "application/json")
                    #expect(response.number(of: .contentLength) == response.bodyCount)
                    #expect(response.withValue(of: .contentType) { $0.count } == "application/json".utf8.count)
                    return try JSONDecoder().decode(Echo.self, from: Data(response.bodyBytes))
                }
                var expected: [UInt8] = []
                TemplateURL.encode(user, for: .query, into: &expected)
                #expect(echo.path == "/echo?user=" + String(decoding: expected, as: UTF8.self))
                #expect(echo.headers.contains(["Accept", "application/json"]) || echo.headers.contains(["accept", "application/json"]))
                #expect(echo.headers.contains { $0.first?.lowercased() == "x-call" })
            }
        }
    }

    @Test func bodiesOfEveryLengthAndTheCompletionForm() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let call = try client.prepare(RequestTemplate(.post, server.url("/echo-body"), sendsBody: true))
        try await withWatchdog {
            for size in [0, 1, 1000, 70_000] {
                let body = (0..<size).map { UInt8(truncatingIfNeeded: $0) }
                let echoed = try await call.send(body: body) { response in response.bodyBytes }
                #expect(echoed == body)
            }
            let body = Array("over the completion form".utf8)
            let result = await withCheckedContinuation { (done: CheckedContinuation<Result<String, any Error>, Never>) in
                call.send(body: body, handler: { response in response.bodyText }) { result in
                    #expect(EventLoop.current != nil, "completions run on the loop")
                    done.resume(returning: result)
                }
            }
            #expect(try result.get() == "over the completion form")
        }
    }

    struct CheckFailed: Error, Equatable { let status: Int }

    @Test func aHandlerThatThrowsFailsItsCallAloneAndTheConnectionStays() async throws {
        let server = try await FaultServer.start()
        defer { server.stop() }
        let client = try makeClient { $0.threads = 1 }
        defer { client.shutdown() }
        let call = try client.prepare(RequestTemplate(.get, server.url("/status?code={code}")))
        try await withWatchdog {
            await #expect(throws: CheckFailed(status: 503)) {
                try await call.send(["503"]) { response in
                    guard response.status == .ok else { throw CheckFailed(status: response.status.code) }
                    return response.status
                }
            }
            let status = try await call.send(["200"]) { $0.status }
            #expect(status == .ok)
        }
        #expect(try server.log().connections == 1, "the connection outlived the handler's error")
    }

    @Test func aBodyPastTheLimitIsATypedErrorAndTheNextCallGoesOn() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        var template = RequestTemplate(.get, server.url("/big?n={n}"))
        template.maxBodySize = 1000
        let call = try client.prepare(template)
        try await withWatchdog {
            for size in ["100000", "5000000"] {
                do {
                    _ = try await call.send([size]) { $0.bodyCount }
                    Issue.record("a \(size)-byte body was lent past a 1000-byte limit")
                } catch let error as TransportError {
                    #expect(error.code == .bodyTooLarge)
                }
            }
            let count = try await call.send(["1000"]) { $0.bodyCount }
            #expect(count == 1000)
        }
    }

    @Test func theBodyLimitFallsBackToTheOptionsAndHeadsOfBodilessAnswersPass() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.maxBodySize = 500 }
        defer { client.shutdown() }
        var limited = RequestTemplate(.get, server.url("/big?n={n}"))
        limited.options.maxBodySize = 1000
        let call = try client.prepare(limited)
        #expect(try await call.send(["1000"]) { $0.bodyCount } == 1000, "the options' limit, not the client's")
        do {
            _ = try await call.send(["1001"]) { $0.bodyCount }
            Issue.record("1001 bytes lent past a 1000-byte limit")
        } catch {
            #expect((error as? TransportError)?.code == .bodyTooLarge)
        }
        // A HEAD answer announces a body that never comes: no limit applies to it.
        var head = RequestTemplate(.head, server.url("/big?n=5000000"))
        head.maxBodySize = 10
        let status = try await client.prepare(head).send { $0.status }
        #expect(status == .ok)
    }

    @Test func redirectsAreLentAsTheyCame() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let call = try client.prepare(RequestTemplate(.get, server.url("/redirect?code=302&to=/ok")))
        let (status, location) = try await call.send { ($0.status.code, $0.value(of: .location)) }
        #expect(status == 302)
        #expect(location == "/ok")
    }

    @Test func templatesAndCallsThatCannotBeSentAreRefused() async throws {
        let client = try makeClient()
        defer { client.shutdown() }
        var follows = RequestTemplate(.get, "http://127.0.0.1:1/")
        follows.options.redirects = RedirectPolicy(follow: true)
        var decodes = RequestTemplate(.get, "http://127.0.0.1:1/")
        decodes.options.decompression = .enabled
        var expects = RequestTemplate(.post, "http://127.0.0.1:1/", sendsBody: true)
        expects.options.expectContinue = true
        for template in [follows, decodes, expects] {
            #expect(throws: TransportError.self) { try client.prepare(template) }
        }
        #expect(throws: TransportError.self) { try client.prepare(RequestTemplate(.get, "ftp://127.0.0.1/{x}")) }
        #expect(throws: TransportError.self) { try client.prepare(RequestTemplate(.get, "http://127.0.0.1:1/{x}/{x}")) }
        #expect(throws: TransportError.self) {
            try client.prepare(RequestTemplate(.post, "http://127.0.0.1:1/", headerFields: [.expect: "100-continue"], sendsBody: true))
        }
        // Refused before anything is sent (port 1 would refuse the connection otherwise: a
        // different error).
        let upload = try client.prepare(RequestTemplate(.post, "http://127.0.0.1:1/", headerFields: [.authorization: "a"], sendsBody: true))
        func refused(_ call: () async throws -> HTTPResponse.Status) async {
            do {
                _ = try await call()
                Issue.record("sent")
            } catch {
                #expect((error as? TransportError)?.code == .invalidRequest, "\(error)")
            }
        }
        await refused { try await upload.send { $0.status } }
        await refused { try await upload.send(fields: [.authorization: "b"], body: []) { $0.status } }
        await refused { try await upload.send(fields: [.userAgent: "mine"], body: []) { $0.status } }
        let call = try client.prepare(RequestTemplate(.get, "http://127.0.0.1:1/{x}"))
        await refused { try await call.send([]) { $0.status } }
        await refused { try await call.send(["a"], body: [1]) { $0.status } }
        await refused { try await call.send([".."]) { $0.status } }
    }

    @Test func timeoutsAndCancellationEndACallAsTheyEndExecute() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        var template = RequestTemplate(.get, server.url("/slow-head?ms={ms}"))
        template.options.timeout = .milliseconds(300)
        let call = try client.prepare(template)
        try await withWatchdog {
            do {
                _ = try await call.send(["5000"]) { $0.status }
                Issue.record("a 5 s answer beat a 300 ms timeout")
            } catch let error as TransportError {
                #expect(error.code == .totalTimeout)
            }
            let waiting = Task { try await call.send(["5000"]) { $0.status } }
            try await Task.sleep(for: .milliseconds(100))
            waiting.cancel()
            do {
                _ = try await waiting.value
                Issue.record("a cancelled call answered")
            } catch let error as TransportError {
                #expect(error.code == .cancelled)
            }
            // The completion form's handle cancels too.
            let result = await withCheckedContinuation { (done: CheckedContinuation<Result<HTTPResponse.Status, any Error>, Never>) in
                let handle = call.send(["5000"], handler: { $0.status }) { done.resume(returning: $0) }
                handle.cancel()
            }
            if case .failure(let error) = result {
                #expect((error as? TransportError)?.code == .cancelled)
            } else {
                Issue.record("a cancelled call answered")
            }
        }
    }

    /// A call made on a loop's thread is served by the owner of an earlier call that ended
    /// there; a handle kept from that earlier call names it alone, so cancelling through it
    /// reaches nothing of the later call.
    @Test func aHandleKeptFromAnEarlierCallCannotCancelALaterOne() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.threads = 1 }
        defer { client.shutdown() }
        let call = try client.prepare(RequestTemplate(.get, server.url("/slow-head?ms={ms}")))
        let loop = client.group.loops[0]
        try await withWatchdog {
            let first = Mutex<RequestHandle?>(nil)
            let status = await withCheckedContinuation { (done: CheckedContinuation<HTTPResponse.Status?, Never>) in
                loop.execute {
                    let handle = call.send(["1"], handler: { $0.status }) { done.resume(returning: try? $0.get()) }
                    first.withLock { $0 = handle }
                }
            }
            #expect(status == .ok)
            let earlier = try #require(first.withLock { $0 })
            // Made on the loop once the first call is over: its owner serves this one.
            let result = await withCheckedContinuation { (done: CheckedContinuation<Result<HTTPResponse.Status, any Error>, Never>) in
                loop.execute {
                    let later = call.send(["300"], handler: { $0.status }) { done.resume(returning: $0) }
                    #expect(later.owner === earlier.owner, "the earlier call's owner serves the later one")
                    #expect(later.generation != earlier.generation)
                    earlier.cancel()
                }
            }
            #expect(try result.get() == .ok, "the earlier call's handle cancelled the later call")
        }
    }

    /// A client's observer sees each prepared call as it sees `execute`: the request (which it
    /// may add a field to) and how it ended.
    @Test func anObserverSeesEachCall() async throws {
        final class Counting: EngineObserver, RequestObservation {
            let counts = Mutex((started: 0, ended: 0))
            func hostObserver(scheme: String, host: String, port: Int) -> any HostObserver { Quiet() }
            func requestStarting(_ request: inout HTTPRequest) -> (any RequestObservation)? {
                request.headerFields[.init("X-Observed")!] = "yes"
                self.counts.withLock { $0.started += 1 }
                return self
            }
            func ended(_ result: Result<HTTPResponse, TransportError>) { self.counts.withLock { $0.ended += 1 } }
        }
        final class Quiet: HostObserver {
            func connectionOpened(id: Int, resumedTLS: Bool) {}
            func connectionClosed(id: Int, byServer: Bool) {}
            func connectionReused() {}
            func requestEnded(status: Int, duration: Duration) {}
            func requestRetried() {}
            func poolChanged(idle: Int, queued: Int) {}
        }
        let server = try await Shared.faults.get()
        let observer = Counting()
        let client = try makeClient { $0.observer = observer }
        defer { client.shutdown() }
        let call = try client.prepare(RequestTemplate(.get, server.url("/echo?n={n}")))
        for n in 0..<3 {
            let echo = try await call.send([String(n)]) { try JSONDecoder().decode(Echo.self, from: Data($0.bodyBytes)) }
            #expect(echo.path == "/echo?n=\(n)")
            #expect(echo.headers.contains { $0.first?.lowercased() == "x-observed" })
        }
        let counts = observer.counts.withLock { $0 }
        #expect(counts.started == 3)
        #expect(counts.ended == 3)
    }
}
