import Foundation
@testable import Salvo
import Synchronization
import Testing

/// Middleware that read and replace a request's body, and read a response's body, with
/// the helpers on `ClientRequest` and `ClientResponse`.
@Suite struct MiddlewareBodyTests {
    struct Note: Codable, Sendable, Equatable { var title: String; var pinned: Bool }

    /// The docs' example: one field added to every JSON body.
    struct AddClientVersion: Middleware {
        func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
            var request = request
            if request.body?.contentType == "application/json" {
                try await request.updateJSONBody { object in object["clientVersion"] = "2.1" }
            }
            return try await next(request)
        }
    }

    @Test func aFieldIsAddedToEveryJSONBodyAtTheEnd() async throws {
        let mock = MockTransport(always: .status(.noContent))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [AddClientVersion()]))
        let title = "groceries"
        _ = try await client.send(Endpoint<Empty>.post("/notes", body: ["title": title, "pinned": true] as JSONValue,
                                                       headers: [.contentLength: "33"]))
        _ = try await client.send(Endpoint<Empty>.post("/plain", body: .string("hello", contentType: "text/plain")))
        _ = try await client.send(Endpoint<Empty>.get("/none"))
        let sent = mock.requests
        #expect(sent[0].text == #"{"title":"groceries","pinned":true,"clientVersion":"2.1"}"#)
        #expect(sent[0].headerFields[.contentLength] == String(sent[0].body.count))
        #expect(sent[1].text == "hello")
        #expect(sent[2].body.isEmpty)
    }

    @Test func aMissingBodyStartsFromNullAndBecomesAnObject() async throws {
        var request = ClientRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "api.test", path: "/x"),
                                    operationName: "x", baseURL: try BaseURL("http://api.test"))
        try await request.updateJSONBody { object in object["id"] = 7 }
        #expect(try await request.bodyBytes() == Array(#"{"id":7}"#.utf8))
        #expect(request.body?.contentType == "application/json")
    }

    @Test func aBodyThatIsNotJSONIsAnEncodingError() async throws {
        var request = ClientRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "api.test", path: "/x"),
                                    body: .string("not json"), operationName: "x", baseURL: try BaseURL("http://api.test"))
        let error = await #expect(throws: ClientError.self) { try await request.updateJSONBody { $0["a"] = 1 } }
        #expect(error?.code == .encodingFailed)
    }

    @Test func aStreamedRequestBodyIsReadOnceAndKeptAsBytes() async throws {
        let runs = Mutex(0)
        let streamed = HTTPBody.producer(contentType: "application/json") { writer in
            runs.withLock { $0 += 1 }
            try await writer.write(Array(#"{"a":"#.utf8))
            try await writer.write(Array("1}".utf8))
        }
        var request = ClientRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "api.test", path: "/x"),
                                    body: streamed, operationName: "x", baseURL: try BaseURL("http://api.test"))
        #expect(request.body?.isReplayable == false)
        #expect(try await request.bodyBytes(limit: 100) == Array(#"{"a":1}"#.utf8))
        #expect(try await request.bodyBytes(limit: 100) == Array(#"{"a":1}"#.utf8))
        #expect(runs.withLock { $0 } == 1)
        #expect(request.body?.isReplayable == true)
        #expect(request.body?.contentType == "application/json")
        #expect(request.body?.length == .known(7))
    }

    @Test func aRequestBodyPastTheLimitIsRefused() async throws {
        let streamed = HTTPBody.producer { writer in
            for _ in 0..<10 { try await writer.write([UInt8](repeating: 1, count: 10)) }
        }
        var request = ClientRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "api.test", path: "/x"),
                                    body: streamed, operationName: "x", baseURL: try BaseURL("http://api.test"))
        let error = await #expect(throws: ClientError.self) { try await request.bodyBytes(limit: 50) }
        #expect(error?.code == .bodyTooLarge)
        var small = ClientRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "api.test", path: "/x"),
                                  body: .bytes([1, 2, 3]), operationName: "x", baseURL: try BaseURL("http://api.test"))
        await #expect(throws: ClientError.self) { try await small.bodyBytes(limit: 2) }
        #expect(try await small.bodyBytes(limit: 3) == [1, 2, 3])
    }

    @Test func replacingTheBodyKeepsTheContentLengthRight() throws {
        var request = ClientRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "api.test", path: "/x",
                                                      headerFields: [.contentLength: "3"]),
                                    body: .bytes([1, 2, 3]), operationName: "x", baseURL: try BaseURL("http://api.test"))
        request.replaceBody(with: .string("hello"))
        #expect(request.head.headerFields[.contentLength] == "5")
        request.replaceBody(with: .stream(AsyncStream<[UInt8]> { $0.finish() }))
        #expect(request.head.headerFields[.contentLength] == nil)
        request.head.headerFields[.contentLength] = "9"
        request.replaceBody(with: nil)
        #expect(request.head.headerFields[.contentLength] == "0")
        try request.setJSONBody(Note(title: "t", pinned: false))
        #expect(request.body?.contentType == "application/json")
        #expect(request.body?.length == .known(28))
        #expect(request.head.headerFields[.contentLength] == "28")
    }

    final class Sizes: Sendable {
        private let sizes = Mutex<[Int]>([])
        var all: [Int] { self.sizes.withLock { $0 } }
        func add(_ size: Int) { self.sizes.withLock { $0.append(size) } }
    }

    /// Reads each response's body, then hands the response on.
    struct BodyCounter: Middleware {
        let sizes = Sizes()
        let limit: Int?
        func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
            var response = try await next(request)
            let bytes = try await response.bodyBytes(for: request, limit: self.limit)
            self.sizes.add(bytes.count)
            return response
        }
    }

    @Test func aResponseBodyReadByAMiddlewareIsStillTheCallers() async throws {
        let mock = MockTransport(always: try .json(Note(title: "read twice", pinned: true)))
        let counter = BodyCounter(limit: nil)
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [counter]))
        #expect(try await client.value(Endpoint<Note>.get("/notes/1")) == Note(title: "read twice", pinned: true))
        #expect(counter.sizes.all == [Array(#"{"title":"read twice","pinned":true}"#.utf8).count])
    }

    @Test func aResponseBodyPastTheLimitIsRefused() async throws {
        let mock = MockTransport(always: .text(String(repeating: "x", count: 100)))
        let client = try Client(baseURL: "http://api.test", transport: mock,
                                configuration: .init(middleware: [BodyCounter(limit: 10)]))
        let error = await #expect(throws: ClientError.self) { try await client.send(Endpoint<Empty>.get("/big")) }
        #expect(error?.code == .bodyTooLarge)
    }

    @Test func aStreamedCallsResponseIsNotCollected() async throws {
        let mock = MockTransport(always: .text("line\n"))
        let counter = BodyCounter(limit: nil)
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [counter]))
        let error = await #expect(throws: ClientError.self) { try await client.stream(Endpoint<Empty>.get("/lines")) }
        #expect(error?.code == .middlewareFailed)
        #expect(counter.sizes.all.isEmpty)
    }

    /// A middleware that turns a form body into JSON: the head says what is sent now.
    @Test func aNewBodyBringsItsTypeIntoTheHead() async throws {
        struct FormToJSON: Middleware {
            func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
                var request = request
                try request.setJSONBody(["user": "ada"] as JSONValue)
                return try await next(request)
            }
        }
        let mock = MockTransport(always: .status(.noContent))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [FormToJSON()]))
        struct Login: Encodable, Sendable { var user: String }
        _ = try await client.send(Endpoint<Empty>(method: .post, path: "/login", body: .form(Login(user: "ada"))))
        #expect(mock.requests[0].headerFields[.contentType] == "application/json")
        #expect(mock.requests[0].text == #"{"user":"ada"}"#)

        var gzipped = ClientRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "api.test", path: "/x",
                                                      headerFields: [.contentEncoding: "gzip"]),
                                    operationName: "x", baseURL: try BaseURL("http://api.test"))
        gzipped.replaceBody(with: .bytes(Array("plain".utf8), contentType: "text/plain"))
        #expect(gzipped.head.headerFields[.contentEncoding] == nil, "the new body is not gzip")
        #expect(gzipped.head.headerFields[.contentType] == "text/plain")
    }

    /// A producer that ends quietly when its task is cancelled: not a whole body.
    @Test func aRequestBodyCutByACancelIsNotTakenWhole() async throws {
        let (chunks, feed) = AsyncStream<[UInt8]>.makeStream()
        let body = HTTPBody(.stream(length: nil, replayable: false, produce: { writer in
            for await chunk in chunks { try await writer.write(chunk) }
        }), contentType: "application/json")
        var request = ClientRequest(head: HTTPRequest(method: .post, scheme: "http", authority: "api.test", path: "/x"),
                                    body: body, operationName: "x", baseURL: try BaseURL("http://api.test"))
        feed.yield(Array("{\"a\":".utf8))
        let reading = Task { () async -> ClientError? in
            do throws(ClientError) {
                _ = try await request.bodyBytes()
                return nil
            } catch {
                return error
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        reading.cancel()
        #expect(await reading.value?.code == .cancelled)
    }
}
