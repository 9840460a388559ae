import Foundation
@testable import Salvo
import SalvoTestSupport
import Testing

/// Retries over the engine where a redirect chain was partly answered.
@Suite struct RetryAcrossRedirectsTests {
    /// A POST answered 303 whose GET cannot connect: the error used to say "phase connect",
    /// nothing sent, so the retry policy sent the whole POST again — a second order.
    @Test func aPostAnswered303IsNotPostedAgainWhenTheRedirectFails() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        defer { server.stop() }
        let nowhere = try freePort()
        let client = try Client(baseURL: server.url("/"), configuration: .init(timeout: .seconds(20), middleware: [
            RetryMiddleware(RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), budget: nil)),
        ]))
        let target = "http://127.0.0.1:\(nowhere)/receipt"
        let order = Endpoint<Empty>.post("/redirect", body: ["item": "book"],
                                         query: [QueryItem("code", "303"), QueryItem("to", target)])
        do throws(ClientError) {
            _ = try await client.send(order)
            Issue.record("the follow-up to a closed port succeeded")
        } catch {
            #expect(error.code == .transportFailed, "\(error)")
            #expect(error.transportError?.code == .connectionRefused)
            #expect(error.mayHaveBeenProcessed)
        }
        let posts = try server.log().requests.filter { $0.method == "POST" }
        #expect(posts.count == 1, "the order was posted \(posts.count) times")
    }
}
