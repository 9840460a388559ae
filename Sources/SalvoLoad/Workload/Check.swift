import HTTPTypes

/// A named test of each response of a scenario, counted in the run's report: how many
/// responses passed it and how many failed. A failed check does not stop the run, and the
/// response still counts as one.
///
/// ```swift
/// Scenario<Void>("home", checks: [
///     .status(200),
///     .field(.contentType, contains: "html"),
///     Check("fast enough") { response in response.latency < .milliseconds(50) },
/// ]) { _, request in request.path = "/" }
/// ```
///
/// Checks of the same name count together, whichever scenarios they belong to.
///
/// The usual checks (`.status(200)`, `.status(200..<300)`, ``field(_:)``,
/// ``field(_:equals:)``, ``field(_:contains:)``, ``body(contains:)``) say what they read, so
/// a run records only those fields of each response. A check of your own sees every field
/// unless it names the ones it reads (`readsFields:`).
public struct Check: Sendable {
    public let name: String
    /// Whether the check reads the body: the scenario keeps its responses' bodies then.
    public let readsBody: Bool
    /// The fields the check reads; nil: any of them (the response's fields are all recorded).
    public let readsFields: [HTTPField.Name]?
    let kind: Kind
    /// Whether it reads only the first value of the fields it names (the usual checks).
    var readsFirstValuesOnly: Bool {
        if case .custom = self.kind { return false }
        return true
    }

    /// What a check tests: one of the usual ones, as data a loop's users test without a call
    /// through a closure or a count taken, or a test of the caller's.
    enum Kind: Sendable {
        case status(ClosedRange<Int>)
        case present(lowercasedName: [UInt8])
        case equals(lowercasedName: [UInt8], value: [UInt8])
        case contains(lowercasedName: [UInt8], text: [UInt8])
        case bodyContains([UInt8])
        case custom(@Sendable (borrowing ScriptedResponse) -> Bool)
    }

    /// A check named `name` that passes when `test` returns true.
    ///
    /// - Parameters:
    ///   - name: how the report names the check.
    ///   - readsBody: set it when `test` reads the body (``ScriptedResponse/withBody(_:)``,
    ///     ``ScriptedResponse/bodyText``): bodies are kept only for scenarios that need them,
    ///     and a check that reads one fails when it was larger than the run keeps.
    ///   - readsFields: the fields `test` reads, when you want the run to record only those
    ///     (a little less work per response). Name every field `test` reads: the response
    ///     holds at least those, every value of each, and other fields may be missing (or
    ///     have only their first value, when another check reads just that). By default
    ///     every field is recorded.
    ///   - test: true when the response passes; called on the connection's loop, for every
    ///     response of the scenarios that list the check.
    public init(_ name: String, readsBody: Bool = false, readsFields: [HTTPField.Name]? = nil,
                _ test: @escaping @Sendable (borrowing ScriptedResponse) -> Bool) {
        self.init(name, readsBody: readsBody, readsFields: readsFields, kind: .custom(test))
    }

    private init(_ name: String, readsBody: Bool, readsFields: [HTTPField.Name]?, kind: Kind) {
        self.name = name
        self.readsBody = readsBody
        self.readsFields = readsFields
        self.kind = kind
    }

    // MARK: The usual ones

    /// The status is `code`.
    public static func status(_ code: Int) -> Check {
        Check("status is \(code)", readsBody: false, readsFields: [], kind: .status(code...code))
    }

    /// The status is one of `codes` (`200..<300`).
    public static func status(_ codes: Range<Int>) -> Check {
        // An empty range passes nothing; as a closed range, one no status falls in.
        let closed = codes.isEmpty ? Int.max...Int.max : codes.lowerBound...(codes.upperBound - 1)
        return Check("status in \(codes.lowerBound)..<\(codes.upperBound)", readsBody: false, readsFields: [], kind: .status(closed))
    }

    /// The field `name` came.
    public static func field(_ name: HTTPField.Name) -> Check {
        Check("\(name.canonicalName) is present", readsBody: false, readsFields: [name],
              kind: .present(lowercasedName: Array(name.canonicalName.utf8)))
    }

    /// The first value of `name` is exactly `value`.
    public static func field(_ name: HTTPField.Name, equals value: String) -> Check {
        Check("\(name.canonicalName) is \(value)", readsBody: false, readsFields: [name],
              kind: .equals(lowercasedName: Array(name.canonicalName.utf8), value: Array(value.utf8)))
    }

    /// The first value of `name` holds `text`.
    public static func field(_ name: HTTPField.Name, contains text: String) -> Check {
        Check("\(name.canonicalName) contains \(text)", readsBody: false, readsFields: [name],
              kind: .contains(lowercasedName: Array(name.canonicalName.utf8), text: Array(text.utf8)))
    }

    /// The body holds `text`.
    public static func body(contains text: String) -> Check {
        Check("body contains \(text)", readsBody: true, readsFields: [], kind: .bodyContains(Array(text.utf8)))
    }
}
