import SalvoTestSupport
import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore

/// What the seam tells besides head and body — timeouts of each kind, cancellation reasons,
/// the version, interim heads, redirect hops, decoding, metrics — from the engine, against
/// the scripted server.
@Suite struct TransportDetailsTests {
    func code(_ body: () async throws -> Void) async -> TransportError? {
        do {
            try await body()
            return nil
        } catch let error as TransportError {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func headTimeoutsStopAtTheHead() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        // The head comes after 2 s: an error instead of the response proves the timeout fired.
        let late = await self.code {
            _ = try await client.send(try get(server.url("/slow-head?ms=2000")), body: nil, options: TransportOptions(headTimeout: .milliseconds(200)))
        }
        #expect(late?.code == .headTimeout)
        #expect(late?.phase == .readHead)

        // Once the head is in, the head timeout no longer counts: the body may stall past it…
        // (five seconds for the head: the shared server may be busy with other tests; the read
        // timeout is longer, so that only the stalled body can end it)
        let stalled = try await client.send(try get(server.url("/stall-body")), body: nil,
                                            options: TransportOptions(headTimeout: .seconds(5), readTimeout: .seconds(8)))
        var chunks = stalled.body.makeAsyncIterator()
        #expect(try await chunks.next() == Array("abc".utf8))
        // …until the read timeout of this request ends it.
        let silence = await self.code { _ = try await chunks.next() }
        #expect(silence?.code == .readTimeout)
    }

    @Test func anAbsoluteDeadlineEndsTheExchange() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let deadline = ContinuousClock.now + .milliseconds(300)
        let error = await self.code {
            _ = try await client.execute(try get(server.url("/slow-head?ms=2000")), options: .init(timeout: .seconds(30), deadline: deadline))
        }
        #expect(error?.code == .totalTimeout, "the head would have come after 2 s")
    }

    /// A request that waits for a busy pool past its head timeout was never sent.
    @Test func aHeadTimeoutInThePoolMeansNothingWasSent() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.maxConnectionsPerHost = 1; $0.threads = 1 }
        defer { client.shutdown() }
        // The blocker's answer would take 10 s: on a loaded machine the tries below must not
        // outlast it. It is cancelled once they are done.
        let blocker = Task { try await client.execute(try get(server.url("/slow-head?ms=10000"))) }
        // Once the blocker holds the only connection (on a loaded machine it may start late:
        // wait for it, up to 10 s), the quick request waits in the pool. Until then it simply
        // succeeds: try again.
        var leased = 0
        for _ in 0..<200 {
            leased = await client.poolStatistics().hosts.values.reduce(0) { $0 + $1.leased }
            if leased > 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        try #require(leased > 0, "the blocker never got its connection")
        var error: TransportError?
        for _ in 0..<25 where error == nil {
            error = await self.code {
                _ = try await client.execute(try get(server.url("/ok")), options: .init(headTimeout: .milliseconds(200)))
            }
        }
        #expect(error?.code == .headTimeout)
        #expect(error?.phase == .pool)
        #expect(error?.mayHaveBeenProcessed == false)
        blocker.cancel()
        _ = try? await blocker.value
    }

    @Test func cancellationsSayWhy() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let task = Task { try await client.execute(try get(server.url("/slow-head?ms=2000"))) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        let byCaller = await self.code { _ = try await task.value }
        #expect(byCaller?.code == .cancelled)
        #expect(byCaller?.cancellationReason == .caller)

        // The server answers before the body is sent: the request succeeds, the body's
        // writer learns why it is not wanted.
        let (body, writer) = HTTPBody.makeWritable(length: 1000)
        var request = try HTTPRequest(method: .post, url: server.url("/status?code=413&expect=final"))
        request.headerFields[.expect] = "100-continue"
        let response = try await client.execute(request, body: body)
        #expect(response.status.code == 413)
        let refused = await self.code { try await writer.write([UInt8](repeating: 1, count: 10)) }
        #expect(refused?.cancellationReason == .serverAnsweredEarly)
    }

    @Test func versionInterimHeadsAndDecoding() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        #expect(try await client.execute(try get(server.url("/http10"))).version == .http1_0)
        let interim = try await client.execute(try get(server.url("/continue")))
        #expect(interim.version == .http1_1)
        #expect(interim.interimResponses.map(\.status.code) == [100, 103])
        #expect(interim.interimResponses.last?.headerFields[HTTPField.Name("Link")!] != nil)

        let coded = try await client.send(try get(server.url("/coded?n=5000")), body: nil, options: TransportOptions())
        #expect(coded.decodedContentEncoding == "gzip")
        #expect(coded.headerFields[.contentEncoding] == "gzip", "the head says what the server sent")
        let text = try await coded.body.collect(upTo: 1 << 20)
        #expect(text.count == 5000)
        let metrics = try #require(coded.body.metrics)
        #expect(metrics.bodyBytesDelivered == 5000)
        #expect(metrics.responseBytesReceived < 5000, "compressed on the wire")
        #expect(try await client.execute(try get(server.url("/ok"))).decodedContentEncoding == nil)
    }

    @Test func redirectHopsAreKept() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let response = try await client.execute(try get(server.url("/chain?n=2")))
        #expect(response.status == .ok)
        #expect(response.redirects.map { $0.request.path } == ["/chain?n=2", "/chain?n=1"])
        #expect(response.redirects.map(\.response.status.code) == [302, 302])
        #expect(response.effectiveRequest?.path == "/chain?n=0")
        #expect(response.metrics.redirects == 2)
        #expect(try await client.execute(try get(server.url("/ok"))).effectiveRequest == nil)
    }

    @Test func metricsTellANewConnectionFromAReusedOne() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.threads = 1 }
        defer { client.shutdown() }
        let first = try await client.execute(try get(server.url("/ok"))).metrics
        #expect(first.reusedConnection == false)
        #expect(first.connect != nil && first.dnsLookup != nil)
        #expect(first.tlsHandshake == nil && first.tlsResumed == nil)
        #expect(first.queueWait != nil && first.timeToFirstByte != nil && first.timeToHead != nil && first.total != nil)
        #expect(first.requestBytesSent > 20)
        #expect(first.responseBytesReceived > 5)
        #expect(first.bodyBytesDelivered == 5)
        let second = try await client.execute(try get(server.url("/ok"))).metrics
        #expect(second.reusedConnection)
        #expect(second.connect == nil && second.dnsLookup == nil)
        #expect(try #require(second.timeToFirstByte) <= #require(second.total))
        // Both went to the server's address from the same local one; only the first opened a
        // connection.
        #expect(first.remote == SocketEndpoint(address: "127.0.0.1", port: server.port))
        #expect(second.remote == first.remote)
        #expect(first.local?.address == "127.0.0.1" && (first.local?.port ?? 0) > 0)
        #expect(second.local == first.local)
        #expect(first.connectionsOpened == 1 && second.connectionsOpened == 0)
    }

    /// A redirect whose server closes the connection makes the call open two; the count is
    /// over the whole chain.
    @Test func connectionsOpenedCountsTheChain() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient {
            $0.threads = 1
            $0.redirects = RedirectPolicy(maxRedirects: 5)
        }
        defer { client.shutdown() }
        let closing = CLITests.raw(server, "HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        let metrics = try await client.execute(try get(closing)).metrics
        #expect(metrics.redirects == 1)
        #expect(metrics.connectionsOpened == 2)
        let ipv6 = try? await FaultServer.start(host: "::1")
        if let ipv6 {
            defer { ipv6.stop() }
            let over6 = try await client.execute(try get(ipv6.url("/ok"))).metrics
            #expect(over6.remote == SocketEndpoint(address: "::1", port: ipv6.port))
            #expect(over6.remote?.description == "[::1]:\(ipv6.port)")
        }
    }
}
