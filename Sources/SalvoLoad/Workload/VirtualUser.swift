import HTTPTypes
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
    /// The call in flight got no response (its connection failed, or it timed out).
    func abandoned()
}

/// A scenario as a loop's users run it: its checks numbered for the tally, and its code over
/// the user's state by address — nothing generic is looked up or copied per call.
final class ScenarioRuntime {
    let index: Int
    let name: String
    let weight: Int
    let method: HTTPRequest.Method
    let path: String?
    let checks: [Check]
    let checkNumbers: [Int]
    let thinkTime: ThinkTime
    /// Whether its responses' bodies are kept: asked for, or a check reads them.
    let keepsBody: Bool
    let build: (UnsafeMutableRawPointer, inout ScriptedRequest) throws -> Void
    let respond: ((UnsafeMutableRawPointer, borrowing ScriptedResponse) throws -> Void)?

    init<User>(_ scenario: Scenario<User>, index: Int, checkNumbers: [Int]) {
        self.index = index
        self.name = scenario.name
        self.weight = scenario.weight
        self.method = scenario.method
        self.path = scenario.path
        self.checks = scenario.checks
        self.checkNumbers = checkNumbers
        self.thinkTime = scenario.thinkTime
        self.keepsBody = scenario.keepsBody || scenario.checks.contains { $0.readsBody }
        let build = scenario.build
        self.build = { user, request in try build(&user.assumingMemoryBound(to: User.self).pointee, &request) }
        self.respond = scenario.respond.map { respond in
            { user, response in try respond(&user.assumingMemoryBound(to: User.self).pointee, response) }
        }
    }
}

/// A user's state where its scenarios reach it by address, made and destroyed with the type
/// it was made with.
struct UserStorage {
    let address: UnsafeMutableRawPointer
    let destroy: (UnsafeMutableRawPointer) -> Void

    init<User>(_ user: User) {
        let typed = UnsafeMutablePointer<User>.allocate(capacity: 1)
        typed.initialize(to: user)
        self.address = UnsafeMutableRawPointer(typed)
        self.destroy = { address in
            let typed = address.assumingMemoryBound(to: User.self)
            typed.deinitialize(count: 1)
            typed.deallocate()
        }
    }
}

/// One virtual user: its state, the scenario of its call in flight, the buffer its requests
/// are written into. Lives on its connection's loop and is touched only there.
final class VirtualUser: ScriptDriver {
    private let user: UserStorage
    private let scenarios: [ScenarioRuntime]
    private let totalWeight: UInt64
    private let head: ScriptedHead
    private let tally: ScriptTally
    private let defaultPath: String
    private let buffer = ScriptBuffer(capacity: 512)
    private var random: SplitMix64
    private var current = 0
    private(set) var isHead = false
    private(set) var keepsBody = false

    init(user: UserStorage, index: Int, scenarios: [ScenarioRuntime], head: ScriptedHead, tally: ScriptTally, defaultPath: String) {
        self.user = user
        self.scenarios = scenarios
        self.totalWeight = UInt64(scenarios.reduce(0) { $0 + $1.weight })
        self.head = head
        self.tally = tally
        self.defaultPath = defaultPath
        self.random = SplitMix64(seed: UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
    }

    deinit { self.user.destroy(self.user.address) }

    func nextRequest() -> UnsafeRawBufferPointer? {
        self.current = self.pick()
        unowned(unsafe) let scenario = self.scenarios[self.current]
        var request = ScriptedRequest(method: scenario.method, path: scenario.path ?? self.defaultPath)
        do {
            try scenario.build(self.user.address, &request)
        } catch {
            self.tally.scriptFailed("scenario \"\(scenario.name)\": \(error)")
            return nil
        }
        if let failure = self.head.encode(request, into: self.buffer) {
            self.tally.scriptFailed("scenario \"\(scenario.name)\": \(failure.message)")
            return nil
        }
        self.isHead = request.method.rawValue == "HEAD"
        self.keepsBody = scenario.keepsBody
        return self.buffer.bytes
    }

    func responded(_ response: borrowing ScriptedResponse) -> UInt64 {
        unowned(unsafe) let scenario = self.scenarios[self.current]
        self.tally.scenarioResponses[scenario.index] += 1
        for index in scenario.checks.indices {
            self.tally.count(scenario.checkNumbers[index], passed: scenario.checks[index].passes(response))
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

    func abandoned() {
        unowned(unsafe) let scenario = self.scenarios[self.current]
        self.tally.unanswered[scenario.index] += 1
        for number in scenario.checkNumbers { self.tally.count(number, passed: false) }
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
final class ScriptTally {
    let passed: UnsafeMutableBufferPointer<Int>
    let failed: UnsafeMutableBufferPointer<Int>
    let scenarioResponses: UnsafeMutableBufferPointer<Int>
    let unanswered: UnsafeMutableBufferPointer<Int>
    private var errors = 0
    private var firstError: String?

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
