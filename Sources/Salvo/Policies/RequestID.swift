import Synchronization

/// A call's identity, unique in the process: to cancel it by (``Client/cancel(_:)``),
/// and to follow it in logs.
///
/// ```swift
/// let id = RequestID()
/// async let report = client.value(Endpoint<Report>.get("/reports/slow"), options: .init(id: id))
/// client.cancel(id)   // from anywhere
/// ```
public struct RequestID: Hashable, Sendable, CustomStringConvertible {
    private static let next = Atomic<UInt64>(1)

    public let value: UInt64

    /// A new id, never given before in this process.
    public init() {
        self.value = Self.next.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    public var description: String { "#\(self.value)" }
}

/// How urgent a call is, for ``RequestControl``'s queue: a waiting call of a higher priority
/// goes first. Set with `endpoint.with(RequestPriority.self, .high)`.
public enum RequestPriority: Int, Sendable, Comparable, RequestMetadataKey {
    public typealias Value = RequestPriority

    case low, normal, high

    public static func < (a: RequestPriority, b: RequestPriority) -> Bool { a.rawValue < b.rawValue }
}
