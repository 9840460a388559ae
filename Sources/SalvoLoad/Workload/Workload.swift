import HTTPTypes
import SalvoCore

/// A scripted load test: virtual users, each with its own state and its own connection,
/// making calls picked from weighted scenarios, their responses checked and counted — wrk's
/// Lua hooks or k6's virtual users, compiled Swift on the load generator's connections.
///
/// ```swift
/// struct Reader { var token = ""; var page = 0 }
///
/// let workload = Workload<String, Reader>(
///     setup: { context in                       // once, before the load: log in
///         let login = try HTTPRequest(method: .post, url: context.url("/login"))
///         let response = try await context.client.execute(login, body: .bytes(Array("user=load".utf8)))
///         return String(decoding: response.body, as: UTF8.self)
///     },
///     user: { index, token in Reader(token: token, page: index) },
///     scenarios: [
///         Scenario("page", weight: 9, checks: [.status(200), .field(.contentType, contains: "json")]) { reader, request in
///             reader.page = (reader.page + 1) % 100
///             request.path = "/pages/\(reader.page)"
///         },
///         Scenario("account", checks: [.status(200)], thinkTime: .fixed(.milliseconds(5))) { reader, request in
///             request.path = "/account"
///             request.headerFields[.authorization] = "Bearer \(reader.token)"
///         },
///     ])
/// await workload.main(url: "http://127.0.0.1:8080")   // salvo bench's options and report
/// ```
///
/// Each connection of the run is one virtual user: it makes one call at a time (no
/// pipelining), over HTTP/1.1 — plain or TLS, directly, through a proxy or a Unix socket — or
/// over HTTP/2, one stream at a time on its own connection.
/// Closed-loop by default; with a rate, calls go out on schedule and latency counts from when
/// each was due, as in `salvo bench`.
public struct Workload<Shared: Sendable, User>: Sendable {
    public var scenarios: [Scenario<User>]
    /// The most bytes of a response body kept for checks and `response` hooks (bodies are
    /// read and counted whole; a check that reads a body larger than this fails).
    public var bodyLimit = 1 << 20
    let setup: @Sendable (WorkloadContext) async throws -> Shared
    let teardown: @Sendable (WorkloadContext, Shared) async throws -> Void
    let makeUser: @Sendable (Int, Shared) -> User

    /// - Parameters:
    ///   - setup: runs once before the load, with a client configured as the run (its TLS
    ///     settings, proxy and Unix socket); what it returns is handed to every user (a
    ///     token, ids to use). If it throws, the run does not start.
    ///   - teardown: runs once after the load (also when the load could not start), with what
    ///     `setup` returned.
    ///   - user: makes user `index`'s state (0 ..< connections), on its connection's loop.
    ///   - scenarios: what the users call, each call picking one by weight.
    public init(setup: @escaping @Sendable (WorkloadContext) async throws -> Shared,
                teardown: @escaping @Sendable (WorkloadContext, Shared) async throws -> Void = { _, _ in },
                user: @escaping @Sendable (_ index: Int, Shared) -> User,
                scenarios: [Scenario<User>]) {
        self.setup = setup
        self.teardown = teardown
        self.makeUser = user
        self.scenarios = scenarios
    }
}

extension Workload where Shared == Void {
    /// A workload without set-up: each user's state made from its index.
    public init(user: @escaping @Sendable (_ index: Int) -> User, scenarios: [Scenario<User>]) {
        self.init(setup: { _ in }, user: { index, _ in user(index) }, scenarios: scenarios)
    }
}

extension Workload where Shared == Void, User == Void {
    /// A workload whose users keep no state.
    public init(scenarios: [Scenario<Void>]) {
        self.init(setup: { _ in }, user: { _, _ in }, scenarios: scenarios)
    }
}

/// What a workload's `setup` and `teardown` get: a client configured as the run, and the
/// run's URL.
public struct WorkloadContext: Sendable {
    /// A client with the run's TLS settings, proxy and Unix socket; the run's fields are not
    /// added to its requests.
    public let client: HTTPClient
    /// The URL the run was given.
    public let url: RequestURL

    /// The run's origin with `path` (which begins with "/") after it, as text for
    /// `HTTPRequest(method:url:)`.
    public func url(_ path: String) -> String {
        "\(self.url.key)\(path)"
    }
}

/// Why a workload did not run, or did not finish cleanly.
public struct WorkloadError: Error, CustomStringConvertible {
    public enum Phase: String, Sendable {
        /// The workload or the run's settings cannot run (no scenario, a weight below 1…).
        case configuration
        case setup
        /// The load itself could not start (the host did not resolve, TLS could not be set up).
        case load
        /// After the load: the statistics are in ``statistics``.
        case teardown
    }

    public let phase: Phase
    public let underlying: any Error
    /// What the load measured, when the error came after it.
    public let statistics: LoadStatistics?

    public var description: String { "workload \(self.phase.rawValue) failed: \(self.underlying)" }
}
