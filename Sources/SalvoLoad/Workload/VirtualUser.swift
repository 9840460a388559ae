import HTTPTypes
import SalvoTransport

/// One virtual user: its state, the scenario of its call in flight, the buffer its requests
/// are written into. Lives on its connection's loop and is touched only there. Its connection
/// asks it for the next call's bytes and hands it each response; it knows nothing of the
/// user's type.
/// Stored properties are `@exclusivity(unchecked)`, as the engine's loop-confined objects':
/// one thread touches them, and no access spans a call that could reach them again.
final class VirtualUser {
    private let user: UserStorage
    private let scenarios: [ScenarioRuntime]
    /// The scenario of the call in flight, one of `scenarios` (which keep it): reached with
    /// no count taken.
    @exclusivity(unchecked) private var scenario: Unmanaged<ScenarioRuntime>
    private let totalWeight: UInt64
    private let head: ScriptedHead
    private let tally: ScriptTally
    private let defaultPath: String
    private let buffer = ScriptBuffer(capacity: 512)
    @exclusivity(unchecked) private var random: SplitMix64
    /// Whether the call in flight is a HEAD (its response has no body, whatever it announces).
    @exclusivity(unchecked) private(set) var isHead = false
    /// Whether the call in flight keeps its response's body.
    @exclusivity(unchecked) private(set) var keepsBody = false
    /// The fields of the response to the call in flight that its checks and hook read.
    @exclusivity(unchecked) private(set) var fields = FieldSelection.none
    /// HTTP/2: the call in flight as a header list over `buffer`'s bytes (nil over HTTP/1.1).
    @exclusivity(unchecked) private(set) var http2Request: ScriptedHTTP2Request?

    init(user: UserStorage, index: Int, scenarios: [ScenarioRuntime], head: ScriptedHead, tally: ScriptTally, defaultPath: String) {
        self.http2Request = head.http2Fields == nil ? nil : ScriptedHTTP2Request()
        self.user = user
        self.scenarios = scenarios
        self.scenario = Unmanaged.passUnretained(scenarios[0])
        self.totalWeight = UInt64(scenarios.reduce(0) { $0 + $1.weight })
        self.head = head
        self.tally = tally
        self.defaultPath = defaultPath
        self.random = SplitMix64(seed: UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
    }

    deinit { self.user.destroy(self.user.address) }

    /// The last call's bytes as built, to send again (a stream the server refused unprocessed).
    var lastRequest: UnsafeRawBufferPointer { self.buffer.bytes }

    /// Builds the next call's request; nil when the script failed (counted, nothing to send).
    func nextRequest() -> UnsafeRawBufferPointer? {
        self.scenario = Unmanaged.passUnretained(self.scenarios[self.pick()])
        return self.scenario._withUnsafeGuaranteedRef { self.nextRequest(of: $0) }
    }

    private func nextRequest(of scenario: ScenarioRuntime) -> UnsafeRawBufferPointer? {
        var request = ScriptedRequest(method: scenario.method, path: scenario.path ?? self.defaultPath)
        do {
            try scenario.build(self.user.address, &request)
        } catch {
            self.tally.scriptFailed("scenario \"\(scenario.name)\": \(error)")
            return nil
        }
        let encoded: Result<Bool, ScriptFailure>
        if self.http2Request != nil {
            encoded = self.head.encodeHTTP2(request, into: self.buffer, list: &self.http2Request!)
        } else {
            encoded = self.head.encode(request, into: self.buffer)
        }
        switch encoded {
        case .failure(let failure):
            self.tally.scriptFailed("scenario \"\(scenario.name)\": \(failure.message)")
            return nil
        case .success(let isHead):
            self.isHead = isHead
        }
        self.keepsBody = scenario.keepsBody
        self.fields = scenario.fields
        return self.buffer.bytes
    }

    /// Checks and hands over the response to the call in flight; returns how long to think
    /// (ns) before the next call.
    func responded(_ response: borrowing ScriptedResponse) -> UInt64 {
        self.scenario._withUnsafeGuaranteedRef { self.responded(response, in: $0) }
    }

    private func responded(_ response: borrowing ScriptedResponse, in scenario: ScenarioRuntime) -> UInt64 {
        self.tally.scenarioResponses[scenario.index] += 1
        for check in scenario.checks {
            self.tally.count(check.number, passed: scenario.passes(check, response))
        }
        if let respond = scenario.respond {
            do {
                try respond(self.user.address, response)
            } catch {
                self.tally.scriptFailed("scenario \"\(scenario.name)\", reading its response: \(error)")
            }
        }
        let think = scenario.thinkTime
        if think.high == think.low { return think.low }
        return think.low + self.random.next() % (think.high - think.low + 1)   // at most an hour: no overflow
    }

    /// The call in flight got no response (its connection failed, or it timed out).
    func abandoned() {
        self.scenario._withUnsafeGuaranteedRef { scenario in
            self.tally.unanswered[scenario.index] += 1
            for check in scenario.checks { self.tally.count(check.number, passed: false) }
        }
    }

    /// The scenario of the next call, by weight.
    private func pick() -> Int {
        if self.scenarios.count == 1 { return 0 }
        var draw = Int(self.random.next() % self.totalWeight)
        for (index, scenario) in self.scenarios.enumerated() {
            draw -= scenario.weight
            if draw < 0 { return index }
        }
        return self.scenarios.count - 1
    }
}

/// What one loop's users counted, by check and scenario number; turned into names once, at
/// the end. Loop-confined, as its users; the counts sit in plain memory, counted without
/// the checks a Swift array of a class takes on each change.
/// Stored properties are `@exclusivity(unchecked)`, as the engine's loop-confined objects':
/// one thread touches them, and no access spans a call that could reach them again.
final class ScriptTally {
    let passed: UnsafeMutableBufferPointer<Int>
    let failed: UnsafeMutableBufferPointer<Int>
    let scenarioResponses: UnsafeMutableBufferPointer<Int>
    let unanswered: UnsafeMutableBufferPointer<Int>
    @exclusivity(unchecked) private var errors = 0
    @exclusivity(unchecked) private var firstError: String?

    init(checks: Int, scenarios: Int) {
        self.passed = .allocate(capacity: checks)
        self.passed.initialize(repeating: 0)
        self.failed = .allocate(capacity: checks)
        self.failed.initialize(repeating: 0)
        self.scenarioResponses = .allocate(capacity: scenarios)
        self.scenarioResponses.initialize(repeating: 0)
        self.unanswered = .allocate(capacity: scenarios)
        self.unanswered.initialize(repeating: 0)
    }

    deinit {
        self.passed.deallocate()
        self.failed.deallocate()
        self.scenarioResponses.deallocate()
        self.unanswered.deallocate()
    }

    @inline(__always)
    func count(_ check: Int, passed: Bool) {
        if passed { self.passed[check] += 1 } else { self.failed[check] += 1 }
    }

    func scriptFailed(_ message: String) {
        self.errors += 1
        if self.firstError == nil { self.firstError = message }
    }

    func statistics(checkNames: [String], scenarioNames: [String]) -> ScriptStatistics {
        var statistics = ScriptStatistics()
        for (number, name) in checkNames.enumerated() {
            statistics.checks[name] = ScriptStatistics.CheckCount(passed: self.passed[number], failed: self.failed[number])
        }
        for (number, name) in scenarioNames.enumerated() {
            statistics.scenarios[name, default: 0] += self.scenarioResponses[number]
            if self.unanswered[number] > 0 { statistics.unanswered[name, default: 0] += self.unanswered[number] }
        }
        statistics.scriptErrors = self.errors
        statistics.firstScriptError = self.firstError
        return statistics
    }
}
