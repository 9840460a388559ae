import Foundation
import Logging
@testable import Salvo
import Synchronization
import Testing

/// The logging middleware, with a log handler that keeps what it is given.
@Suite struct LoggingMiddlewareTests {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    final class Records: Sendable {
        let list = Mutex<[Record]>([])
        var all: [Record] { self.list.withLock { $0 } }
    }

    struct Capturing: LogHandler {
        let records: Records
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { self.metadata[key] }
            set { self.metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            self.records.list.withLock { $0.append(Record(level: event.level, message: "\(event.message)", metadata: event.metadata ?? [:])) }
        }
    }

    func logging(_ records: Records, headers: Bool = false, bodies: LoggingMiddleware.BodyLogging = .none) -> LoggingMiddleware {
        LoggingMiddleware(logger: Logger(label: "test") { _ in Capturing(records: records) }, headers: headers, bodies: bodies)
    }

    @Test func requestsAndOutcomesAreLoggedWithCredentialsRedacted() async throws {
        let records = Records()
        let mock = MockTransport()
        mock.on(.post, "/login", reply: MockTransport.Reply(headerFields: [.setCookie: "session=s3cr3t", .contentType: "application/json"],
                                                           body: Array(#"{"token": "abc"}"#.utf8)))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(
            headerFields: [.authorization: "Bearer t0ken", .cookie: "a=b"], middleware: [self.logging(records, headers: true, bodies: .upTo(8))]))
        let login = HTTPBody.string(#"{"user":"ada","password":"pässword"}"#, contentType: "application/json")
        let body = try await client.send(Endpoint<JSONValue>(method: .post, path: "/login", body: .raw(login))).body
        #expect(body == Array(#"{"token": "abc"}"#.utf8), "the caller still gets the whole body")
        let record = try #require(records.all.first)
        #expect(record.level == .info)
        #expect(record.message == "POST http://api.test/login → 200 in \(record.metadata["duration"]!.description.dropLast(3)) ms")
        let logged = "\(record.metadata)"
        for secret in ["t0ken", "s3cr3t", "a=b"] { #expect(!logged.contains(secret), "\(secret) in \(logged)") }
        #expect(logged.lowercased().contains("authorization: ‹redacted›") && logged.lowercased().contains("set-cookie: ‹redacted›"))
        #expect(record.metadata["request.body"]?.description == #"{"user":… (37 bytes)"#)
        #expect(record.metadata["response.body"]?.description == #"{"token"… (16 bytes)"#)
    }

    @Test func failuresAreLoggedAndPassedOn() async throws {
        let records = Records()
        let mock = MockTransport(always: .error(TransportError(.connectionRefused)))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [self.logging(records)]))
        let (_, error) = await client.outcome(Endpoint<Empty>.get("/down"))
        #expect(error?.transportError?.code == .connectionRefused)
        #expect(records.all.map(\.level) == [.error])
        #expect(records.all.first?.message.hasPrefix("GET http://api.test/down failed:") == true)
    }

    /// Query values stay out of the log everywhere: the URL, a redirect's Location, and a
    /// failure whose detail quotes a URL.
    @Test func queryValuesStayOutOfFailuresAndLocations() async throws {
        let records = Records()
        let mock = MockTransport()
        mock.on(.get, "/moved", reply: MockTransport.Reply(status: .found, headerFields: [.location: "/next?token=s3cr3t"]))
        mock.on(.get, "/down", reply: .error(TransportError(.redirectRefused, detail: "to http://evil.test/?token=s3cr3t")))
        let client = try Client(baseURL: "http://api.test", transport: mock,
                                configuration: .init(validators: [], middleware: [self.logging(records, headers: true)]))
        _ = await client.outcome(Endpoint<Empty>.get("/moved", query: [QueryItem("key", "s3cr3t")]))
        _ = await client.outcome(Endpoint<Empty>.get("/down"))
        #expect(records.all.count == 2)
        for record in records.all {
            let logged = record.message + "\(record.metadata)"
            #expect(!logged.contains("s3cr3t"), "\(logged)")
        }
        #expect(records.all.first?.message.contains("key=‹›") == true)
    }

    @Test func streamsAreNotReadByTheLog() async throws {
        let records = Records()
        let mock = MockTransport(always: .text("line one\nline two\n"))
        let client = try Client(baseURL: "http://api.test", transport: mock, configuration: .init(middleware: [self.logging(records, bodies: .upTo(100))]))
        let stream = try await client.stream(Endpoint<Empty>.get("/lines"))
        var lines: [String] = []
        for try await line in stream.lines() { lines.append(line) }
        #expect(lines == ["line one", "line two"])
        #expect(records.all.first?.metadata["response.body"] == nil)
    }

    @Test func bodiesAreCutOnCharacters() {
        #expect(LoggingMiddleware.text(of: Array("aé".utf8), cap: 2) == "a… (3 bytes)")
        #expect(LoggingMiddleware.text(of: [0xFF, 0xFE, 0xFD, 0xFC, 0xFB], cap: 5) == "5 bytes, not text")
        #expect(LoggingMiddleware.milliseconds(.microseconds(12_345)) == "12.3")
        #expect(LoggingMiddleware.milliseconds(.microseconds(50)) == "0.1")
        #expect(LoggingMiddleware.withoutQueryValues("http://a.test/s?q=secret&api_key=k&flag") == "http://a.test/s?q=‹›&api_key=‹›&flag=‹›")
        let logging = LoggingMiddleware(logger: Logger(label: "t"))
        #expect(logging.loggable("https://u:pw@a.test/s?q=1") == "https://a.test/s?q=‹›", "userinfo is never logged")
        var withQueries = logging
        withQueries.queryValues = true
        #expect(withQueries.loggable("https://u:pw@a.test/s?q=1") == "https://a.test/s?q=1")
        #expect(CredentialFields.standard.contains(HTTPField.Name("x-api-key")!))
        #expect(LoggingMiddleware(logger: Logger(label: "t")).redactedFields == .standard, "the one list redirects use too")
    }
}
