// Only Salvo: `Logger` must come with it (no `import Logging` in this file).
import Salvo
import Testing

@Suite struct LoggingExportTests {
    @Test func importSalvoIsEnoughForALogger() async throws {
        var logger = Logger(label: "api")
        logger.logLevel = .debug
        let client = try Client(baseURL: "http://api.test", transport: MockTransport(always: .status(.noContent)),
                                configuration: .init(middleware: [LoggingMiddleware(logger: logger)]))
        #expect(try await client.send(Endpoint<Empty>.get("/")).status == .noContent)
    }
}
