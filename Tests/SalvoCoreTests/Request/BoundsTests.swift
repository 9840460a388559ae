import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore

/// The bounds every wait has by default, over real connections.
@Suite(.serialized) struct BoundsTests {
    /// A body that goes out piece by piece, a piece every `gap`.
    static func slowBody(pieces: Int, gap: Duration) -> HTTPBody {
        .producer(length: pieces * 1000) { writer in
            for _ in 0..<pieces {
                try await Task.sleep(for: gap)
                try await writer.write(Array(repeating: UInt8(ascii: "x"), count: 1000))
            }
        }
    }

    /// An upload longer than the head timeout is not cut for the head it cannot have yet: the
    /// bound counts again from its last byte (else a default of 300 s would end every upload
    /// that takes longer).
    @Test func aLongUploadIsNotCutByTheHeadTimeout() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        defer { server.stop() }
        // The upload takes twice the head timeout; after its last byte the server's echo has
        // the whole head timeout, a margin for a loaded machine.
        let client = try makeClient { $0.headTimeout = .seconds(2) }
        defer { client.shutdown() }
        var request = try get(server.url("/echo-body"))
        request.method = .put
        let response = try await client.execute(request, body: Self.slowBody(pieces: 8, gap: .milliseconds(500)),
                                                options: .init(timeout: .seconds(30)))
        #expect(response.status == .ok && response.body.count == 8000)
    }

    /// Once the request is all out, the head is due within the head timeout.
    @Test func theHeadIsDueWithinTheHeadTimeoutOfTheLastByte() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        defer { server.stop() }
        let client = try makeClient { $0.headTimeout = .milliseconds(300) }
        defer { client.shutdown() }
        var request = try get(server.url("/slow-head?ms=5000"))
        request.method = .put
        do {
            _ = try await client.execute(request, body: Self.slowBody(pieces: 4, gap: .milliseconds(150)),
                                         options: .init(timeout: .seconds(20)))
            Issue.record("a head five seconds late was waited for")
        } catch {
            #expect(error.code == .headTimeout, "\(error)")
        }
    }
}
