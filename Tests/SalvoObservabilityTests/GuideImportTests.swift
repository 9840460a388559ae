import SalvoObservability
import Testing

/// docs/observability.md's set-up, as written (its typed client aside), with the one import it
/// shows: everything it names comes with SalvoObservability.
@Suite struct GuideImportTests {
    @Test func theGuidesSetUpCompilesWithItsOneImport() throws {
        var configuration = HTTPClient.Configuration()
        configuration.observer = Observability(
            logger: Logger(label: "http-client"),
            metrics: MetricsSystem.factory,
            tracer: InstrumentationSystem.tracer)
        let engine = try HTTPClient(configuration: configuration)
        engine.shutdown()
        #expect(configuration.observer is Observability)
    }
}
