import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// The middleware chain: order, answering early, errors, metadata, streams — over the mock,
/// and over the engine against the test API.
@Suite struct MiddlewareTests {
    struct User: Codable, Sendable, Equatable { var id: Int; var name: String }

    /// Records what it sees, in order, under its name.
    final class Log: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { self.lines.withLock { $0 } }
        func add(_ line: String) { self.lines.withLock { $0.append(line) } }
    }

    struct Recording: Middleware {
        let name: String
        let log: Log
        func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
            self.log.add("\(self.name)>")
            let response = try await next(request)
            self.log.add("<\(self.name)")
            return response
        }
    }

    @Test func middlewareRunInTheOrderGiven() async throws {
        let mock = MockTransport(always: try .json(User(id: 1, name: "Ada")))
        let log = Log()
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [
            Recording(name: "a", log: log),
            RequestModifier { request in request.head.headerFields[.userAgent] = "modified" },
            Recording(name: "b", log: log),
        ]))
        let (user, response) = try await client.valueAndResponse(Endpoint<User>.get("/users/1"))
        #expect(user == User(id: 1, name: "Ada"))
        #expect(log.all == ["a>", "b>", "<b", "<a"])
        #expect(mock.requests.first?.headerFields[.userAgent] == "modified")
        #expect(response.request.headerFields[.userAgent] == "modified", "the response knows the request as sent")
    }

    @Test func aMiddlewareCanAnswerWithoutTheTransport() async throws {
        let mock = MockTransport()
        let stub = InterceptMiddleware { request, next in
            guard request.head.path == "/users/7" else { return try await next(request) }
            return ClientResponse(head: HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]),
                                  body: Array(#"{"id": 7, "name": "Stubbed"}"#.utf8), for: request)
        }
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [stub]))
        #expect(try await client.value(Endpoint<User>.get("/users/7")).name == "Stubbed")
        #expect(mock.requests.isEmpty)
        // A request it does not answer goes on, and the mock's own message comes back.
        let (_, error) = await client.outcome(Endpoint<User>.get("/users/8"))
        #expect(error?.transportError?.detail?.contains("GET /users/8") == true, "\(String(describing: error))")
    }

    struct Refused: Error { var reason: String }

    @Test func errorsFromMiddlewareAreTyped() async throws {
        let mock = MockTransport(always: .text("fine"))
        let throwing = InterceptMiddleware("gate") { _, _ in throw Refused(reason: "closed") }
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [throwing]))
        let (_, error) = await client.outcome(Endpoint<String>.get("/x"))
        #expect(error?.code == .middlewareFailed)
        #expect((error?.underlyingError as? Refused)?.reason == "closed")
        #expect(error?.detail?.hasPrefix("gate:") == true)
        // A ClientError passes through as it is.
        let typed = RequestModifier { _ in throw ClientError(.invalidRequest, detail: "no") }
        let strict = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [typed]))
        #expect(await strict.outcome(Endpoint<String>.get("/x")).error?.code == .invalidRequest)
        #expect(mock.requests.isEmpty)
    }

    /// A middleware that reads the body and hands on another: the caller gets the new one.
    @Test func aMiddlewareCanReplaceTheBody() async throws {
        let shout = InterceptMiddleware { request, next in
            var response = try await next(request)
            let text = try await response.body.collect(upTo: 1 << 20)
            response.body = .bytes(Array(String(decoding: text, as: UTF8.self).uppercased().utf8))
            return response
        }
        let peek = InterceptMiddleware { request, next in
            let response = try await next(request)
            _ = try await response.body.collect(upTo: 1 << 20)   // read, not replaced: the bytes stay the caller's
            return response
        }
        let mock = MockTransport(always: .text("quiet"))
        let loud = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [shout]))
        #expect(try await loud.value(Endpoint<String>.get("/x")) == "QUIET")
        let watched = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [peek]))
        #expect(try await watched.value(Endpoint<String>.get("/x")) == "quiet")
    }

    @Test func aMiddlewareCanChangeTheHeadOfACollectedResponse() async throws {
        let stamp = InterceptMiddleware { request, next in
            var response = try await next(request)
            response.head.headerFields[HTTPField.Name("X-Stamped")!] = "before"
            response.body = .bytes(Array("replaced".utf8))
            response.head.headerFields[HTTPField.Name("X-Stamped-Again")!] = "after"
            return response
        }
        let mock = MockTransport(always: .text("original"))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [stamp]))
        let response = try await client.send(Endpoint<String>.get("/x"))
        #expect(try response.decodeSuccessBody() == "replaced")
        #expect(response.head.headerFields[HTTPField.Name("X-Stamped")!] == "before", "a head change survives a body change")
        #expect(response.head.headerFields[HTTPField.Name("X-Stamped-Again")!] == "after")
        #expect(response.head.headerFields[.contentType]?.hasPrefix("text/plain") == true, "the transport's fields stay")
    }

    @Test func aCancelledWaitInAMiddlewareIsACancellation() async throws {
        let slow = InterceptMiddleware { request, next in
            try await Task.sleep(for: .seconds(30))
            return try await next(request)
        }
        let client = try Client(baseURL: "http://api.test", transport: MockTransport(always: .text("x")),
                                configuration: .init(middleware: [slow]))
        let call = Task { await client.outcome(Endpoint<String>.get("/x")).error }
        try await Task.sleep(for: .milliseconds(20))
        call.cancel()
        #expect(await call.value?.code == .cancelled)
    }

    @Test func aBodyAMiddlewareHandsOnMeetsTheCallsLimit() async throws {
        let stub = InterceptMiddleware { request, _ in
            ClientResponse(head: HTTPResponse(status: .ok), body: Array(repeating: 0x61, count: 100), for: request)
        }
        let client = try Client(baseURL: "http://api.test", transport: MockTransport(always: .text("x")),
                                configuration: .init(middleware: [stub]))
        #expect(try await client.value(Endpoint<String>.get("/x")).count == 100)
        let limited = await client.outcome(Endpoint<String>.get("/x"), options: .init(maxBodySize: 10)).error
        #expect(limited?.code == .bodyTooLarge, "\(String(describing: limited))")
    }

    /// An endpoint's own timeout: between the call's and the client's, and readable by
    /// middleware, which see the call's time as one deadline.
    @Test func anEndpointsOwnTimeout() async throws {
        let seen = Mutex<(Duration?, Bool)>((nil, false))
        let watch = InterceptMiddleware { request, next in
            seen.withLock { $0 = (request.metadata[RequestTimeout.self], request.options.deadline != nil && request.options.timeout == nil) }
            return try await next(request)
        }
        let mock = MockTransport(always: MockTransport.Reply.text("late").delayed(by: .milliseconds(300)))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(timeout: .seconds(30), middleware: [watch]))
        let quick = Endpoint<String>.get("/x").timeout(.milliseconds(50))
        #expect(await client.outcome(quick).error?.transportError?.code == .totalTimeout)
        #expect(seen.withLock { $0.0 } == .milliseconds(50))
        #expect(seen.withLock { $0.1 }, "the call's time reaches middleware as one deadline")
        #expect(try await client.value(quick, options: .init(timeout: .seconds(5))) == "late", "the call's own timeout wins")
        #expect(try await client.value(Endpoint<String>.get("/x")) == "late", "else the client's")
    }

    enum Audience: RequestMetadataKey { typealias Value = String }

    @Test func metadataReachesMiddleware() async throws {
        let seen = Mutex<[String]>([])
        let reader = InterceptMiddleware { request, next in
            seen.withLock { $0.append("\(request.operationName) \(request.metadata.tags.sorted()) \(request.metadata[Audience.self] ?? "-")") }
            return try await next(request)
        }
        let mock = MockTransport(always: .text("ok"))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [reader]))
        _ = try await client.value(Endpoint<String>.get("/reports").tagged("reports", "no-auth").with(Audience.self, "finance"))
        _ = try await client.value(Endpoint<String>.get("/plain").decoding(String.self))
        #expect(seen.withLock { $0 } == ["GET /reports [\"no-auth\", \"reports\"] finance", "GET /plain [] -"])
    }

    /// A middleware that tries once more after a transport failure, replaying the body.
    @Test func aMiddlewareCanSendAgain() async throws {
        let mock = MockTransport(always: .text("saved"))
        mock.fail(.post, "/notes", times: 1, with: TransportError(.connectionRefused))
        let again = InterceptMiddleware { request, next in
            do {
                return try await next(request)
            } catch let error as ClientError where error.code == .transportFailed && request.body?.isReplayable != false {
                return try await next(request)
            }
        }
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [again]))
        #expect(try await client.value(Endpoint<String>.post("/notes", body: ["text": "hello"])) == "saved")
        #expect(mock.requests.map(\.text) == [#"{"text":"hello"}"#, #"{"text":"hello"}"#])
    }

    @Test func streamsStayStreamsThroughMiddleware() async throws {
        let kinds = Mutex<[Bool]>([])
        let observer = InterceptMiddleware { request, next in
            kinds.withLock { $0.append(request.isStreaming) }
            return try await next(request)
        }
        let client = try await SharedAPI.client(.init(middleware: [observer]))
        let response = try await client.stream(Endpoint<Empty>.get("/jsonl", query: [QueryItem("n", "3")]))
        struct Line: Decodable, Sendable { var index: Int }
        var indexes: [Int] = []
        for try await line in response.jsonLines(of: Line.self) { indexes.append(line.index) }
        #expect(indexes == [0, 1, 2])
        _ = try await client.value(Endpoint<JSONValue>.get("/users/1"))
        #expect(kinds.withLock { $0 } == [true, false])
    }

    /// Over the engine: a header added by middleware reaches the server; the body limit
    /// still holds when middleware are present.
    @Test func overTheEngine() async throws {
        struct Echo: Decodable { var headers: [[String]] }
        let client = try await SharedAPI.client(.init(maxBodySize: 1 << 10, middleware: [
            RequestModifier { request in request.head.headerFields[HTTPField.Name("X-Trace")!] = "t-1" },
        ]))
        let echo = try await client.value(Endpoint<Echo>.get("/echo"))
        #expect(echo.headers.contains(["X-Trace", "t-1"]))
        let (_, error) = await client.outcome(Endpoint<Empty>.get("/download", query: [QueryItem("size", "5000")]))
        #expect(error?.code == .bodyTooLarge)
    }
}
