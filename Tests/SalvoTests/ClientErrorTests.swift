import Foundation
import Salvo
import Testing

/// Errors keep what they came from, and any error converts to a `ClientError` in one word.
@Suite struct ClientErrorTests {
    struct Offline: Error, Equatable {}

    @Test func aMockResponderKeepsItsError() async throws {
        let mock = MockTransport()
        mock.on(.get, "/slow") { _ in throw URLError(.timedOut) }
        mock.on(.get, "/gone") { _ in throw URLError(.cannotFindHost) }
        mock.on(.get, "/mine") { _ in throw Offline() }
        let client = try Client(baseURL: "http://api.test", transport: mock)

        let (_, slow) = await client.outcome(Endpoint<Empty>.get("/slow"))
        #expect(slow?.code == .transportFailed)
        #expect(slow?.transportError?.code == .readTimeout)
        #expect(slow?.isTransient == true, "a URLError timeout is the transient failure it stands for")
        #expect((slow?.underlyingError as? URLError)?.code == .timedOut)
        #expect((slow?.transportError?.underlyingError as? URLError)?.code == .timedOut)

        let (_, gone) = await client.outcome(Endpoint<Empty>.get("/gone"))
        #expect(gone?.transportError?.code == .dnsFailure)
        #expect(gone?.mayHaveBeenProcessed == false)

        let (_, mine) = await client.outcome(Endpoint<Empty>.get("/mine"))
        #expect(mine?.code == .transportFailed)
        #expect(mine?.transportError?.code == .invalidRequest)
        #expect(mine?.underlyingError as? Offline == Offline())
        #expect(mine?.isTransient == false, "an unknown error is not retried")
    }

    @Test func aBodySourceKeepsItsError() async throws {
        let mock = MockTransport(always: .status(.ok))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        let body = HTTPBody.producer { _ in throw Offline() }
        let (_, error) = await client.outcome(Endpoint<Empty>.post("/upload", body: body))
        #expect(error?.transportError?.code == .requestBodyFailed)
        #expect(error?.underlyingError as? Offline == Offline())
    }

    @Test func oneWordConversion() async throws {
        #expect(ClientError(ClientError(.bodyTooLarge, detail: "x") as any Error).detail == "x")
        #expect(ClientError(TransportError(.connectTimeout) as any Error).code == .transportFailed)
        #expect(ClientError(TransportError(.connectTimeout) as any Error).transportError?.code == .connectTimeout)
        #expect(ClientError(TransportError.cancelled(.caller) as any Error).code == .cancelled)
        #expect(ClientError(CancellationError()).code == .cancelled)
        let other = ClientError(Offline())
        #expect(other.code == .other)
        #expect(other.underlyingError as? Offline == Offline())
        // Equality of transport errors ignores what stood behind them.
        var behind = TransportError(.readTimeout)
        behind.underlyingError = Offline()
        #expect(behind == TransportError(.readTimeout))
    }

    /// Inside a closure Swift types a caught error as `any Error`; both spellings the guide
    /// shows give a `ClientError` back.
    @Test func typedErrorsInsideATask() async throws {
        let client = try Client(baseURL: "http://api.test", transport: MockTransport(always: .status(.notFound)))
        let converted = await Task { () -> Int? in
            do {
                _ = try await client.value(Endpoint<Empty>.get("/x"))
                return nil
            } catch {
                return ClientError(error).status?.code
            }
        }.value
        #expect(converted == 404)
        let typed = await Task { () -> Int? in
            do throws(ClientError) {
                _ = try await client.value(Endpoint<Empty>.get("/x"))
                return nil
            } catch {
                return error.status?.code
            }
        }.value
        #expect(typed == 404)
    }

    struct APIProblem: Codable, Sendable, Equatable { let errorMessage: String }
    struct Other: Codable, Sendable, Equatable { let errorCode: Int }

    @Test func theFailureBodyAsDeclaredOrAsked() async throws {
        let mock = MockTransport()
        mock.on(.get, "/locked", reply: .text(#"{"error_message": "locked", "error_code": 423}"#, status: HTTPResponse.Status(code: 423), contentType: "application/json"))
        mock.on(.get, "/fine", reply: .text("not json", contentType: "application/json"))
        let client = try Client(baseURL: "http://api.test", transport: mock, coders: .json(keys: .snakeCase))
        let request = Endpoint<Empty>.get("/locked").failing(as: APIProblem.self)
        let error = await client.outcome(request).error
        // The declared type, without naming it again.
        #expect(error?.failureBody(for: request) == APIProblem(errorMessage: "locked"))
        // A type the request did not declare decodes too, with the client's coders.
        #expect(error?.failureBody(as: Other.self) == Other(errorCode: 423))
        let undeclared = await client.outcome(Endpoint<Empty>.get("/locked")).error
        #expect(undeclared?.failureBody(as: APIProblem.self) == APIProblem(errorMessage: "locked"))
        // A body that is not a failure body is never read as one.
        let decoding = await client.outcome(Endpoint<APIProblem>.get("/fine")).error
        #expect(decoding?.code == .decodingFailed)
        #expect(decoding?.failureBody(as: APIProblem.self) == nil)
        // send: the same through response.error.
        let response = try await client.send(request)
        #expect(response.error?.failureBody(for: request)?.errorMessage == "locked")
    }
}
