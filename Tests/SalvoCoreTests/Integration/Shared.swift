import SalvoTestSupport
import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore

/// Servers shared by the tests of a run (started on first use; they stop by themselves when
/// the test process ends). Tests that read a server's request log start their own.
enum Shared {
    static let nginx = SharedFixture { try NginxServer.launch() }
    static let faults = SharedFixture { try FaultServer.launch() }
}

func makeClient(_ adjust: (inout HTTPClient.Configuration) -> Void = { _ in }) throws -> HTTPClient {
    var configuration = HTTPClient.Configuration()
    configuration.threads = 2
    adjust(&configuration)
    return try HTTPClient(configuration: configuration)
}

func get(_ url: String) throws -> HTTPRequest {
    try HTTPRequest(method: .get, url: url)
}

/// Runs `body` and returns the code of the TransportError it throws, or nil if none.
func errorCode(_ body: () async throws -> Void) async -> TransportError.Code? {
    do {
        try await body()
        return nil
    } catch let error as TransportError {
        return error.code
    } catch {
        Issue.record("unexpected error type: \(error)")
        return nil
    }
}

extension CollectedResponse {
    var text: String { String(decoding: self.body, as: UTF8.self) }
}
