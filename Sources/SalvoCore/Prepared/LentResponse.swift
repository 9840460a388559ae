@_spi(Benchmarks) import SalvoTransport
import HTTPTypes

/// A response lent to a prepared call's handler for as long as the handler runs: its status,
/// its fields as they were parsed, its body where it was read into. Nothing of it is built
/// unless asked for, and nothing is kept after the handler returns — copy out what you need
/// (``bodyBytes``, ``value(of:)``), or return it from the handler.
///
/// ```swift
/// let user = try await users.send(["42"]) { response in
///     guard response.status == .ok else { throw LookupFailed(status: response.status) }
///     return try JSONDecoder().decode(User.self, from: Data(response.bodyBytes))
/// }
/// ```
///
/// The handler runs on the event loop that read the response: keep it short (check, copy,
/// decode), and hand heavier work elsewhere.
public struct LentResponse: ~Copyable {
    let head: ParsedHead
    let body: UnsafeRawBufferPointer
    /// The call's owner, which lends this from inside one of its methods: it outlives the
    /// value (unowned(unsafe): no count taken per response).
    private unowned(unsafe) let owner: RequestOwner
    private let endedAt: Deadline

    init(head: ParsedHead, body: UnsafeRawBufferPointer, owner: RequestOwner, endedAt: Deadline) {
        self.head = head
        self.body = body
        self.owner = owner
        self.endedAt = endedAt
    }

    public var status: HTTPResponse.Status { self.head.status }

    /// The version the response came in.
    public var version: HTTPVersion { self.owner.metrics.version }

    /// Timings and byte counts, as a collected response's (made when asked for).
    public var metrics: TransportMetrics { self.owner.transportMetrics(endedAt: self.endedAt) }

    // MARK: Fields, read where they were parsed

    /// The first value of the field `name`, in any case it was sent in; nil when absent.
    public func value(of name: HTTPField.Name) -> String? {
        self.head.fields.firstValue(for: name)
    }

    /// Every value of `name` joined with ", " (a list sent over several lines).
    public func values(of name: HTTPField.Name) -> String? {
        self.head.fields.joinedValues(for: name)
    }

    /// Whether a field named `name` came.
    public func contains(_ name: HTTPField.Name) -> Bool {
        self.head.fields.contains(name)
    }

    /// The first value of `name` read as a decimal number, without making a string of it.
    public func number(of name: HTTPField.Name) -> Int? {
        self.head.fields.firstNumber(for: name)
    }

    /// Calls `body` with the bytes of the first value of `name` (valid only inside it); nil
    /// when the field is absent.
    public func withValue<Result>(of name: HTTPField.Name, _ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        self.head.fields.withFirstValue(for: name, body)
    }

    /// Calls `body` with each field's name and value bytes, in the order they came, until it
    /// returns false.
    public func forEachField(_ body: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) rethrows {
        try self.head.fields.forEach(body)
    }

    /// The fields as `HTTPFields`, built on this call (what the rest of this type avoids).
    public var headerFields: HTTPFields { self.head.response.headerFields }

    // MARK: The body, where it was read into

    /// The body's length in bytes.
    public var bodyCount: Int { self.body.count }

    /// Calls `body` with the body's bytes, valid only inside it.
    public func withBody<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(self.body)
    }

    /// A copy of the body.
    public var bodyBytes: [UInt8] { Array(self.body) }

    /// The body as UTF-8 text (a copy; invalid sequences repaired).
    public var bodyText: String { String(decoding: self.body, as: UTF8.self) }
}
