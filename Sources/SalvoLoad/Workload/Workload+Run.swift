import HTTPTypes
import SalvoCore

extension Workload {
    /// Runs `setup`, the load as `configuration` describes it (its URL, connections — one
    /// user each —, threads, duration or request count, rate, fields, TLS, proxy), then
    /// `teardown`, and returns what the load measured, checks and scenarios included
    /// (``LoadStatistics/script``).
    ///
    /// - Parameters:
    ///   - configuration: the URL, connections, threads, duration or request count, rate and
    ///     the rest of the run, as `salvo bench` takes them.
    ///   - started: called with the run's generator as the load begins, to show its
    ///   ``LoadGenerator/progress()`` or ``LoadGenerator/stop()`` it early.
    public func run(_ configuration: LoadConfiguration,
                    started: @escaping @Sendable (LoadGenerator) -> Void = { _ in }) async throws(WorkloadError) -> LoadStatistics {
        func failed(_ phase: WorkloadError.Phase, _ error: any Error, _ statistics: LoadStatistics? = nil) -> WorkloadError {
            WorkloadError(phase: phase, underlying: error, statistics: statistics)
        }
        let head: ScriptedHead
        do {
            try self.validate(configuration)
            head = try ScriptedHead(configuration: configuration)
        } catch {
            throw failed(.configuration, error)
        }
        let client: HTTPClient
        do {
            client = try HTTPClient(configuration: Self.clientConfiguration(for: configuration))
        } catch {
            throw failed(.setup, error)
        }
        defer { client.shutdown() }
        let context = WorkloadContext(client: client, url: configuration.url)
        let shared: Shared
        do {
            shared = try await self.setup(context)
        } catch {
            throw failed(.setup, error)
        }
        let statistics: LoadStatistics
        do {
            let generator = try LoadGenerator(configuration: configuration, script: self.plan(head: head, shared: shared))
            started(generator)
            statistics = try await generator.run()
        } catch {
            // What setup made is undone all the same; the load's failure is the one reported.
            try? await self.teardown(context, shared)
            throw failed(.load, error)
        }
        do {
            try await self.teardown(context, shared)
        } catch {
            throw failed(.teardown, error, statistics)
        }
        return statistics
    }

    /// Refuses what a scripted run cannot do.
    func validate(_ configuration: LoadConfiguration) throws(TransportError) {
        func invalid(_ text: String) -> TransportError { TransportError(.invalidConfiguration, detail: text) }
        try configuration.validate()
        guard !self.scenarios.isEmpty else { throw invalid("a workload needs at least one scenario") }
        for scenario in self.scenarios where !(1...1_000_000).contains(scenario.weight) {
            throw invalid("scenario \"\(scenario.name)\" has weight \(scenario.weight); weights are 1...1000000")
        }
        for scenario in self.scenarios where scenario.thinkTime.high > Duration.seconds(3600).nanosecondsClamped {
            throw invalid("scenario \"\(scenario.name)\" thinks for over an hour")
        }
        guard self.bodyLimit >= 0 else { throw invalid("the body limit cannot be negative") }
        guard configuration.pipeline == 1 else { throw invalid("a workload's users make one call at a time (no pipelining)") }
        guard !configuration.http2 || configuration.streams == 1 else {
            throw invalid("a workload's user makes one call at a time: over HTTP/2, one stream per connection (no --streams)")
        }
        guard configuration.body.isEmpty, configuration.method == .get else {
            throw invalid("a workload's scenarios give the method and the body, not the run")
        }
        if configuration.rate != nil, let scenario = self.scenarios.first(where: { !$0.thinkTime.isNone }) {
            throw invalid("scenario \"\(scenario.name)\" thinks between calls, which a constant rate's schedule decides; drop one of them")
        }
    }

    /// The client `setup` and `teardown` use: the run's TLS, proxy and Unix socket.
    static func clientConfiguration(for run: LoadConfiguration) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.tls = run.tls
        configuration.unixSocketPath = run.unixSocketPath
        if let proxy = run.proxy { configuration.proxy = .all(proxy) }
        configuration.connectTimeout = run.connectTimeout
        configuration.httpVersion = .http1Only
        return configuration
    }

    /// The scenarios as the run's connections use them: check names numbered once, each
    /// scenario's checks by number, a user maker for each connection.
    func plan(head: ScriptedHead, shared: Shared) -> ScriptPlan {
        var checkNames: [String] = []
        var numbers: [String: Int] = [:]
        let checkNumbers = self.scenarios.map { scenario in
            scenario.checks.map { check -> Int in
                if let number = numbers[check.name] { return number }
                numbers[check.name] = checkNames.count
                checkNames.append(check.name)
                return checkNames.count - 1
            }
        }
        let scenarios = self.scenarios
        let makeUser = self.makeUser
        return ScriptPlan(head: head, checkNames: checkNames, scenarioNames: self.scenarios.map(\.name), bodyLimit: self.bodyLimit,
                          makeScenarios: {
                              scenarios.enumerated().map { ScenarioRuntime($1, index: $0, checkNumbers: checkNumbers[$0]) }
                          },
                          makeUser: { index in UserStorage(makeUser(index, shared)) })
    }
}

/// What a load run needs of a workload, its types erased: the encoded parts every request
/// shares, the names to report counts under, and how to make each loop's scenarios and each
/// connection's user.
struct ScriptPlan: Sendable {
    let head: ScriptedHead
    let checkNames: [String]
    let scenarioNames: [String]
    let bodyLimit: Int
    /// The scenarios for one loop's users (each loop has its own: no count shared between cores).
    let makeScenarios: @Sendable () -> [ScenarioRuntime]
    /// Makes user `index`'s state, on its connection's loop.
    let makeUser: @Sendable (_ index: Int) -> UserStorage
}
