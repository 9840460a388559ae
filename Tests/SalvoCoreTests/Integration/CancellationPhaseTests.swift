import SalvoTestSupport
import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore

/// A request cancelled in each phase of its life: the caller hears exactly once, a
/// cancellation naming the phase, soon; the connection the request held is closed (its
/// exchange is unfinished), and the client serves the next request.
///
/// Until a connection takes it, a request waits in the pool (phase `.pool`) while the pool
/// resolves, connects and shakes hands for it: the connection is the pool's, and goes on
/// after the cancellation, to wait idle for the next request or fail at its own timeout.
///
/// Each row runs twice: a completion handler cancelled through its handle (the handler's
/// calls counted), and an awaiting task cancelled as a task. Past the pool, the phase the error
/// names proves the request had reached the stage when it was cancelled.
@Suite struct CancellationPhaseTests {
    enum Stage: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case resolving, waitingForAPooledConnection, connecting, tlsHandshake, writingTheHead,
             writingAStreamedBody, waitingForTheHead, inARedirectChain
        var testDescription: String { self.rawValue }
    }

    /// How long a request is given to reach `stage` before it is cancelled: a writing stage
    /// two seconds (a 12 MiB head takes a while to check in a debug build on a loaded machine),
    /// a stage past a connection (and a redirect's hop) one, the others well within their
    /// connect timeout.
    static func settle(_ stage: Stage) -> Duration {
        switch stage {
        case .writingTheHead, .writingAStreamedBody: .seconds(2)
        case .waitingForTheHead, .inARedirectChain: .seconds(1)
        default: .milliseconds(400)
        }
    }

    /// Everything one stage needs; `close()` releases what it set up.
    struct Setup: Sendable {
        var request: HTTPRequest
        var body: HTTPBody?
        var phase: TransportError.Phase
        var configure: @Sendable (inout HTTPClient.Configuration) -> Void = { _ in }
        /// Started first on the same client (the request that holds the pool's only connection).
        var occupying: HTTPRequest?
        var close: @Sendable () -> Void = {}
    }

    func setup(_ stage: Stage) async throws -> Setup {
        let faults = try await Shared.faults.get()
        switch stage {
        case .resolving:
            // A resolver that never answers: only the cancellation ends the wait for it.
            return Setup(request: try get("http://never.resolves.test:80/"), phase: .pool) {
                $0.connectTimeout = .seconds(30)
                // Longer than the connect timeout that ends the attempt; not forever, so that
                // nothing of the test outlives it for long.
                $0.nameResolution.resolver = { _, _ in
                    try await Task.sleep(for: .seconds(60))
                    return []
                }
            }
        case .waitingForAPooledConnection:
            return Setup(request: try get(faults.url("/ok")), phase: .pool,
                         configure: { $0.maxConnectionsPerHost = 1; $0.threads = 1 },
                         occupying: try get(faults.url("/stall")))
        case .connecting:
            let listener = try FullBacklogListener()
            return Setup(request: try get("http://127.0.0.1:\(listener.port)/"), phase: .pool,
                         configure: { $0.connectTimeout = .seconds(30) }, close: { listener.close() })
        case .tlsHandshake:
            // The fault server waits for a request head; a ClientHello never ends one.
            let port = faults.url("/").split(separator: ":").last!.split(separator: "/").first!
            return Setup(request: try get("https://127.0.0.1:\(port)/"), phase: .pool, configure: { $0.connectTimeout = .seconds(30) })
        case .writingTheHead:
            // A server that never reads: the kernel takes a few MiB, then the 12 MiB field
            // waits to be written.
            let listener = try SilentListener()
            var request = try get("http://127.0.0.1:\(listener.port)/")
            request.headerFields[HTTPField.Name("X-Large")!] = String(repeating: "a", count: 12 << 20)
            return Setup(request: request, phase: .write, close: { listener.close() })
        case .writingAStreamedBody:
            let listener = try SilentListener()
            var request = try get("http://127.0.0.1:\(listener.port)/upload")
            request.method = .post
            let body = HTTPBody.producer { writer in
                let chunk = [UInt8](repeating: 0x61, count: 64 * 1024)
                while true { try await writer.write(chunk) }
            }
            return Setup(request: request, body: body, phase: .write, close: { listener.close() })
        case .waitingForTheHead:
            return Setup(request: try get(faults.url("/stall")), phase: .readHead)
        case .inARedirectChain:
            // The first hop is answered; the second never is.
            return Setup(request: try get(faults.url("/redirect?code=302&to=/stall")), phase: .readHead)
        }
    }

    /// Waits until `client` holds no open connection but idle ones and ones still being made,
    /// or eight seconds pass: a connection being made when its request was cancelled is the
    /// pool's, and goes on, to wait idle for the next request or fail at its connect timeout
    /// (thirty seconds in these rows, so that the cancellation comes first however loaded the
    /// machine). None may be leased: the cancelled request holds nothing.
    func openConnections(_ client: HTTPClient) async -> (open: Int, idle: Int, connecting: Int) {
        func counts(_ statistics: PoolStatistics) -> (open: Int, idle: Int, connecting: Int) {
            let hosts = statistics.hosts.values
            return (statistics.openConnections, hosts.reduce(0) { $0 + $1.idle }, hosts.reduce(0) { $0 + $1.connecting })
        }
        var now = counts(await client.poolStatistics())
        let deadline = ContinuousClock.now + .seconds(8)
        while now.open > now.idle + now.connecting, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
            now = counts(await client.poolStatistics())
        }
        return now
    }

    /// Waits until the request under test has reached the pool (queued there, or on a
    /// connection when `leased`), at most ten seconds: an https request first builds its TLS
    /// context off the loop, which on a loaded machine can outlast a stage's settling time,
    /// and a cancellation then rightly names `.request`, a phase before the one the row tests.
    func reachedThePool(_ client: HTTPClient, leased: Bool, besides occupying: Bool, _ label: String) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let hosts = await client.poolStatistics().hosts.values
            let reached = hosts.reduce(0) { $0 + $1.leased + (leased ? 0 : $1.queued) }
            if reached > (occupying ? 1 : 0) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw StageNotReached(description: "\(label): the request did not reach the pool in ten seconds: \(await client.poolStatistics())")
    }

    struct StageNotReached: Error, CustomStringConvertible {
        var description: String
    }

    func check(_ error: TransportError, _ setup: Setup, _ stage: Stage, _ how: String, heard after: Duration) {
        #expect(error.code == .cancelled && error.cancellationReason == .caller, "\(stage) (\(how)): \(error)")
        #expect(error.phase == setup.phase, "\(stage) (\(how)): cancelled in \(String(describing: error.phase)), not \(setup.phase)")
        // Cancelled before a byte left, the request was not processed; after, it may have been.
        let sent = [.write, .readHead, .readBody].contains(setup.phase)
        #expect(error.mayHaveBeenProcessed == sent, "\(stage) (\(how)): mayHaveBeenProcessed \(error.mayHaveBeenProcessed)")
        // Soon: far below the rows' connect (30 s) and read (60 s) timeouts, which would end them
        // otherwise.
        #expect(after < .seconds(10), "\(stage) (\(how)): heard \(after) after the cancel")
    }

    @Test(arguments: Stage.allCases) func aCancellationIsHeardOnceInEveryPhase(_ stage: Stage) async throws {
        let faults = try await Shared.faults.get()
        for how in ["handle", "task"] {
            let setup = try await self.setup(stage)
            defer { setup.close() }
            let client = try makeClient { $0.readTimeout = .seconds(60); setup.configure(&$0) }
            defer { client.shutdown() }
            let occupying = setup.occupying.map { request in Task { try? await client.execute(request) } }
            // Until the occupying request holds the pool's one connection.
            while occupying != nil, await client.poolStatistics().openConnections == 0 {
                try await Task.sleep(for: .milliseconds(10))
            }

            let start: ContinuousClock.Instant
            let heardAt: ContinuousClock.Instant
            let error: TransportError?
            if how == "handle" {
                let calls = Mutex<[(result: Result<CollectedResponse, TransportError>, at: ContinuousClock.Instant)]>([])
                let handle = client.execute(setup.request, body: setup.body) { result in calls.withLock { $0.append((result, .now)) } }
                try await reachedThePool(client, leased: setup.phase != .pool, besides: occupying != nil, "\(stage) (\(how))")
                try await Task.sleep(for: Self.settle(stage))
                start = .now
                handle.cancel()
                handle.cancel()
                while calls.withLock({ $0.isEmpty }), ContinuousClock.now - start < .seconds(20) {
                    try await Task.sleep(for: .milliseconds(10))
                }
                // A second call would come now, if it ever came.
                try await Task.sleep(for: .milliseconds(300))
                let heard = calls.withLock { $0 }
                #expect(heard.count == 1, "\(stage): the completion handler was called \(heard.count) times")
                if case .failure(let failure)? = heard.first?.result { error = failure } else { error = nil }
                heardAt = heard.first?.at ?? .now
            } else {
                let task = Task { try await client.execute(setup.request, body: setup.body) }
                try await reachedThePool(client, leased: setup.phase != .pool, besides: occupying != nil, "\(stage) (\(how))")
                try await Task.sleep(for: Self.settle(stage))
                start = .now
                task.cancel()
                do {
                    _ = try await task.value
                    error = nil
                } catch let failure as TransportError {
                    error = failure
                }
                heardAt = .now
            }
            guard let error else {
                Issue.record("\(stage) (\(how)): the request did not fail")
                continue
            }
            check(error, setup, stage, how, heard: heardAt - start)

            occupying?.cancel()
            _ = await occupying?.value
            let (open, idle, connecting) = await openConnections(client)
            #expect(open == idle + connecting, "\(stage) (\(how)): \(open) connections open, \(idle) of them idle, \(connecting) being made")
            // Past the pool the request had a connection of its own: closed, not made anew.
            #expect(setup.phase == .pool || connecting == 0, "\(stage) (\(how)): \(connecting) connections being made")
            // The client is whole: the next request is served.
            let next = try await client.execute(try get(faults.url("/ok")), options: .init(timeout: .seconds(10)))
            #expect(next.text == "hello", "\(stage) (\(how))")
        }
    }

    /// The streaming form: cancelled while the body comes, the reader's next chunk is the
    /// cancellation, once; the connection (its body unread) is closed.
    @Test func aCancellationWhileTheBodyStreamsEndsTheReadOnce() async throws {
        let faults = try await Shared.faults.get()
        let client = try makeClient()
        defer { client.shutdown() }
        let response = try await client.stream(try get(faults.url("/stall-body")))
        let reader = Task { () -> (chunks: [[UInt8]], error: TransportError?) in
            var chunks: [[UInt8]] = []
            do {
                for try await chunk in response.body { chunks.append(chunk) }
                return (chunks, nil)
            } catch let error as TransportError {
                return (chunks, error)
            } catch {
                return (chunks, nil)
            }
        }
        try await Task.sleep(for: .milliseconds(400))
        let start = ContinuousClock.now
        reader.cancel()
        let (chunks, error) = await reader.value
        #expect(chunks.flatMap { $0 } == Array("abc".utf8))
        #expect(error?.code == .cancelled && error?.phase == .readBody, "\(String(describing: error))")
        #expect(ContinuousClock.now - start < .seconds(5))
        let (open, idle, connecting) = await openConnections(client)
        #expect(open == idle && connecting == 0, "\(open) connections open, \(idle) of them idle, \(connecting) being made")
    }
}

/// A loopback listener that never accepts, its accept queue filled first: the kernel drops
/// the next connection's SYN, and that connect waits.
final class FullBacklogListener: Sendable {
    let port: Int
    private let fd: Int32
    private let fillers: [Int32]

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard let port = bindToLoopback(fd), listen(fd, 0) == 0 else {
            _ = Glibc.close(fd)
            throw TestServerError("cannot listen")
        }
        self.fd = fd
        self.port = port
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        // A backlog of 0 holds one connection; two more make sure of it.
        fillers = (0..<3).map { _ in
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            return filler
        }
        usleep(100_000)
    }

    func close() {
        for filler in fillers { _ = Glibc.close(filler) }
        _ = Glibc.close(fd)
    }
}
