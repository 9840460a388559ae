import HTTPTypes

/// The request a scenario builds for one call of a ``Workload``.
///
/// Each call starts from the scenario's method and path, no fields of its own and no body;
/// the scenario changes what it needs. The run adds `Host`, `User-Agent`, the fields given
/// to the whole run and, for a body, `Content-Length`.
///
/// ```swift
/// Scenario<Reader>("item") { reader, request in
///     reader.next = (reader.next + 1) % 1000
///     request.path = "/items/\(reader.next)"
/// }
/// ```
public struct ScriptedRequest: Sendable {
    public var method: HTTPRequest.Method
    /// The request target as sent: an absolute path and its query, percent-encoded
    /// ("/search?q=red%20shoes"); `*` for `OPTIONS`. A path with a byte that cannot go in a
    /// request line (a space, a control byte, `#`, anything outside ASCII) is refused: the
    /// call counts as a script error and is not sent.
    public var path: String
    /// Fields for this call only. The run's own (`Host`, framing, `Connection`), and fields
    /// every request of the run sends already, are refused as for `path`.
    public var headerFields: HTTPFields
    /// The body; sent with a `Content-Length` when not empty (and for `POST`, `PUT` and
    /// `PATCH` also when empty).
    public var body: [UInt8]

    init(method: HTTPRequest.Method, path: String) {
        self.method = method
        self.path = path
        self.headerFields = HTTPFields()
        self.body = []
    }

    /// `text` as the body, in UTF-8.
    public mutating func setBody(_ text: String) {
        self.body = Array(text.utf8)
    }
}

/// A request's bytes, grown as needed and reused call after call: a stable address the
/// connection writes from, no allocation once it is large enough.
final class ScriptBuffer {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    var count = 0

    init(capacity: Int) {
        self.capacity = max(64, capacity)
        self.base = .allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { self.base.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: self.base, count: self.count) }

    @inline(__always)
    func reserve(_ more: Int) {
        guard self.count + more > self.capacity else { return }
        var capacity = self.capacity
        while capacity < self.count + more { capacity *= 2 }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        grown.copyMemory(from: self.base, byteCount: self.count)
        self.base.deallocate()
        self.base = grown
        self.capacity = capacity
    }

    @inline(__always)
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        self.reserve(bytes.count)
        (self.base + self.count).copyMemory(from: source, byteCount: bytes.count)
        self.count += bytes.count
    }

    @inline(__always)
    func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.append($0) }
    }

    @inline(__always)
    func append(_ text: String) {
        var text = text
        text.withUTF8 { self.append(UnsafeRawBufferPointer($0)) }
    }

    @inline(__always)
    func append(_ text: StaticString) {
        self.append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// `value` in decimal.
    func appendDecimal(_ value: Int) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes: room for any Int
        withUnsafeMutableBytes(of: &digits) { room in
            var rest = value.magnitude
            var at = room.count
            repeat {
                at -= 1
                room[at] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            if value < 0 {
                at -= 1
                room[at] = UInt8(ascii: "-")
            }
            self.append(UnsafeRawBufferPointer(rebasing: room[at...]))
        }
    }
}
