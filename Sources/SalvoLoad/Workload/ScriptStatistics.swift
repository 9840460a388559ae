/// What a scripted run (``Workload``) counted beside the requests: each check's passes and
/// failures, each scenario's iterations, and the errors of the script itself.
public struct ScriptStatistics: Sendable, Codable, Equatable {
    /// How often one check passed and failed.
    public struct CheckCount: Sendable, Codable, Equatable {
        public var passed = 0
        public var failed = 0

        public init(passed: Int = 0, failed: Int = 0) {
            self.passed = passed
            self.failed = failed
        }
    }

    /// By check name: checks of the same name in several scenarios count together.
    public var checks: [String: CheckCount] = [:]
    /// Responses by scenario name.
    public var scenarios: [String: Int] = [:]
    /// Calls by scenario name that got no response: their connection failed or they timed
    /// out (each also failed its scenario's checks, and counts among the run's errors).
    public var unanswered: [String: Int] = [:]
    /// Requests a scenario could not build (it threw, or built a request that cannot be
    /// sent); none of them went out.
    public var scriptErrors = 0
    /// What the first of them said, to show in the report.
    public var firstScriptError: String?

    public init() {}

    enum CodingKeys: String, CodingKey {
        case checks, scenarios, unanswered
        case scriptErrors = "script_errors"
        case firstScriptError = "first_script_error"
    }

    /// Whether every check passed and the script never failed.
    public var allPassed: Bool { self.scriptErrors == 0 && self.checks.values.allSatisfy { $0.failed == 0 } }

    /// Adds another thread's or run's counts to these.
    public mutating func add(_ other: ScriptStatistics) {
        self.checks.merge(other.checks) { CheckCount(passed: $0.passed + $1.passed, failed: $0.failed + $1.failed) }
        self.scenarios.merge(other.scenarios, uniquingKeysWith: +)
        self.unanswered.merge(other.unanswered, uniquingKeysWith: +)
        self.scriptErrors += other.scriptErrors
        if self.firstScriptError == nil { self.firstScriptError = other.firstScriptError }
    }
}
