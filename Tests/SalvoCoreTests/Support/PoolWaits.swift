import SalvoCore
import Testing

/// Waits until the client's one host satisfies `condition` (polled every 10 ms, ten seconds
/// at most): a test waits for the pool's state it needs instead of sleeping and hoping.
func waitForHost(_ client: HTTPClient, _ condition: (HostPoolStatistics) -> Bool) async throws {
    for _ in 0..<1000 {
        if let host = await client.poolStatistics().hosts.values.first, condition(host) { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("the host never reached the state waited for: \(await client.poolStatistics())")
}
