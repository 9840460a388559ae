import Dispatch
import HTTPTypes
import SalvoCore
import Synchronization

/// The same closed-loop load as ``LoadGenerator``, driven through `HTTPClient`'s public
/// APIs instead of the loop-native connections, so the cost of each API can be measured.
public enum ClientAPI: String, Sendable, CaseIterable {
    /// N tasks on Swift's default executor, each awaiting `execute` in a loop.
    case async
    /// The same tasks preferring the event loops as their executor: no thread hops.
    case asyncOnLoop = "async-loop"
    /// N chains of completion handlers, each starting the next request from the last one's handler.
    case callbacks
}

public struct ClientLoad: Sendable {
    public let configuration: LoadConfiguration
    public let api: ClientAPI

    public init(configuration: LoadConfiguration, api: ClientAPI) throws(HTTPClientError) {
        try configuration.validate()
        guard configuration.rate == nil else {
            throw HTTPClientError(.invalidConfiguration, detail: "the client APIs run closed-loop, without a rate")
        }
        self.configuration = configuration
        self.api = api
    }

    public func run() async throws(HTTPClientError) -> LoadStatistics {
        let configuration = self.configuration
        let group: EventLoopGroup
        do {
            group = try EventLoopGroup(numberOfThreads: configuration.threads, name: "salvo-client")
        } catch {
            throw HTTPClientError(.invalidConfiguration, detail: "\(error)")
        }
        defer { group.shutdown() }
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.maxConnectionsPerHost = configuration.connections
        // With pipelining, `pipeline` callers per connection, the client lining them up.
        clientConfiguration.pipeliningDepth = configuration.pipeline
        clientConfiguration.unixSocketPath = configuration.unixSocketPath
        if let proxy = configuration.proxy { clientConfiguration.proxy = .all(proxy) }
        let callers = configuration.callers ?? configuration.connections * configuration.pipeline
        clientConfiguration.connectTimeout = configuration.connectTimeout
        clientConfiguration.tls = configuration.tls
        let client = try HTTPClient(configuration: clientConfiguration, eventLoopGroup: group)
        defer { client.shutdown() }

        var head = HTTPRequest(method: configuration.method, scheme: configuration.url.scheme.rawValue,
                               authority: configuration.url.key.authority, path: configuration.url.target,
                               headerFields: configuration.headerFields)
        if head.headerFields[.userAgent] == nil { head.headerFields[.userAgent] = "salvo-bench/0.1" }
        let request = head
        let body: HTTPBody? = configuration.body.isEmpty ? nil : .bytes(configuration.body)
        let options = HTTPClient.RequestOptions(timeout: configuration.timeout)
        let plan = Plan(configuration: configuration)
        let started = ContinuousClock.now

        var total = LoadStatistics()
        switch self.api {
        case .async, .asyncOnLoop:
            let onLoop = self.api == .asyncOnLoop
            total = await withTaskGroup(of: LoadStatistics.self) { tasks in
                for index in 0..<callers {
                    let work: @Sendable () async -> LoadStatistics = {
                        var tally = CallerTally()
                        // One clock reading per request: a response's end is the next one's start.
                        var now = Deadline.now()
                        while plan.take(at: now) {
                            let began = now
                            do throws(HTTPClientError) {
                                let response = try await client.execute(request, body: body, options: options)
                                now = tally.record(response, since: began)
                            } catch {
                                tally.statistics.record(error)
                                now = Deadline.now()
                            }
                        }
                        return tally.finished()
                    }
                    if onLoop {
                        tasks.addTask(executorPreference: group.loops[index % group.loops.count], operation: work)
                    } else {
                        tasks.addTask(operation: work)
                    }
                }
                var merged = LoadStatistics()
                for await part in tasks { merged.add(part) }
                return merged
            }
        case .callbacks:
            total = await withCheckedContinuation { (done: CheckedContinuation<LoadStatistics, Never>) in
                let results = Mutex<(LoadStatistics, Int)>((LoadStatistics(), callers))
                for _ in 0..<callers {
                    let chain = CallbackChain(client: client, request: request, body: body, options: options, plan: plan) { statistics in
                        let finished = results.withLock { state -> LoadStatistics? in
                            state.0.add(statistics)
                            state.1 -= 1
                            return state.1 == 0 ? state.0 : nil
                        }
                        if let finished { done.resume(returning: finished) }
                    }
                    chain.next()
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        total.elapsedNanoseconds = elapsed.nanosecondsClamped
        let pool = await client.poolStatistics()
        total.connectionsOpened = pool.connectionsOpened
        total.connectionsReused = pool.connectionsReused
        total.requestsPipelined = pool.hosts.values.reduce(0) { $0 + $1.pipelined }
        return total
    }
}

/// When to stop: a deadline, a request budget, or both. Shared by all tasks of a run. On the
/// monotonic clock in nanoseconds, as the engine's deadlines: read per request, it must cost
/// the load tool less than the request it counts.
final class Plan: Sendable {
    private let deadline: Deadline
    private let budget: Atomic<Int>
    private let limited: Bool

    init(configuration: LoadConfiguration) {
        self.deadline = configuration.duration > .zero ? Deadline.now() + configuration.duration : .distantFuture
        self.limited = configuration.requestLimit != nil
        self.budget = Atomic(configuration.requestLimit ?? 0)
    }

    /// Takes one request from the plan at `now`; false when the run is over.
    func take(at now: Deadline) -> Bool {
        if now >= self.deadline { return false }
        if self.limited {
            return self.budget.subtract(1, ordering: .relaxed).newValue >= 0
        }
        return true
    }
}

/// One closed loop of completion handlers: each response's handler (on the loop thread)
/// records it and starts the next request.
final class CallbackChain: @unchecked Sendable {
    // @unchecked Sendable: after next() is first called, the chain is touched only from
    // its requests' completion handlers, which run one at a time on one loop thread.
    private let client: HTTPClient
    private let request: HTTPRequest
    private let body: HTTPBody?
    private let options: HTTPClient.RequestOptions
    private let plan: Plan
    private let done: @Sendable (LoadStatistics) -> Void
    private var tally = CallerTally()
    private var began = Deadline.now()

    init(client: HTTPClient, request: HTTPRequest, body: HTTPBody?, options: HTTPClient.RequestOptions, plan: Plan,
         done: @escaping @Sendable (LoadStatistics) -> Void) {
        self.client = client
        self.request = request
        self.body = body
        self.options = options
        self.plan = plan
        self.done = done
    }

    /// Starts the next request at `now` (one clock reading per request: a response's end is
    /// the next one's start).
    func next(at now: Deadline = .now()) {
        guard self.plan.take(at: now) else {
            self.done(self.tally.finished())
            return
        }
        self.began = now
        self.client.execute(self.request, body: self.body, options: self.options) { result in
            switch result {
            case .success(let response):
                self.next(at: self.tally.record(response, since: self.began))
            case .failure(let error):
                self.tally.statistics.record(error)
                self.next()
            }
        }
    }
}

/// One caller's statistics. Status codes are counted by runs: consecutive responses nearly
/// always share one, so most are counted without hashing into the statistics' dictionary.
struct CallerTally {
    var statistics = LoadStatistics()
    private var runCode = 0
    private var runLength = 0

    /// A response to a request sent at `began`; returns the clock reading it ended at.
    @discardableResult
    mutating func record(_ response: HTTPClientResponse, since began: Deadline) -> Deadline {
        self.statistics.requests += 1
        self.statistics.bytesRead += response.body.count
        let code = response.status.code
        if code != self.runCode {
            self.endRun()
            self.runCode = code
        }
        self.runLength += 1
        if code >= 400 { self.statistics.errors.status += 1 }
        let now = Deadline.now()
        let elapsed = now.nanoseconds &- began.nanoseconds
        _ = self.statistics.latency.record(max(1, elapsed / 1000))
        return now
    }

    private mutating func endRun() {
        if self.runLength > 0 { self.statistics.statusCounts[self.runCode, default: 0] += self.runLength }
        self.runLength = 0
    }

    /// The statistics, every status counted.
    mutating func finished() -> LoadStatistics {
        self.endRun()
        return self.statistics
    }
}

extension LoadStatistics {

    mutating func record(_ error: HTTPClientError) {
        switch error.code {
        case .dnsFailure, .connectionRefused, .connectFailed, .connectTimeout: self.errors.connect += 1
        case .writeFailed: self.errors.write += 1
        case .readTimeout, .totalTimeout, .poolWaitTimeout: self.errors.timeout += 1
        case .readFailed, .remoteClosed, .emptyResponse, .truncatedBody, .truncatedHead: self.errors.read += 1
        default: self.errors.protocol += 1
        }
    }
}
