internal import SalvoCore

/// The transport of a client made without one: the engine's process-wide client,
/// `HTTPClient.shared` (started on first use with its default configuration: threads per core,
/// TLS verified, redirects followed, gzip decoded). The only file of the typed layer that
/// knows the engine.
final class DefaultTransport: Transport {
    static let shared = DefaultTransport()

    /// An engine that cannot start (no threads, no trust store) is an error for every
    /// request, never a crash.
    nonisolated(nonsending) func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(TransportError) -> TransportResponse {
        try await HTTPClient.shared.send(request, body: body, options: options)
    }

    /// The engine's own collecting call: the body gathered as it is read, not streamed and
    /// then collected.
    nonisolated(nonsending) func sendCollecting(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions,
                                                maxBodySize: Int) async throws(TransportError) -> CollectedResponse {
        try await HTTPClient.shared.sendCollecting(request, body: body, options: options, maxBodySize: maxBodySize)
    }
}
