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
public struct Check: Sendable {
    public let name: String
    /// Whether the check reads the body: the scenario keeps its responses' bodies then.
    public let readsBody: Bool
    let test: @Sendable (borrowing ScriptedResponse) -> Bool

    /// A check named `name` that passes when `test` returns true. Set `readsBody` when
    /// `test` reads the body (``ScriptedResponse/withBody(_:)``, ``ScriptedResponse/bodyText``):
    /// bodies are kept only for scenarios that need them, and a check that reads one fails
    /// when it was larger than the run keeps.
    public init(_ name: String, readsBody: Bool = false, _ test: @escaping @Sendable (borrowing ScriptedResponse) -> Bool) {
        self.name = name
        self.readsBody = readsBody
        self.test = test
    }

    /// Whether `response` passes.
    func passes(_ response: borrowing ScriptedResponse) -> Bool {
        if self.readsBody && !response.isBodyKept { return false }
        return self.test(response)
    }

    // MARK: The usual ones

    /// The status is `code`.
    public static func status(_ code: Int) -> Check {
        Check("status is \(code)") { $0.statusCode == code }
    }

    /// The status is one of `codes` (`200..<300`).
    public static func status(_ codes: Range<Int>) -> Check {
        Check("status in \(codes.lowerBound)..<\(codes.upperBound)") { codes.contains($0.statusCode) }
    }

    /// The field `name` came.
    public static func field(_ name: HTTPField.Name) -> Check {
        Check("\(name.canonicalName) is present") { $0.contains(name) }
    }

    /// The first value of `name` is exactly `value`.
    public static func field(_ name: HTTPField.Name, equals value: String) -> Check {
        let expected = Array(value.utf8)
        let lowercased = Array(name.canonicalName.utf8)
        return Check("\(name.canonicalName) is \(value)") { response in
            response.withValue(lowercased: lowercased) { value in
                value.count == expected.count && expected.withUnsafeBytes { value.elementsEqual($0) }
            } ?? false
        }
    }

    /// The first value of `name` holds `text`.
    public static func field(_ name: HTTPField.Name, contains text: String) -> Check {
        let expected = Array(text.utf8)
        let lowercased = Array(name.canonicalName.utf8)
        return Check("\(name.canonicalName) contains \(text)") { response in
            response.withValue(lowercased: lowercased) { ScriptedResponse.find(expected, in: $0) } ?? false
        }
    }

    /// The body holds `text`.
    public static func body(contains text: String) -> Check {
        let expected = Array(text.utf8)
        return Check("body contains \(text)", readsBody: true) { response in
            response.withBody { ScriptedResponse.find(expected, in: $0) }
        }
    }
}
