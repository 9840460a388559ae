import HTTPTypes

/// One kind of call a ``Workload``'s virtual users make: how to build its request from the
/// user's state, which checks its responses must pass, what to take from them, and how long
/// to wait before the next call.
///
/// ```swift
/// Scenario<Shopper>("view item", weight: 4, checks: [.status(200)]) { shopper, request in
///     shopper.item = (shopper.item + 7) % 500
///     request.path = "/items/\(shopper.item)"
/// }
/// ```
///
/// `request` and `response` run on the event loop of the user's connection, between its
/// reads and writes: keep them short, as a Lua script for wrk is.
public struct Scenario<User>: Sendable {
    /// Shown in the report, where responses are counted by scenario.
    public let name: String
    /// How often it is picked relative to the others (a user picks a scenario for each call).
    public let weight: Int
    /// The request's method and path before `request` changes them (the path: the run URL's
    /// when nil).
    public let method: HTTPRequest.Method
    public let path: String?
    public let checks: [Check]
    /// How long a user waits after this scenario's response before its next call (a closed
    /// run only; at a constant rate the schedule decides).
    public let thinkTime: ThinkTime
    /// Whether each response's body is kept for `response` (checks that read it keep it
    /// anyway); by default, when there is a `response` hook.
    public let keepsBody: Bool
    /// The fields `response` reads, when the run should record only those (and the ones the
    /// checks read); nil: every field is recorded for the hook. Without a `response` hook it
    /// has no effect.
    public let readsFields: [HTTPField.Name]?
    let build: @Sendable (inout User, inout ScriptedRequest) throws -> Void
    let respond: (@Sendable (inout User, borrowing ScriptedResponse) throws -> Void)?

    /// - Parameters:
    ///   - name: how the report names the scenario.
    ///   - weight: how often a user picks it, relative to the other scenarios' weights.
    ///   - method: the request's method before `request` changes it.
    ///   - path: the request's path before `request` changes it; nil: the run URL's.
    ///   - checks: what every response of the scenario is checked for, counted in the report.
    ///   - thinkTime: how long a user waits after this scenario's response before its next
    ///     call (a closed run only).
    ///   - keepsBody: whether each response's body is kept for `response`; nil: when there
    ///     is a `response` hook.
    ///   - readsFields: the fields `response` reads. By default a scenario with a `response`
    ///     hook records every field of each response; naming them records only those and the
    ///     checks' (name every field the hook reads: others may be missing).
    ///   - request: changes the call's request (``ScriptedRequest``) from the user's state;
    ///     an error thrown here counts as a script error and the call is not sent.
    ///   - response: reads what the next calls need (an id, a cursor) into the user's state;
    ///     an error thrown here counts as a script error.
    public init(_ name: String, weight: Int = 1, method: HTTPRequest.Method = .get, path: String? = nil,
                checks: [Check] = [], thinkTime: ThinkTime = .none, keepsBody: Bool? = nil, readsFields: [HTTPField.Name]? = nil,
                request: @escaping @Sendable (inout User, inout ScriptedRequest) throws -> Void = { _, _ in },
                response: (@Sendable (inout User, borrowing ScriptedResponse) throws -> Void)? = nil) {
        self.name = name
        self.weight = weight
        self.method = method
        self.path = path
        self.checks = checks
        self.thinkTime = thinkTime
        self.keepsBody = keepsBody ?? (response != nil)
        self.readsFields = readsFields
        self.build = request
        self.respond = response
    }
}

/// A pause between a user's calls: fixed, or drawn evenly from a range for each call.
public struct ThinkTime: Sendable, Equatable {
    let low: UInt64
    let high: UInt64

    /// No pause: the next call goes out as the response ends.
    public static let none = ThinkTime(low: 0, high: 0)

    /// `duration` after every response.
    public static func fixed(_ duration: Duration) -> ThinkTime {
        let nanoseconds = duration.nanosecondsClamped
        return ThinkTime(low: nanoseconds, high: nanoseconds)
    }

    /// A pause drawn evenly from `range` after each response.
    public static func between(_ range: ClosedRange<Duration>) -> ThinkTime {
        ThinkTime(low: range.lowerBound.nanosecondsClamped, high: range.upperBound.nanosecondsClamped)
    }

    var isNone: Bool { self.high == 0 }
}
