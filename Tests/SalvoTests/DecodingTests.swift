import Foundation
import Salvo
import SalvoTestSupport
import Testing

/// A body that is Base64 text, as the bytes it encodes: the custom parser of the docs.
struct Base64Parser: ResponseParser {
    func parse(_ body: [UInt8], coders: Coders) throws(ClientError) -> [UInt8] {
        let text = String(decoding: body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let data = Data(base64Encoded: text) else { throw .invalidValue(at: "", "not Base64: \(text.prefix(20))") }
        return Array(data)
    }
}

/// Key paths, parsers, validators and `map`, over the mock and over the engine.
@Suite struct DecodingTests {
    @Test func keyPathsArraysAndDictionaries() async throws {
        let mock = MockTransport()
        mock.on(.get, "/wrapped", reply: .text(#"{"data": {"items": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Alan"}], "counts": {"a": 1, "b": 2}}}"#,
                                             contentType: "application/json"))
        mock.on(.get, "/blob", reply: .text("AAEC/w==\n"))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        let wrapped = Endpoint<Empty>.get("/wrapped")
        #expect(try await client.value(wrapped.decoding([User].self, at: "data.items")).map(\.name) == ["Ada", "Alan"])
        #expect(try await client.value(wrapped, parser: ArrayParser<User>(keyPath: "data.items")).count == 2)
        #expect(try await client.value(wrapped, parser: DictionaryParser<String, Int>(keyPath: "data.counts")) == ["a": 1, "b": 2])
    }

    @Test func keyPathErrorsSayWhereAndWhat() async throws {
        let mock = MockTransport()
        mock.on(.get, "/wrapped", reply: .text(#"{"data": {"items": [{"id": 1, "name": "Ada"}, {"id": "2", "name": "Alan"}]}}"#))
        mock.on(.get, "/blob", reply: .text("AAEC/w==\n"))
        mock.on(.get, "/junk", reply: .text("%%%"))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        let wrapped = Endpoint<Empty>.get("/wrapped")
        do {
            _ = try await client.value(wrapped.decoding([User].self, at: "data.items"))
            Issue.record("decoded")
        } catch {
            #expect(error.codingPath == "data.items[1].id")
            #expect(error.decodingProblem == .wrongType)
        }
        do {
            _ = try await client.value(wrapped.decoding([User].self, at: "data.missing"))
            Issue.record("decoded")
        } catch {
            #expect(error.codingPath == "data.missing")
            #expect(error.decodingProblem == .missingValue)
        }
        #expect(try await client.value(Endpoint<Empty>.get("/blob"), parser: Base64Parser()) == [0, 1, 2, 255])
        do {
            _ = try await client.value(Endpoint<Empty>.get("/junk"), parser: Base64Parser())
            Issue.record("decoded")
        } catch {
            #expect(error.decodingProblem == .invalidValue)
            #expect(error.responseBody == Array("%%%".utf8), "the raw body is kept")
        }
        do {
            _ = try await client.value(Endpoint<User>.get("/junk"))
            Issue.record("decoded")
        } catch {
            #expect(error.code == .decodingFailed)
            #expect(error.decodingProblem == .invalidValue)
        }
    }

    @Test func validatorsPerClientAndPerCall() async throws {
        let mock = MockTransport()
        mock.on(.get, "/html", reply: .text("<p>hi</p>", contentType: "text/html"))
        mock.on(.get, "/problem", reply: .text(#"{"error": "x"}"#, contentType: "application/problem+json"))
        mock.on(.get, "/empty", reply: .status(.ok))
        mock.on(.get, "/teapot", reply: .text(#"{"error": "short and stout"}"#, status: .init(code: 418), contentType: "application/json"))
        mock.on(.get, "/github", reply: .text(#"{"error": "x"}"#, contentType: "application/json; charset=utf-8"))
        // The defaults check the status only: decoding is the real check of a body.
        let lenient = try Client(baseURL: "http://api.test", transport: mock)
        let json = Endpoint<String>.get("/html", headers: [.accept: "application/json"])
        #expect(try await lenient.value(json) == "<p>hi</p>")
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(
            validators: [StatusCodeValidator(), ContentTypeValidator()]))
        // A vendor type with a structured suffix accepts the generic type, and the other way round.
        #expect(try await client.value(Endpoint<Problem>.get("/github", headers: [.accept: "application/vnd.github+json"])).error == "x")
        do {
            _ = try await client.value(json)
            Issue.record("text/html passed an Accept of application/json")
        } catch {
            #expect(error.code == .validationFailed)
            #expect(error.detail?.contains("text/html") == true)
        }
        #expect(try await client.value(Endpoint<String>.get("/html", headers: [.accept: "text/*, application/json;q=0.5"])) == "<p>hi</p>")
        #expect(try await client.value(Endpoint<String>.get("/html", headers: [.accept: "text/html;q=0, */*"])) == "<p>hi</p>")
        #expect(try await client.value(Endpoint<Problem>.get("/problem", headers: [.accept: "application/json"])).error == "x")
        await #expect(throws: ClientError.self) { try await client.value(Endpoint<String>.get("/html", headers: [.accept: "text/html;q=0"])) }

        let needsBody = ClosureValidator { (_, body, _) throws(ClientError) in
            if body.isEmpty { throw ClientError(.validationFailed, detail: "empty body") }
        }
        let (_, error) = await client.outcome(Endpoint<Empty>.get("/empty"), options: .init(validators: [needsBody]))
        #expect(error?.detail == "empty body")
        let teapot = try await client.value(Endpoint<Problem>.get("/teapot"), options: .init(validators: [StatusCodeValidator(acceptable: 200...499)]))
        #expect(teapot.error == "short and stout")
        // `send` runs a call's validators too: the verdict is in `response.error`.
        let refused = try await client.send(Endpoint<Empty>.get("/empty"), options: .init(validators: [needsBody]))
        #expect(refused.status == .ok)
        #expect(refused.error?.code == .validationFailed)
        #expect(refused.error?.detail == "empty body")
        let accepted = try await client.send(Endpoint<Problem>.get("/teapot"), options: .init(validators: [StatusCodeValidator(acceptable: 200...499)]))
        #expect(accepted.error == nil, "a 418 the call accepts is no error")
        let teapotError = try #require(try await client.send(Endpoint<Empty>.get("/teapot").failing(as: Problem.self)).error)
        #expect(teapotError.code == .unacceptableStatus)
        #expect(teapotError.failureBody(as: Problem.self)?.error == "short and stout")
        // A stream is held to the call's validators as well.
        await #expect(throws: ClientError.self) {
            _ = try await client.stream(Endpoint<Empty>.get("/empty"), options: .init(validators: [ClosureValidator { (head, _, _) throws(ClientError) in
                if head.status == .ok { throw ClientError(.validationFailed, detail: "no") }
            }]))
        }
        // Open-ended ranges are clamped to three-digit statuses, not an overflow.
        #expect(StatusCodeValidator(acceptable: 200...Int.max).acceptable == 200..<1000)
        #expect(StatusCodeValidator(acceptable: 5000...6000).acceptable.isEmpty)
    }

    @Test func aParsedResponse() async throws {
        let mock = MockTransport()
        mock.on(.get, "/blob", reply: .text("AAEC/w=="))
        mock.on(.get, "/slow", reply: MockTransport.Reply.text("late").delayed(by: .seconds(5)))
        let client = try Client(baseURL: URL(string: "http://api.test")!, transport: mock)
        let response = try await client.send(Endpoint<Empty>.get("/blob"), parser: Base64Parser())
        #expect(try response.decodeSuccessBody() == [0, 1, 2, 255])
        // The mock honours the call's timeouts as a real transport does.
        let (_, late) = await client.outcome(Endpoint<String>.get("/slow"), options: .init(timeout: .milliseconds(30)))
        #expect(late?.transportError?.code == .totalTimeout)
        let (_, head) = await client.outcome(Endpoint<String>.get("/slow"), options: .init(headTimeout: .milliseconds(30)))
        #expect(head?.transportError?.code == .headTimeout)
    }

    /// Untyped JSON, as `[String: Any]` code reads it, from a mock that answers everything.
    @Test func untypedJSON() async throws {
        let document: JSONValue = ["version": 1.0, "users": [["id": 1, "username": "Jules"], ["id": 2, "username": "Vincent"]]]
        let client = try Client(baseURL: "http://api.test", transport: MockTransport(always: try .json(document)))
        let users = try await client.value(Endpoint<Empty>.get("/anything"), parser: ArrayParser<JSONValue>(keyPath: "users"))
        #expect(users.compactMap { $0["username"]?.stringValue } == ["Jules", "Vincent"])
        let whole = try await client.value(Endpoint<JSONValue>.get("/other"))
        #expect(whole["users"]?[1]?["id"]?.intValue == 2)
        #expect(whole["version"]?.doubleValue == 1.0)
        #expect(whole == document)
        let keys = try await client.value(Endpoint<Empty>.get("/x"), parser: DictionaryParser<String, JSONValue>())
        #expect(keys.keys.sorted() == ["users", "version"])
    }

    @Test func mappingAResponse() async throws {
        let mock = MockTransport()
        mock.on(.get, "/users", reply: try .json([User(id: 1, name: "Ada"), User(id: 2, name: "Alan")]))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        let names = try await client.send(Endpoint<[User]>.get("/users")).map { $0.map(\.name) }
        #expect(try names.decodeSuccessBody() == ["Ada", "Alan"])
        let failing = try await client.send(Endpoint<[User]>.get("/users")).map { _ -> Int in throw CancellationError() }
        #expect(throws: ClientError.self) { try failing.decodeSuccessBody() }
    }

    @Test func keyPathsOverTheEngine() async throws {
        let client = try await SharedAPI.client(.init(coders: .json(keys: .snakeCase)))
        let users = try await client.value(Endpoint<Empty>.get("/wrapped").decoding([APIUser].self, at: "data.items"))
        #expect(users.map(\.emailAddress) == ["ada@example.test", "alan@example.test", "grace@example.test"])
        #expect(try await client.value(Endpoint<Empty>.get("/wrapped"), parser: DecodableParser<Int>(keyPath: "data.count")) == 3)
    }
}
