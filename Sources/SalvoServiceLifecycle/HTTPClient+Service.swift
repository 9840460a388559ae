public import SalvoCore
public import ServiceLifecycle

/// An engine client as a swift-service-lifecycle `Service`: a server application puts it in its
/// `ServiceGroup`, and the group shuts it down with the rest of its services.
///
/// ```swift
/// let http = try HTTPClient()
/// let api = Client(baseURL: try BaseURL("https://api.example.com"), transport: http)
/// let group = ServiceGroup(configuration: .init(
///     services: [.init(service: http), .init(service: server)],   // started in order, stopped in reverse
///     gracefulShutdownSignals: [.sigterm], logger: logger))
/// try await group.run()
/// ```
///
/// Put the client before the services that use it: a group stops its services in reverse
/// order, so the client is shut down after them and their last requests still go out.
extension HTTPClient: Service {
    /// Waits until the group shuts down gracefully (or this task is cancelled), then shuts the
    /// client down: connections closed, requests still in flight failed with `.shutdown`,
    /// threads stopped. `HTTPClient.shared` is left running, as its shutdown always does.
    public func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            // Cancelled: the group is going down without grace. Shut down all the same.
        }
        self.shutdown()
    }
}
