import CLLHTTP
import SalvoCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The part of a load run on one event loop: its connections, its share of the request
/// budget, its statistics. Loop-confined; it reports to the generator once, at the end.
/// Stored properties are `@exclusivity(unchecked)`, as the engine's loop-confined objects':
/// one thread touches them, and no access spans a call that could reach them again.
final class LoadWorker: TimerTarget {
    private enum TimerToken: UInt64 { case tick = 1, stop, retry }

    let loop: EventLoop
    let address: SocketAddress
    /// The URL's host, for TLS (SNI and name verification), and its port.
    let host: String
    let port: Int
    let depth: Int
    let requestLength: Int
    /// `depth + 1` copies of the request, back to back (see `LoadConnection`).
    let requestBuffer: UnsafeMutableRawPointer
    let settings: UnsafeMutablePointer<llhttp_settings_t>
    /// A scripted run: `settings` with the callbacks that hand over a head's fields piece by
    /// piece, for the responses whose head cannot be walked whole (see `LoadConnection+Script.swift`).
    @exclusivity(unchecked) private(set) var fieldSettings: UnsafeMutablePointer<llhttp_settings_t>?
    let timeoutNanoseconds: UInt64
    let connectTimeoutNanoseconds: UInt64
    /// Rate mode: nanoseconds between two requests of one connection.
    let rateInterval: UInt64?
    let isHead: Bool
    let live: LiveCounters
    /// The run's TLS context, for https, and the session new connections offer again.
    let tls: TLSContext?
    /// The proxy `address` is of, if the load goes through one.
    let proxy: HTTPProxy?
    let resumeSessions: Bool
    @exclusivity(unchecked) var resumption: TLSResumption?
    /// HTTP/2: the request's header list (nil: the run speaks HTTP/1.1), and its body.
    let http2: HTTP2HeaderBlock?
    let body: [UInt8]
    /// A scripted run: the workload's plan, and what this loop's users counted.
    private let script: ScriptPlan?
    private let scriptTally: ScriptTally?
    /// The most bytes of a response body a scripted user keeps.
    let bodyLimit: Int

    @exclusivity(unchecked) var statistics = LoadStatistics()
    @exclusivity(unchecked) private var statusCounts = [Int](repeating: 0, count: 1000)
    @exclusivity(unchecked) private var connections: [LoadConnection] = []
    @exclusivity(unchecked) private var budget: Int?
    @exclusivity(unchecked) private var stopping = false
    @exclusivity(unchecked) private var started: UInt64 = 0
    private let duration: Duration
    @exclusivity(unchecked) private var pendingRetries: [LoadConnection] = []
    @exclusivity(unchecked) private var retryArmed = false
    private let completion: @Sendable (LoadStatistics) -> Void

    init(loop: EventLoop, address: SocketAddress, request: [UInt8], configuration: LoadConfiguration,
         connections: Int, budget: Int?, live: LiveCounters, tls: TLSContext? = nil, http2: HTTP2HeaderBlock? = nil,
         script: ScriptPlan? = nil, firstUser: Int = 0, completion: @escaping @Sendable (LoadStatistics) -> Void) {
        self.script = script
        self.scriptTally = script.map { ScriptTally(checks: $0.checkNames.count, scenarios: $0.scenarioNames.count) }
        self.bodyLimit = script?.bodyLimit ?? 0
        self.tls = tls
        self.http2 = http2
        self.body = configuration.body
        self.proxy = configuration.unixSocketPath == nil ? configuration.proxy : nil
        self.resumeSessions = configuration.tlsResumption
        self.loop = loop
        self.address = address
        self.host = configuration.url.host
        self.port = configuration.url.port
        self.depth = http2 == nil ? configuration.pipeline : configuration.streams
        self.requestLength = request.count
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: request.count * (configuration.pipeline + 1), alignment: 16)
        for copy in 0...configuration.pipeline {
            request.withUnsafeBytes { bytes in
                (buffer + copy * request.count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            }
        }
        self.requestBuffer = buffer
        self.settings = .allocate(capacity: 1)
        llhttp_settings_init(self.settings)
        self.settings.pointee.on_headers_complete = { parser in
            LoadConnection.borrowed(parser) { $0.headersCompleted() }
        }
        self.settings.pointee.on_message_complete = { parser in
            LoadConnection.borrowed(parser) { connection in
                connection.messageCompleted(keepAlive: llhttp_should_keep_alive(parser) != 0)
                return 0
            }
        }
        self.timeoutNanoseconds = configuration.timeout.nanosecondsClamped
        self.connectTimeoutNanoseconds = configuration.connectTimeout.nanosecondsClamped
        if let rate = configuration.rate {
            // Each connection carries an equal share of the rate.
            let perConnection = rate / Double(configuration.connections)
            self.rateInterval = UInt64(min(1e15, max(1, (1e9 / perConnection).rounded())))
        } else {
            self.rateInterval = nil
        }
        self.longestPause = self.rateInterval ?? 0
        self.isHead = configuration.method == .head
        self.budget = budget
        self.duration = configuration.duration
        self.live = live
        self.completion = completion
        if let script, let tally = self.scriptTally {
            self.fieldSettings = LoadConnection.keepResponses(in: self.settings)
            let path = configuration.url.target
            let scenarios = script.makeScenarios()
            self.longestPause = max(self.rateInterval ?? 0, scenarios.map(\.thinkTime.high).max() ?? 0)
            self.connections = (0..<connections).map { index in
                let user = VirtualUser(user: script.makeUser(firstUser + index), index: firstUser + index, scenarios: scenarios,
                                       head: script.head, tally: tally, defaultPath: path)
                return LoadConnection(worker: self, settings: self.settings, script: user)
            }
        } else {
            self.connections = (0..<connections).map { _ in LoadConnection(worker: self, settings: self.settings) }
        }
    }

    deinit {
        self.fieldSettings?.deallocate()
        self.requestBuffer.deallocate()
        self.settings.deallocate()
    }

    // MARK: Running

    func start() {
        self.started = LoadClock.now()
        self.lastProgress = self.started
        if self.duration > .zero {
            self.loop.scheduleTimer(at: self.loop.refreshNow() + self.duration, target: self, token: TimerToken.stop.rawValue)
        }
        self.scheduleTick()
        if self.budget == 0 {
            self.finish()
            return
        }
        for connection in self.connections { connection.connect(now: self.started) }
    }

    /// Asks the worker to end now (Ctrl-C, or the generator's stop()).
    func stop() {
        self.finish()
    }

    /// Takes up to `wanted` requests from the budget; 0 when the run is over.
    @inline(__always)
    func takeBudget(_ wanted: Int) -> Int {
        if self.stopping { return 0 }
        guard let remaining = self.budget else { return wanted }
        let granted = min(wanted, remaining)
        self.budget = remaining - granted
        return granted
    }

    /// Gives back requests that were taken but never answered (their connection failed).
    func returnBudget(_ count: Int) {
        if let remaining = self.budget, count > 0, !self.stopping { self.budget = remaining + count }
    }

    /// Where the first request of a connection falls in the schedule: spread evenly over
    /// one interval, so a constant rate does not start as a burst.
    func initialOffset(_ interval: UInt64) -> UInt64 {
        let index = UInt64(self.connectionsStarted % max(1, self.connections.count))
        self.connectionsStarted += 1
        return UInt64(Double(interval) * Double(index) / Double(max(1, self.connections.count)))
    }
    @exclusivity(unchecked) private var connectionsStarted = 0

    @inline(__always)
    func record(status: Int, latencyNanoseconds: UInt64) {
        if self.stopping { return }
        self.statistics.requests += 1
        if status >= 0 && status < self.statusCounts.count { self.statusCounts[status] += 1 }
        if status >= 400 { self.statistics.errors.status += 1 }
        _ = self.statistics.latency.record(max(1, latencyNanoseconds / 1000))
        if self.budget == 0 && self.connections.allSatisfy({ $0.inFlight == 0 || $0.state != .open }) {
            // Counting the last in-flight response: the run is complete when none remain.
            self.finishSoon()
        }
    }

    @exclusivity(unchecked) private var finishQueued = false
    /// For ``isStalled(now:)``: the responses counted when progress was last seen, and when.
    @exclusivity(unchecked) private var answeredAtLastProgress = 0
    /// The longest wait a connection may make before a call on purpose: a constant rate's
    /// interval, or a scripted user's longest think time (ns).
    @exclusivity(unchecked) private var longestPause: UInt64 = 0
    @exclusivity(unchecked) private var lastProgress: UInt64 = 0

    /// Finishes after the current parser callback returns (it is inside llhttp_execute).
    private func finishSoon() {
        guard !self.finishQueued else { return }
        self.finishQueued = true
        let worker = LoopBoundWorker(self)
        self.loop.execute { worker.value.finish() }
    }

    /// A scripted user's call that was not sent (its script failed): the run may be complete.
    func scriptCallFailed() {
        if self.budget == 0 && self.connections.allSatisfy({ $0.inFlight == 0 || $0.state != .open }) { self.finishSoon() }
    }

    func connectionClosed(_ connection: LoadConnection) {
        guard !self.stopping else { return }
        if self.budget == 0 {
            if self.connections.allSatisfy({ $0.inFlight == 0 || $0.state != .open }) { self.finishSoon() }
            return
        }
        connection.connect(now: LoadClock.now())
    }

    func connectFailed(_ connection: LoadConnection) {
        guard !self.stopping else { return }
        self.statistics.errors.connect += 1
        // Try again shortly: a refused port would otherwise spin the loop.
        self.pendingRetries.append(connection)
        if !self.retryArmed {
            self.retryArmed = true
            self.loop.scheduleTimer(at: self.loop.refreshNow() + .milliseconds(10), target: self, token: TimerToken.retry.rawValue)
        }
    }

    private func scheduleTick() {
        self.loop.scheduleTimer(at: self.loop.refreshNow() + .milliseconds(100), target: self, token: TimerToken.tick.rawValue)
    }

    func timerFired(token: UInt64, now: Deadline) {
        guard !self.stopping, let which = TimerToken(rawValue: token) else { return }
        switch which {
        case .stop:
            self.finish()
        case .retry:
            self.retryArmed = false
            let retries = self.pendingRetries
            self.pendingRetries.removeAll(keepingCapacity: true)
            let clock = LoadClock.now()
            for connection in retries where connection.state == .closed { connection.connect(now: clock) }
        case .tick:
            let clock = LoadClock.now()
            for connection in self.connections where connection.isOverdue(now: clock) {
                if connection.state == .connecting {
                    self.statistics.errors.connect += 1
                } else {
                    self.statistics.errors.timeout += 1
                }
                connection.reconnect()
            }
            self.publish()
            if self.isStalled(now: clock) {
                self.statistics.stalled = true
                self.finish()
                return
            }
            self.scheduleTick()
        }
    }

    /// A run bounded by its request count alone ends when nothing has been answered for
    /// longer than a call may take — a connection opened, a response waited for, the longest
    /// pause a schedule or a user's think time puts before a call, and a second — so that a
    /// server that is down, or that never answers, cannot hold it forever. (A run with a
    /// duration counts errors until its end, as wrk does.)
    private func isStalled(now: UInt64) -> Bool {
        guard self.duration == .zero else { return false }
        if self.statistics.requests != self.answeredAtLastProgress {
            self.answeredAtLastProgress = self.statistics.requests
            self.lastProgress = now
            return false
        }
        let patience = self.timeoutNanoseconds &+ self.connectTimeoutNanoseconds &+ self.longestPause &+ 1_000_000_000
        return now &- self.lastProgress > patience
    }

    private func publish() {
        self.live.requests.store(self.statistics.requests, ordering: .relaxed)
        self.live.errors.store(self.statistics.errors.total + self.statistics.errors.status, ordering: .relaxed)
    }

    private func finish() {
        guard !self.stopping else { return }
        self.stopping = true
        for connection in self.connections { connection.close() }
        self.statistics.elapsedNanoseconds = LoadClock.now() &- self.started
        for (code, count) in self.statusCounts.enumerated() where count > 0 {
            self.statistics.statusCounts[code] = count
        }
        if let script = self.script, let tally = self.scriptTally {
            self.statistics.script = tally.statistics(checkNames: script.checkNames, scenarioNames: script.scenarioNames)
        }
        self.publish()
        self.completion(self.statistics)
        // Break the worker ↔ connection references so both go away after the run.
        self.connections.removeAll()
        self.pendingRetries.removeAll()
    }
}

/// Carries a worker into a closure for its own loop.
/// @unchecked Sendable: the worker is used only on its loop's thread.
struct LoopBoundWorker: @unchecked Sendable {
    let value: LoadWorker
    init(_ value: LoadWorker) { self.value = value }
}
