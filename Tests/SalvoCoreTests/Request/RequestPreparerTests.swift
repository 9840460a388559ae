import HTTPTypes
@testable import SalvoCore
import Testing

/// What preparing a request fixes before it reaches a loop: here, the bounds on waiting.
@Suite struct RequestPreparerTests {
    static func preparer(_ adjust: (inout HTTPClient.Configuration) -> Void = { _ in }) throws -> RequestPreparer {
        var configuration = HTTPClient.Configuration()
        adjust(&configuration)
        return RequestPreparer(configuration: configuration, tlsContexts: TLSContexts(primary: try TLSContext(configuration.tls)))
    }

    /// Every wait on a server is bounded by default: the head within 300 s of the call, and
    /// no silence longer than 300 s while a response is due.
    @Test func waitsAreBoundedByDefault() throws {
        let prepared = try Self.preparer().prepare(try HTTPRequest(method: .get, url: "http://a.test/"), body: nil, options: .init())
        #expect(prepared.readTimeout == .seconds(300))
        let headWithin = prepared.headDeadline.nanoseconds - prepared.startedAt.nanoseconds
        #expect(headWithin == 300_000_000_000)
        #expect(prepared.deadline == .distantFuture, "no total bound: a long download is not cut")
    }

    @Test func aRequestCanLiftOrChangeTheBounds() throws {
        let preparer = try Self.preparer()
        let request = try HTTPRequest(method: .get, url: "http://a.test/events")
        var unbounded = HTTPClient.RequestOptions()
        unbounded.readTimeout = .zero
        unbounded.headTimeout = .zero
        let quiet = try preparer.prepare(request, body: nil, options: unbounded)
        #expect(quiet.readTimeout == nil && quiet.headDeadline == .distantFuture)
        let short = try preparer.prepare(request, body: nil, options: .init(headTimeout: .seconds(2), readTimeout: .seconds(1)))
        #expect(short.readTimeout == .seconds(1))
        #expect(short.headDeadline.nanoseconds - short.startedAt.nanoseconds == 2_000_000_000)
    }

    @Test func aClientWithoutBoundsLeavesThemOff() throws {
        let preparer = try Self.preparer { $0.readTimeout = nil; $0.headTimeout = nil }
        let prepared = try preparer.prepare(try HTTPRequest(method: .get, url: "http://a.test/"), body: nil, options: .init())
        #expect(prepared.readTimeout == nil && prepared.headDeadline == .distantFuture)
    }
}
