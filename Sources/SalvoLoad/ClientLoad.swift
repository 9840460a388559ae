import Dispatch
import Histogram
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
    /// The fast path (`PreparedCall`): the request prepared once, each response lent to a
    /// handler that counts it — awaited on Swift's default executor, on the loops, or chained
    /// through completion handlers.
    case preparedAsync = "prepared-async"
    case preparedAsyncOnLoop = "prepared-async-loop"
    case preparedCallbacks = "prepared-callbacks"

    /// Whether the requests go through a prepared call.
    var isPrepared: Bool { self == .preparedAsync || self == .preparedAsyncOnLoop || self == .preparedCallbacks }
}

public struct ClientLoad: Sendable {
    public let configuration: LoadConfiguration
    public let api: ClientAPI

    public init(configuration: LoadConfiguration, api: ClientAPI) throws(TransportError) {
        try configuration.validate()
        guard configuration.rate == nil else {
            throw TransportError(.invalidConfiguration, detail: "the client APIs run closed-loop, without a rate")
        }
        self.configuration = configuration
        self.api = api
    }

    public func run() async throws(TransportError) -> LoadStatistics {
        let configuration = self.configuration
        let group: EventLoopGroup
        do {
            group = try EventLoopGroup(numberOfThreads: configuration.threads, name: "salvo-client")
        } catch {
            throw TransportError(.invalidConfiguration, detail: "\(error)")
        }
        defer { group.shutdown() }
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.maxConnectionsPerHost = configuration.connections
        // With pipelining, `pipeline` callers per connection, the client lining them up.
        clientConfiguration.pipeliningDepth = configuration.pipeline
        clientConfiguration.unixSocketPath = configuration.unixSocketPath
        if let proxy = configuration.proxy { clientConfiguration.proxy = .all(proxy) }
        // The version asked for, whatever the server offers: runs stay comparable.
        clientConfiguration.httpVersion = configuration.http2 ? .http2PriorKnowledge : .http1Only
        clientConfiguration.http2.connectionPerLoop = configuration.connectionPerLoop
        let callers = configuration.callers ?? configuration.connections * configuration.pipeline * configuration.streams
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

        // Every caller's latencies go into one histogram, a batch at a time: a histogram per
        // caller (~200 KiB each) thrashed the caches at a few hundred callers.
        let latencies = SharedLatencies()
        var counts = CallerCounts()
        switch self.api {
        case .preparedAsync, .preparedAsyncOnLoop, .preparedCallbacks:
            let call = try client.prepare(self.template(request: request, timeout: configuration.timeout))
            counts = await self.runPrepared(call, group: group, callers: callers, plan: plan, latencies: latencies)
        case .async, .asyncOnLoop:
            counts = await Self.runTasks(callers: callers, latencies: latencies,
                                         onLoops: self.api == .asyncOnLoop ? group.loops : []) { tally in
                // One clock reading per request: a response's end is the next one's start.
                var now = Deadline.now()
                while plan.take(at: now) {
                    let began = now
                    do throws(TransportError) {
                        let response = try await client.execute(request, body: body, options: options)
                        now = tally.record(response, since: began)
                    } catch {
                        tally.record(error)
                        now = Deadline.now()
                    }
                }
            }
        case .callbacks:
            counts = await Self.runChains(callers: callers) { done in
                CallbackChain(ExecuteSender(client: client, request: request, body: body, options: options), plan: plan,
                              latencies: latencies, done: done).next()
            }
        }
        var total = LoadStatistics()
        counts.add(to: &total)
        total.latency = latencies.histogram
        let elapsed = ContinuousClock.now - started
        total.elapsedNanoseconds = elapsed.nanosecondsClamped
        let pool = await client.poolStatistics()
        total.connectionsOpened = pool.connectionsOpened
        total.connectionsReused = pool.connectionsReused
        total.requestsPipelined = pool.hosts.values.reduce(0) { $0 + $1.pipelined }
        return total
    }
}

extension ClientLoad {
    /// Runs `callers` closed loops as tasks — each on one of `onLoops` in turn as its executor,
    /// or on Swift's default executor when it is empty — and merges what they counted.
    static func runTasks(callers: Int, latencies: SharedLatencies, onLoops loops: [EventLoop],
                         _ loop: @escaping @Sendable (inout CallerTally) async -> Void) async -> CallerCounts {
        await withTaskGroup(of: CallerCounts.self) { tasks in
            for index in 0..<callers {
                let work: @Sendable () async -> CallerCounts = {
                    var tally = CallerTally(latencies: latencies)
                    await loop(&tally)
                    return tally.finished()
                }
                if loops.isEmpty {
                    tasks.addTask(operation: work)
                } else {
                    tasks.addTask(executorPreference: loops[index % loops.count], operation: work)
                }
            }
            var merged = CallerCounts()
            for await part in tasks { merged.add(part) }
            return merged
        }
    }

    /// Starts `callers` chains of completion handlers (`start` makes and starts one, given
    /// what it calls with its counts when it ends) and waits for all of them.
    static func runChains(callers: Int, _ start: (@escaping @Sendable (CallerCounts) -> Void) -> Void) async -> CallerCounts {
        defer { threadSanitizerSawResume() }
        return await withCheckedContinuation { (done: CheckedContinuation<CallerCounts, Never>) in
            let results = Mutex<(CallerCounts, Int)>((CallerCounts(), callers))
            for _ in 0..<callers {
                start { part in
                    let finished = results.withLock { state -> CallerCounts? in
                        state.0.add(part)
                        state.1 -= 1
                        return state.1 == 0 ? state.0 : nil
                    }
                    if let finished { done.resume(returning: finished) }
                }
            }
        }
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

/// How a chain of completion handlers sends its next request: `completion` gets the response's
/// status and body length, on the loop thread that ran it. Its error is `any Error`, as a
/// prepared call's completion has it, so that the chain's closure goes to the call as it is
/// (a wrapping closure would be one more allocation per request).
protocol ChainSender: Sendable {
    func send(_ completion: @escaping @Sendable (Result<(status: Int, bodyCount: Int), any Error>) -> Void)
}

/// `execute` with a completion handler.
struct ExecuteSender: ChainSender {
    let client: HTTPClient
    let request: HTTPRequest
    let body: HTTPBody?
    let options: HTTPClient.RequestOptions

    func send(_ completion: @escaping @Sendable (Result<(status: Int, bodyCount: Int), any Error>) -> Void) {
        self.client.execute(self.request, body: self.body, options: self.options) { result in
            completion(result.map { ($0.status.code, $0.body.count) }.mapError { $0 })
        }
    }
}

/// One closed loop of completion handlers: each response's handler (on the loop thread)
/// records it and starts the next request.
final class CallbackChain<Sender: ChainSender>: @unchecked Sendable {
    // @unchecked Sendable: after next() is first called, the chain is touched only from
    // its requests' completion handlers, which run one at a time on one loop thread.
    private let sender: Sender
    private let plan: Plan
    private let done: @Sendable (CallerCounts) -> Void
    private var tally: CallerTally
    private var began = Deadline.now()

    init(_ sender: Sender, plan: Plan, latencies: SharedLatencies, done: @escaping @Sendable (CallerCounts) -> Void) {
        self.sender = sender
        self.plan = plan
        self.tally = CallerTally(latencies: latencies)
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
        self.sender.send { result in
            switch result {
            case .success(let (status, count)):
                self.next(at: self.tally.record(status: status, bodyCount: count, since: self.began))
            case .failure(let error):
                self.tally.record(error as? TransportError ?? TransportError(.invalidResponse, detail: "\(error)"))
                self.next()
            }
        }
    }
}

/// What one caller counted (its latencies go to the shared histogram).
struct CallerCounts: Sendable {
    var requests = 0
    var bytesRead = 0
    var statusCounts: [Int: Int] = [:]
    var errors = LoadStatistics.Errors()

    mutating func add(_ other: CallerCounts) {
        self.requests += other.requests
        self.bytesRead += other.bytesRead
        self.statusCounts.merge(other.statusCounts, uniquingKeysWith: +)
        self.errors.add(other.errors)
    }

    func add(to statistics: inout LoadStatistics) {
        statistics.requests += self.requests
        statistics.bytesRead += self.bytesRead
        statistics.statusCounts.merge(self.statusCounts, uniquingKeysWith: +)
        statistics.errors.add(self.errors)
    }
}

/// The latencies of all callers in one histogram. Callers hand them over in batches, so the
/// lock is taken once per batch and the histogram's memory touched in bulk.
final class SharedLatencies: Sendable {
    private let state = Mutex(LoadStatistics.emptyLatency())

    func record(_ batch: [UInt64]) {
        self.state.withLock { histogram in
            for microseconds in batch { _ = histogram.record(microseconds) }
        }
    }

    var histogram: Histogram<UInt64> { self.state.withLock { $0 } }
}

/// One caller's tally. Status codes are counted by runs: consecutive responses nearly always
/// share one, so most are counted without hashing into the dictionary. Latencies wait in a
/// small batch (a few KiB, written in order) for the shared histogram.
struct CallerTally {
    private var counts = CallerCounts()
    private var runCode = 0
    private var runLength = 0
    private var batch: [UInt64] = []
    private let latencies: SharedLatencies
    static let batchSize = 512

    init(latencies: SharedLatencies) {
        self.latencies = latencies
        self.batch.reserveCapacity(Self.batchSize)
    }

    /// A response to a request sent at `began`; returns the clock reading it ended at.
    @discardableResult
    mutating func record(_ response: CollectedResponse, since began: Deadline) -> Deadline {
        self.record(status: response.status.code, bodyCount: response.body.count, since: began)
    }

    /// A response of `status` with a body of `bodyCount` bytes, to a request sent at `began`;
    /// returns the clock reading it ended at.
    @discardableResult
    mutating func record(status code: Int, bodyCount: Int, since began: Deadline) -> Deadline {
        self.counts.requests += 1
        self.counts.bytesRead += bodyCount
        if code != self.runCode {
            self.endRun()
            self.runCode = code
        }
        self.runLength += 1
        if code >= 400 { self.counts.errors.status += 1 }
        let now = Deadline.now()
        self.batch.append(max(1, (now.nanoseconds &- began.nanoseconds) / 1000))
        if self.batch.count == Self.batchSize { self.flush() }
        return now
    }

    mutating func record(_ error: TransportError) {
        self.counts.errors.record(error)
    }

    private mutating func flush() {
        self.latencies.record(self.batch)
        self.batch.removeAll(keepingCapacity: true)
    }

    private mutating func endRun() {
        if self.runLength > 0 { self.counts.statusCounts[self.runCode, default: 0] += self.runLength }
        self.runLength = 0
    }

    /// The counts, every status counted and every latency handed over.
    mutating func finished() -> CallerCounts {
        self.endRun()
        self.flush()
        return self.counts
    }
}

extension LoadStatistics.Errors {
    mutating func record(_ error: TransportError) {
        switch error.code {
        case .dnsFailure, .connectionRefused, .connectFailed, .connectTimeout: self.connect += 1
        case .writeFailed: self.write += 1
        case .readTimeout, .totalTimeout, .poolWaitTimeout: self.timeout += 1
        case .readFailed, .remoteClosed, .emptyResponse, .truncatedBody, .truncatedHead: self.read += 1
        default: self.protocol += 1
        }
    }
}
