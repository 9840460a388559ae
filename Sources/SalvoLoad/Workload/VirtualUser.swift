import SalvoTransport

/// What a scripted connection asks of its user, on its loop: the next call's bytes, and what
/// to do with its response. (The connection knows nothing of the user's type.)
protocol ScriptDriver: AnyObject {
    /// Builds the next call's request; nil when the script failed (counted, nothing to send).
    func nextRequest() -> UnsafeRawBufferPointer?
    /// Whether the call in flight is a HEAD (its response has no body, whatever it announces).
    var isHead: Bool { get }
    /// Whether the call in flight keeps its response's body.
    var keepsBody: Bool { get }
    /// Checks and hands over the response to the call in flight; returns how long to think
    /// (ns) before the next call.
    func responded(_ response: borrowing ScriptedResponse) -> UInt64
}

/// One virtual user: its state, the scenario of its call in flight, the buffer its requests
/// are written into. Lives on its connection's loop and is touched only there.
final class VirtualUser<User>: ScriptDriver {
    private var user: User
    private let scenarios: [CompiledScenario<User>]
    private let totalWeight: Int
    private let head: ScriptedHead
    private let tally: ScriptTally
    private let defaultPath: String
    private let buffer = ScriptBuffer(capacity: 512)
    private var random: SplitMix64
    private var current = 0
    private(set) var isHead = false
    private(set) var keepsBody = false

    init(user: User, index: Int, scenarios: [CompiledScenario<User>], head: ScriptedHead, tally: ScriptTally, defaultPath: String) {
        self.user = user
        self.scenarios = scenarios
        self.totalWeight = scenarios.reduce(0) { $0 + $1.scenario.weight }
        self.head = head
        self.tally = tally
        self.defaultPath = defaultPath
        self.random = SplitMix64(seed: UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
    }

    func nextRequest() -> UnsafeRawBufferPointer? {
        self.current = self.pick()
        let scenario = self.scenarios[self.current].scenario
        var request = ScriptedRequest(method: scenario.method, path: scenario.path ?? self.defaultPath)
        do {
            try scenario.build(&self.user, &request)
        } catch {
            self.tally.scriptFailed("scenario \"\(scenario.name)\": \(error)")
            return nil
        }
        if let failure = self.head.encode(request, into: self.buffer) {
            self.tally.scriptFailed("scenario \"\(scenario.name)\": \(failure.message)")
            return nil
        }
        self.isHead = request.method == .head
        self.keepsBody = self.scenarios[self.current].keepsBody
        return self.buffer.bytes
    }

    func responded(_ response: borrowing ScriptedResponse) -> UInt64 {
        let compiled = self.scenarios[self.current]
        self.tally.scenarioResponses[compiled.index] += 1
        for (check, number) in zip(compiled.scenario.checks, compiled.checkNumbers) {
            self.tally.count(number, passed: check.passes(response))
        }
        if let respond = compiled.scenario.respond {
            do {
                try respond(&self.user, response)
            } catch {
                self.tally.scriptFailed("scenario \"\(compiled.scenario.name)\", reading its response: \(error)")
            }
        }
        let think = compiled.scenario.thinkTime
        if think.high == think.low { return think.low }
        return think.low + self.random.next() % (think.high - think.low + 1)   // at most an hour: no overflow
    }

    /// The scenario of the next call, by weight.
    private func pick() -> Int {
        if self.scenarios.count == 1 { return 0 }
        var draw = Int(self.random.next() % UInt64(self.totalWeight))
        for (index, compiled) in self.scenarios.enumerated() {
            draw -= compiled.scenario.weight
            if draw < 0 { return index }
        }
        return self.scenarios.count - 1
    }
}

/// What one loop's users counted, by check and scenario number; turned into names once, at
/// the end. Loop-confined, as its users.
final class ScriptTally {
    var passed: [Int]
    var failed: [Int]
    var scenarioResponses: [Int]
    private var errors = 0
    private var firstError: String?

    init(checks: Int, scenarios: Int) {
        self.passed = Array(repeating: 0, count: checks)
        self.failed = Array(repeating: 0, count: checks)
        self.scenarioResponses = Array(repeating: 0, count: scenarios)
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
        }
        statistics.scriptErrors = self.errors
        statistics.firstScriptError = self.firstError
        return statistics
    }
}

/// A small, fast generator of pseudo-random numbers (SplitMix64), seeded per user so that
/// runs repeat their choices.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
