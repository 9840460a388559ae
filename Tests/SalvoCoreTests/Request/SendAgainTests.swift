import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore

/// What a request's owner decides over real connections, for the defects found where lower
/// layers used to decide for it (RequestStateMachineTests has every path without sockets).
@Suite(.serialized) struct SendAgainTests {
    /// A POST answered 303 whose GET then cannot connect: the call's error must say the POST
    /// may have been processed (it was answered), or a retry layer would send a second order.
    @Test func aPostAnswered303WhoseNextRequestCannotConnectMayHaveBeenProcessed() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        defer { server.stop() }
        let nowhere = try freePort()
        let client = try makeClient()
        defer { client.shutdown() }
        var request = try get(server.url("/redirect?code=303&to=" + "http://127.0.0.1:\(nowhere)/receipt".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!))
        request.method = .post
        do {
            _ = try await client.execute(request, body: .string("one order"), options: .init(timeout: .seconds(10)))
            Issue.record("the follow-up to a closed port succeeded")
        } catch {
            #expect(error.code == .connectionRefused && error.phase == .connect, "\(error)")
            #expect(error.mayHaveBeenProcessed, "the POST was answered before the GET failed")
        }
        let posts = try server.log().requests.filter { $0.method == "POST" }
        #expect(posts.count == 1)
    }

    /// A proxy that grants CONNECT and closes at once: the POST tunnelled through it gets one
    /// tunnel and fails — it used to open tunnel after tunnel (93 in 2 s), and without a
    /// timeout never ended.
    @Test(arguments: [nil, Duration.seconds(5)])
    func aTunnelClosedAtOnceCostsOneAttempt(timeout: Duration?) async throws {
        let proxy = try await ScriptedProxy.start()
        var tunnelling = HTTPProxy(host: "127.0.0.1", port: proxy.port)
        tunnelling.tunnelsPlainHTTP = true
        let client = try makeClient {
            $0.threads = 1
            $0.proxy = .all(tunnelling)
        }
        defer { client.shutdown() }
        var request = try get("http://dropped.test:8080/orders")
        request.method = .post
        let order = request
        let outcome = try await withWatchdog(.seconds(30)) { () async -> Result<Int, TransportError> in
            do throws(TransportError) {
                return .success(try await client.execute(order, body: .string("one order"), options: .init(timeout: timeout)).status.code)
            } catch {
                return .failure(error)
            }
        }
        guard case .failure(let error) = outcome else {
            Issue.record("a closed tunnel answered: \(outcome)")
            return
        }
        #expect(error.mayHaveBeenProcessed, "the POST went into the tunnel: \(error)")
        let connects = proxy.heads.filter { $0.hasPrefix("CONNECT dropped.test:8080 ") }
        #expect(connects.count == 1, "\(connects.count) tunnels for one request")
    }

    /// A GET sent again after a keep-alive race goes once more, and only once: a server that
    /// drops every reused connection as the request arrives gets two tries, not a storm.
    @Test func aRaceIsSentAgainOnceOnly() async throws {
        let server = try await FaultServer.start(lifetime: 120)
        defer { server.stop() }
        let client = try makeClient { $0.maxConnectionsPerHost = 1 }
        defer { client.shutdown() }
        // Warm a connection that drops the next request it gets.
        _ = try await client.execute(try get(server.url("/drop-next")))
        let response = try await client.execute(try get(server.url("/ok")), options: .init(timeout: .seconds(10)))
        #expect(response.status == .ok)
        #expect(response.metrics.reusedConnection == false, "answered on the fresh connection it was sent again on")
        let paths = try server.log().requests.map(\.path)
        #expect(paths == ["/drop-next", "/ok", "/ok"], "\(paths)")
    }
}
