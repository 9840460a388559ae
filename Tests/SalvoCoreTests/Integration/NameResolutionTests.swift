import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore
import SalvoTestSupport

/// Host names to addresses: overrides, a resolver of one's own, localhost, the cache, the
/// address family — against the fault server on loopback.
@Suite struct NameResolutionTests {
    @Test func overridesInCurlsSpelling() async throws {
        let entry = try ResolveOverride("api.test:8443:127.0.0.1,[::1]")
        #expect(entry.host == "api.test" && entry.port == 8443 && entry.addresses == ["127.0.0.1", "::1"])
        #expect(try ResolveOverride("*:80:10.0.0.1").host == "*")
        for bad in ["api.test:80", "api.test:0:127.0.0.1", "api.test:*:127.0.0.1", "api.test:80:not-an-address", ":80:127.0.0.1", "api.test:80:"] {
            #expect(throws: TransportError.self, "\(bad)") { try ResolveOverride(bad) }
        }
    }

    /// As curl: the latest entry for a name wins, a name's own before "*", and overrides
    /// apply to numeric hosts too.
    @Test func whichOverrideWins() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient {
            $0.nameResolution.overrides = [
                ResolveOverride(host: "api.test", port: server.port, addresses: ["192.0.2.1"]),
                ResolveOverride(host: "api.test", port: server.port, addresses: ["127.0.0.1"]),
                ResolveOverride(host: "*", port: server.port, addresses: ["192.0.2.2"]),
                ResolveOverride(host: "10.255.255.1", port: server.port, addresses: ["127.0.0.1"]),
            ]
            $0.connectTimeout = .seconds(2)
        }
        defer { client.shutdown() }
        #expect(try await client.execute(try get("http://api.test:\(server.port)/ok")).status == .ok)
        #expect(try await client.execute(try get("http://10.255.255.1:\(server.port)/ok")).status == .ok)
        #expect(try ResolveOverride("+api.test:80:127.0.0.1").host == "api.test")
    }

    @Test func theCacheStaysBounded() async throws {
        let resolver = HostResolver(NameResolution(resolver: { _, _ in ["127.0.0.1"] }))
        let group = try EventLoopGroup(numberOfThreads: 1)
        defer { group.shutdown() }
        let loop = group.next()
        for index in 0..<(HostResolver.maxCachedNames + 10) {
            _ = await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                resolver.resolve(host: "h\(index).test", port: 80, on: loop) { _ in done.resume() }
            }
        }
        #expect(resolver.cachedNames <= HostResolver.maxCachedNames)
    }

    /// Connections opened together for one name wait for one lookup, not one each.
    @Test func concurrentLookupsOfANameAreMerged() async throws {
        let asked = Mutex(0)
        let release = AsyncStream<Void>.makeStream()
        let resolver = HostResolver(NameResolution(cacheLifetime: .zero, resolver: { _, _ in
            asked.withLock { $0 += 1 }
            for await _ in release.stream { break }
            return ["127.0.0.1"]
        }))
        let group = try EventLoopGroup(numberOfThreads: 2)
        defer { group.shutdown() }
        let loops = group.loops
        let answered = try await withThrowingTaskGroup(of: Int.self) { tasks in
            for index in 0..<16 {
                let loop = loops[index % 2]
                tasks.addTask { [resolver] in
                    await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
                        resolver.resolve(host: "Merged.test", port: 80, on: loop) { result in
                            done.resume(returning: (try? result.get())?.count ?? 0)
                        }
                    }
                }
            }
            // Everyone has joined before the one lookup answers.
            for _ in 0..<500 where resolver.lookupWaiters(host: "merged.test", port: 80) < 16 {
                try await Task.sleep(for: .milliseconds(10))
            }
            release.continuation.yield()
            release.continuation.finish()
            var total = 0
            for try await found in tasks { total += found }
            return total
        }
        #expect(asked.withLock { $0 } == 1)
        #expect(answered == 16)
        #expect(resolver.lookupsInFlight == 0)
    }

    @Test func anOverrideSendsANameToItsAddress() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.nameResolution.overrides = [ResolveOverride(host: "API.Test", port: server.port, addresses: ["127.0.0.1"])] }
        defer { client.shutdown() }
        let response = try await client.execute(try get("http://api.test:\(server.port)/ok"))
        #expect(response.status == .ok && response.body == Array("hello".utf8))
        // Another port is not overridden: the name goes to DNS, which does not know it.
        let other = try makeClient {
            $0.nameResolution.overrides = [ResolveOverride(host: "api.test", port: 1, addresses: ["127.0.0.1"])]
            $0.nameResolution.resolver = { host, _ in throw CancellationError() }
            $0.connectTimeout = .seconds(120)   // (see aResolverOfOnesOwnIsAskedOncePerLifetime)
        }
        defer { other.shutdown() }
        let code = await errorCode { _ = try await other.execute(try get("http://api.test:\(server.port)/ok")) }
        #expect(code == .dnsFailure)
    }

    @Test func aResolverOfOnesOwnIsAskedOncePerLifetime() async throws {
        let server = try await Shared.faults.get()
        let asked = Mutex(0)
        let client = try makeClient {
            $0.maxConnectionsPerHost = 1
            $0.idleTimeout = .milliseconds(1)   // every request makes a new connection
            // The resolver runs on Swift's shared pool, which other tests' blocking waits may
            // hold for a while: no connect deadline to race that.
            $0.connectTimeout = .seconds(120)
            $0.nameResolution.resolver = { host, _ in
                asked.withLock { $0 += 1 }
                return host == "svc.internal" ? ["127.0.0.1"] : []
            }
        }
        defer { client.shutdown() }
        for _ in 0..<3 {
            #expect(try await client.execute(try get("http://svc.internal:\(server.port)/ok")).status == .ok)
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(asked.withLock { $0 } == 1, "cached for its lifetime")
        let empty = await errorCode { _ = try await client.execute(try get("http://nothing.internal:\(server.port)/ok")) }
        #expect(empty == .dnsFailure)
        // Without a cache, every new connection asks (so the three above were new ones).
        let askedAgain = Mutex(0)
        let uncached = try makeClient {
            $0.maxConnectionsPerHost = 1
            $0.idleTimeout = .milliseconds(1)
            $0.connectTimeout = .seconds(120)
            $0.nameResolution.cacheLifetime = .zero
            $0.nameResolution.resolver = { _, _ in
                askedAgain.withLock { $0 += 1 }
                return ["127.0.0.1"]
            }
        }
        defer { uncached.shutdown() }
        for _ in 0..<3 {
            #expect(try await uncached.execute(try get("http://svc.internal:\(server.port)/ok")).status == .ok)
            // Until the idle timeout has closed the connection, so that the next one is new.
            for _ in 0..<1000 where await uncached.poolStatistics().openConnections > 0 {
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        #expect(askedAgain.withLock { $0 } == 3)
    }

    @Test func localhostNeverGoesToDNS() async throws {
        let server = try await Shared.faults.get()
        let client = try makeClient { $0.nameResolution.resolver = { _, _ in throw CancellationError() } }
        defer { client.shutdown() }
        #expect(try await client.execute(try get("http://localhost:\(server.port)/ok")).status == .ok)
        #expect(try await client.execute(try get("http://app.localhost:\(server.port)/ok")).status == .ok)
    }

    @Test func theFamilyAskedFor() async throws {
        let server = try await Shared.faults.get()
        let v6 = try makeClient { $0.nameResolution.family = .ipv6 }
        defer { v6.shutdown() }
        let code = await errorCode { _ = try await v6.execute(try get("http://127.0.0.1:\(server.port)/ok")) }
        #expect(code == .connectFailed, "an IPv4 address when only IPv6 is wanted (curl: 7)")
        let v4 = try makeClient { $0.nameResolution.family = .ipv4 }
        defer { v4.shutdown() }
        #expect(try await v4.execute(try get("http://localhost:\(server.port)/ok")).status == .ok)
    }
}
