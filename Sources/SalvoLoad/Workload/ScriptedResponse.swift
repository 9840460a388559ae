import SalvoTransport
import HTTPTypes

/// A response lent to a scenario's checks and its `response` hook for as long as they run:
/// its status, the fields the scenario records where they were parsed, and its body when the
/// scenario keeps it (``Scenario/keepsBody``, or a check that reads it). Nothing is built
/// unless asked for.
///
/// The fields are those the scenario's checks and hook read: all of them when a check of
/// your own or the hook does not name what it reads (``Check/readsFields``,
/// ``Scenario/readsFields``), else at least the named ones. A field no reader named may be
/// missing below, as if it had not come.
///
/// ```swift
/// Check("has a session") { response in response.value(of: .setCookie) != nil }
/// ```
public struct ScriptedResponse: ~Copyable {
    /// The status code.
    public let statusCode: Int
    /// From when the request was sent — or, at a constant rate, was due — to the response's end.
    public let latency: Duration
    /// The body's length in bytes, kept or not.
    public let bodyCount: Int
    /// The connection's records of the response's fields, valid while the response is lent.
    private let records: UnsafePointer<FieldRecords>
    /// The kept body, or as much of it as the run keeps (``Workload/bodyLimit``).
    let body: UnsafeRawBufferPointer

    init(statusCode: Int, latency: Duration, fields: UnsafePointer<FieldRecords>, body: UnsafeRawBufferPointer, bodyCount: Int) {
        self.statusCode = statusCode
        self.latency = latency
        self.records = fields
        self.body = body
        self.bodyCount = bodyCount
    }

    public var status: HTTPResponse.Status { HTTPResponse.Status(code: self.statusCode) }

    private var fields: FieldRecords {
        _read { yield self.records.pointee }
    }

    // MARK: Fields, read where they were parsed

    /// The first value of the field `name`, in any case it was sent in; nil when absent (or
    /// not recorded).
    public func value(of name: HTTPField.Name) -> String? { self.fields.firstValue(for: name) }

    /// Every value of `name` joined with ", " (a list sent over several lines); nil when absent
    /// (or not recorded).
    public func values(of name: HTTPField.Name) -> String? { self.fields.joinedValues(for: name) }

    /// Whether a field named `name` came (and was recorded).
    public func contains(_ name: HTTPField.Name) -> Bool { self.fields.contains(name) }

    /// The first value of `name` read as a decimal number, without making a string of it.
    public func number(of name: HTTPField.Name) -> Int? { self.fields.firstNumber(for: name) }

    /// Calls `body` with the bytes of the first value of `name` (valid only inside it); nil
    /// when the field is absent.
    public func withValue<Result>(of name: HTTPField.Name, _ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        self.fields.withFirstValue(for: name, body)
    }

    /// Whether the first value of the field named `name` (its lowercase bytes, as a check
    /// keeps them) passes `test`; false when the field is absent.
    func firstValue(lowercased name: UnsafeRawBufferPointer, passes test: FieldRecords.ValueTest) -> Bool {
        FieldRecords.firstValue(in: self.records, lowercased: name, passes: test)
    }

    /// Calls `body` with each recorded field's name and value bytes, in the order they came,
    /// until it returns false.
    public func forEachField(_ body: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) rethrows {
        try self.fields.forEach(body)
    }

    /// The recorded fields as `HTTPFields`, built on this call.
    public var headerFields: HTTPFields { self.fields.makeFields() }

    // MARK: The body, when kept

    /// Whether the whole body is at hand: the scenario keeps bodies and this one fit the
    /// run's limit. A check that reads the body fails when it is not.
    public var isBodyKept: Bool { self.body.count == self.bodyCount && (self.bodyCount == 0 || self.body.baseAddress != nil) }

    /// Calls `body` with the kept body's bytes (valid only inside it).
    public func withBody<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(self.body)
    }

    /// A copy of the kept body.
    public var bodyBytes: [UInt8] { Array(self.body) }

    /// The kept body as UTF-8 text.
    public var bodyText: String { String(decoding: self.body, as: UTF8.self) }

    /// Whether the kept body holds `bytes` anywhere.
    public func bodyContains(_ bytes: some Collection<UInt8>) -> Bool {
        Array(bytes).withUnsafeBytes { self.body.containsBytes($0) }
    }
}
