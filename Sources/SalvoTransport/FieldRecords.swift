import HTTPTypes
#if canImport(Glibc)
import Glibc
#endif

/// Header fields kept as the bytes they arrived in, one record after another: the name's
/// length and the value's (4 bytes each, little-endian), then the name, then the value.
///
/// The engine's decoder writes a head's fields here — one buffer, no `String` or
/// `HTTPField` per field — and reads the few it acts on (Content-Length,
/// Content-Encoding, Location, Keep-Alive) by a scan. `HTTPFields` are built only when
/// someone asks for them (``makeFields()``).
///
/// Names are stored as sent (the decoder checks that they are tokens); values without the
/// whitespace around them.
///
/// Why the engine's storage sits in the seam: a ``CollectedResponse`` — the seam's collected
/// answer, which any transport returns — holds the engine's head as parsed (``ParsedHead``,
/// over these records) and builds `HTTPFields` only if someone reads them, which spares most
/// responses the engine's largest single cost. The seam's type can hold the records only if
/// their type is here; behind the engine it would take a protocol or a closure per response
/// (a witness call or an allocation per request on the engine's hot path). Everything here is
/// `package`: no user sees it, and only the engine writes it (with ``KnownFieldNames`` and
/// ``HTTPToken``, which it needs for that).
///
/// The fields the engine acts on are noted as their records close (``Tracked``), so that
/// asking for one that did not come — Content-Encoding, Keep-Alive, Location in most
/// responses — answers at once, without a scan.
package struct FieldRecords: Sendable {
    /// The records, then room for more: the buffer is kept as large as its capacity, and
    /// only the first ``byteCount`` bytes are records. Writing into room already there is a
    /// copy into place, not an `append` — three of them per field, on every head.
    package private(set) var storage: [UInt8] = []
    /// How many bytes of ``storage`` the records fill.
    package private(set) var byteCount = 0
    /// How many fields the records hold.
    package private(set) var count = 0
    /// Which of the tracked fields the records hold.
    package private(set) var tracked: Tracked = []
    /// Where the first record of each tracked field begins (by its bit's position; valid
    /// where ``tracked`` has the bit): a question about one — the Content-Length every
    /// response is asked for — is answered from there, not by a scan. -1: a record that
    /// began past `Int32.max` (a head the caller allowed more than 2 GiB), found by a scan.
    private var trackedAt = SIMD8<Int32>(repeating: 0)

    /// The fields the engine reads from every response, known by their names' lengths first.
    package struct Tracked: OptionSet, Sendable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }

        package static let contentLength = Tracked(rawValue: 1 << 0)
        package static let contentEncoding = Tracked(rawValue: 1 << 1)
        package static let transferEncoding = Tracked(rawValue: 1 << 2)
        package static let location = Tracked(rawValue: 1 << 3)
        package static let keepAlive = Tracked(rawValue: 1 << 4)
        package static let connection = Tracked(rawValue: 1 << 5)

        /// Whether this is Transfer-Encoding alone (asked of every field a decoder closes: a
        /// plain comparison, where `==` on the set would go through its generic witness and
        /// the static value through its accessor).
        @inlinable package var isTransferEncoding: Bool { self.rawValue == 1 << 2 }

        /// The name's lowercase spelling, for one tracked field ("" for none or several): the
        /// one table of them, for matching names as they arrive and for reading values.
        var lowercasedName: StaticString {
            switch self.rawValue {   // the bits above, as integers: no generic `==` per case
            case 1 << 0: "content-length"
            case 1 << 1: "content-encoding"
            case 1 << 2: "transfer-encoding"
            case 1 << 3: "location"
            case 1 << 4: "keep-alive"
            case 1 << 5: "connection"
            default: ""
            }
        }

        /// ``lowercasedName``'s bytes.
        var lowercasedBytes: UnsafeRawBufferPointer {
            let name = self.lowercasedName
            return UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        }

        /// The tracked field `name` (in any case) is, or none.
        package init(name: UnsafeRawBufferPointer) {
            func named(_ field: Tracked) -> Tracked {
                Self.spells(name, field.lowercasedBytes) ? field : []
            }
            switch name.count {
            case 8: self = named(.location)
            case 10: self = named(.keepAlive).union(named(.connection))
            case 14: self = named(.contentLength)
            case 16: self = named(.contentEncoding)
            case 17: self = named(.transferEncoding)
            default: self = []
            }
        }

        /// Whether `name` spells `lower` (a tracked name, 8 bytes or more, letters and '-') in
        /// any case: compared eight bytes at a time — the first eight and the last eight,
        /// which overlap — with each byte's case bit set. Exact for the names this is asked
        /// of: no other byte becomes a lowercase letter so, and only CR becomes '-', which a
        /// field name never holds (a head with a bare CR is refused).
        @inline(__always)
        private static func spells(_ name: UnsafeRawBufferPointer, _ lower: UnsafeRawBufferPointer) -> Bool {
            let count = lower.count
            guard name.count == count, count >= 8 else { return false }
            let caseBits: UInt64 = 0x2020_2020_2020_2020
            return name.loadUnaligned(as: UInt64.self) | caseBits == lower.loadUnaligned(as: UInt64.self)
                && name.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self) | caseBits
                    == lower.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        }
    }

    /// Notes `field` (at most one tracked field: a name is one of them or none), whose record
    /// begins at `record`.
    @inline(__always)
    private mutating func note(_ field: Tracked, at record: Int) {
        guard field.rawValue != 0, !self.tracked.contains(field) else { return }
        self.trackedAt[field.rawValue.trailingZeroBitCount] = record <= Int(Int32.max) ? Int32(record) : -1
        self.tracked.formUnion(field)
    }

    /// Where the field being written began, while one is.
    private var openRecord: Int?
    private var openNameLength = 0

    package static let recordHeaderSize = 8

    package init() {}

    package var isEmpty: Bool { self.count == 0 }

    /// The records' bytes (a copy: for tests and tools).
    package var bytes: [UInt8] { Array(self.storage[..<self.byteCount]) }

    /// How many bytes the buffer holds before it must grow.
    package var capacity: Int { self.storage.count }

    /// Where the buffer is: whether two records share one.
    package var bufferAddress: UnsafeRawPointer? {
        self.storage.withUnsafeBytes { $0.baseAddress }
    }

    /// Forgets every field, keeping the buffer's capacity. A buffer that another copy still
    /// holds is left to it; these records get one like it.
    package mutating func removeAll() {
        self.storage.withUnsafeMutableBytes { _ in }   // copy on write, once, here
        self.byteCount = 0
        self.count = 0
        self.tracked = []
        self.openRecord = nil
        self.openNameLength = 0
    }

    package mutating func reserveCapacity(_ bytes: Int) {
        if bytes > self.storage.count { self.grow(to: bytes) }
    }

    private mutating func grow(to size: Int) {
        self.storage.append(contentsOf: repeatElement(0, count: size - self.storage.count))
    }

    /// Makes room for `more` bytes past the records, growing the buffer by half at least.
    @inline(__always)
    private mutating func makeRoom(_ more: Int) {
        let needed = self.byteCount + more
        if needed > self.storage.count {
            self.grow(to: Swift.max(needed, self.storage.count + self.storage.count / 2, 64))
        }
    }

    /// The same fields in a buffer of their own, exactly as large as they are: what a
    /// response keeps, while the parser's buffer (as large as the largest head it has seen)
    /// is used again.
    package func compacted() -> FieldRecords {
        var copy = FieldRecords()
        copy.storage = Array(self.storage[..<self.byteCount])
        copy.byteCount = self.byteCount
        copy.count = self.count
        copy.tracked = self.tracked
        copy.trackedAt = self.trackedAt
        return copy
    }

    // MARK: Writing, piece by piece as a parser reports them

    /// Adds bytes of the current field's name (the first piece opens a new field).
    package mutating func appendNamePiece(_ piece: UnsafeRawBufferPointer) {
        let opening = self.openRecord == nil
        self.makeRoom((opening ? Self.recordHeaderSize : 0) + piece.count)
        if opening {
            // The two lengths, written when the field closes.
            self.openRecord = self.byteCount
            self.openNameLength = 0
            self.byteCount += Self.recordHeaderSize
        }
        self.write(piece)
        self.openNameLength += piece.count
    }

    /// Adds bytes of the current field's value.
    package mutating func appendValuePiece(_ piece: UnsafeRawBufferPointer) {
        // A value always follows its name from llhttp; a field opened here has an empty name.
        self.makeRoom((self.openRecord == nil ? Self.recordHeaderSize : 0) + piece.count)
        self.openFieldIfNeeded()
        self.write(piece)
    }

    /// Copies `piece` past the records, into room made for it.
    @inline(__always)
    private mutating func write(_ piece: UnsafeRawBufferPointer) {
        guard let source = piece.baseAddress, piece.count > 0 else { return }
        let offset = self.byteCount
        self.storage.withUnsafeMutableBytes { raw in
            (raw.baseAddress! + offset).copyMemory(from: source, byteCount: piece.count)
        }
        self.byteCount += piece.count
    }

    private mutating func openFieldIfNeeded() {
        guard self.openRecord == nil else { return }
        self.makeRoom(Self.recordHeaderSize)
        self.openRecord = self.byteCount
        self.openNameLength = 0
        self.byteCount += Self.recordHeaderSize
    }

    /// What ``closeField()`` saw of a field's name.
    package struct ClosedName {
        /// The name is a token (RFC 9110 §5.1) — a parser may have let through one that is not.
        package var isToken: Bool
        /// Which tracked field it is, if one.
        package var tracked: Tracked

        init(name: UnsafeRawBufferPointer) {
            self.isToken = HTTPToken.isToken(name)
            self.tracked = Tracked(name: name)
        }
    }

    /// Where `bytes[start..<end]` ends without its trailing spaces and tabs.
    @inline(__always)
    static func endTrimmingWhitespace(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        var end = end
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return end
    }

    /// Ends the current field: trailing whitespace is dropped from its value (RFC 9110 §5.5;
    /// llhttp drops the leading). Says whether its name is a token and which tracked field it
    /// is (a parser checks both here, with no second pass over the name).
    @discardableResult
    package mutating func closeField() -> ClosedName {
        let record = self.openRecord ?? self.byteCount
        let closed = self.closeOpenField { ClosedName(name: $0) }
        self.note(closed.tracked, at: record)
        return closed
    }

    /// Ends the current field as ``closeField()`` does, its name taken as sent, unchecked
    /// (the load generator's scripted runs), only noted if it is a tracked one.
    package mutating func closeParsedField() {
        let record = self.openRecord ?? self.byteCount
        let tracked = self.closeOpenField { Tracked(name: $0) }
        self.note(tracked, at: record)
    }

    /// Writes the open field's lengths, its value's trailing whitespace dropped, and returns
    /// what `note` says of its name.
    private mutating func closeOpenField<Note>(_ note: (UnsafeRawBufferPointer) -> Note) -> Note {
        self.openFieldIfNeeded()
        let start = self.openRecord ?? 0
        let nameLength = self.openNameLength
        self.count += 1
        self.openRecord = nil
        let used = self.byteCount
        let (noted, end) = self.storage.withUnsafeMutableBytes { raw in
            let nameStart = start + Self.recordHeaderSize
            let valueStart = nameStart + nameLength
            let end = Self.endTrimmingWhitespace(UnsafeRawBufferPointer(raw), from: valueStart, to: used)
            raw.storeBytes(of: UInt32(truncatingIfNeeded: nameLength).littleEndian, toByteOffset: start, as: UInt32.self)
            raw.storeBytes(of: UInt32(truncatingIfNeeded: end - valueStart).littleEndian, toByteOffset: start + 4, as: UInt32.self)
            return (note(UnsafeRawBufferPointer(rebasing: raw[nameStart..<valueStart])), end)
        }
        self.byteCount = end
        return noted
    }

    /// Adds a whole field, its name and value given whole: one write, and what
    /// ``closeField()`` would say of it (the value's trailing whitespace dropped too).
    package mutating func appendField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> ClosedName {
        let record = self.byteCount
        self.write(name: name, value: value)
        let closed = ClosedName(name: name)
        self.note(closed.tracked, at: record)
        return closed
    }

    /// Adds a whole field as ``appendField(name:value:)`` does, its name taken as sent,
    /// unchecked — for a reader that asks nothing of names but to find them (the load
    /// generator's scripted runs).
    package mutating func appendParsedField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let record = self.byteCount
        self.write(name: name, value: value)
        self.note(Tracked(name: name), at: record)
    }

    private mutating func write(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let valueCount = Self.endTrimmingWhitespace(value, from: 0, to: value.count)
        self.makeRoom(Self.recordHeaderSize + name.count + valueCount)
        let start = self.byteCount
        self.storage.withUnsafeMutableBytes { raw in
            let target = raw.baseAddress! + start
            target.storeBytes(of: UInt32(truncatingIfNeeded: name.count).littleEndian, as: UInt32.self)
            (target + 4).storeBytes(of: UInt32(truncatingIfNeeded: valueCount).littleEndian, as: UInt32.self)
            if let source = name.baseAddress { (target + Self.recordHeaderSize).copyMemory(from: source, byteCount: name.count) }
            if let source = value.baseAddress, valueCount > 0 {
                (target + Self.recordHeaderSize + name.count).copyMemory(from: source, byteCount: valueCount)
            }
        }
        self.byteCount = start + Self.recordHeaderSize + name.count + valueCount
        self.count += 1
    }

    /// Adds a whole field.
    package mutating func append(name: String, value: String) {
        var name = name
        var value = value
        name.withUTF8 { self.appendNamePiece(UnsafeRawBufferPointer($0)) }
        value.withUTF8 { self.appendValuePiece(UnsafeRawBufferPointer($0)) }
        self.closeField()
    }

    // MARK: Reading

    /// Calls `body` with each field's name and value bytes, in order, until it returns false.
    @inlinable
    package func forEach(_ body: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool) rethrows {
        try self.storage.withUnsafeBytes { raw in
            var offset = 0
            for _ in 0..<self.count {
                let nameLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                let valueLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
                let nameStart = offset + Self.recordHeaderSize
                let name = UnsafeRawBufferPointer(rebasing: raw[nameStart..<nameStart + nameLength])
                let value = UnsafeRawBufferPointer(rebasing: raw[nameStart + nameLength..<nameStart + nameLength + valueLength])
                offset = nameStart + nameLength + valueLength
                guard try body(name, value) else { return }
            }
        }
    }

    /// Whether `bytes` spell the `lowercased` name, in any case: eight bytes at a time (the
    /// last eight overlapping the ones before), byte by byte for a name shorter than that.
    @inlinable
    package static func matches(_ bytes: UnsafeRawBufferPointer, lowercased lower: UnsafeRawBufferPointer) -> Bool {
        let count = lower.count
        guard count == bytes.count else { return false }
        guard count >= 8 else {
            for index in 0..<count {
                var byte = bytes[index]
                if byte &- 0x41 < 26 { byte |= 0x20 }
                if byte != lower[index] { return false }
            }
            return true
        }
        var offset = 0
        while true {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            guard let folded = Self.lowercased(word),
                  folded == lower.loadUnaligned(fromByteOffset: offset, as: UInt64.self) else { return false }
            if offset == count - 8 { return true }
            offset = Swift.min(offset + 8, count - 8)
        }
    }

    /// `word`'s eight bytes with their ASCII capitals made small (exactly: nothing else
    /// changes), or nil when a byte is not ASCII. A byte's high bit marks it a capital — it
    /// lies in 0x41...0x5A — and, shifted down, is the case bit that makes it small; adding to
    /// a byte below 0x80 never carries into the next.
    @inlinable
    static func lowercased(_ word: UInt64) -> UInt64? {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        guard word & high == 0 else { return nil }
        let capital = (word &+ (0x80 - 0x41) &* ones) & ~(word &+ (0x80 - 0x5B) &* ones) & high
        return word | capital &>> 2
    }

    /// Calls `body` with each value of a field named `name`, in order, until it returns false.
    /// A tracked name the records do not hold is answered without a scan.
    private func forEachValue(of name: HTTPField.Name, _ body: (UnsafeRawBufferPointer) -> Bool) {
        var canonical = name.canonicalName
        canonical.withUTF8 { utf8 in
            let lower = UnsafeRawBufferPointer(utf8)
            let tracked = Tracked(name: lower)
            if !tracked.isEmpty, !self.tracked.contains(tracked) { return }
            self.forEachValue(lowercased: lower, body)
        }
    }


    private func forEachValue(lowercased name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Bool) {
        self.forEach { fieldName, value in
            Self.matches(fieldName, lowercased: name) ? body(value) : true
        }
    }

    /// Whether any field is named `name`.
    package func contains(_ name: HTTPField.Name) -> Bool {
        var found = false
        self.forEachValue(of: name) { _ in
            found = true
            return false
        }
        return found
    }

    /// The first value of `name`.
    package func firstValue(for name: HTTPField.Name) -> String? {
        var found: String? = nil
        self.forEachValue(of: name) { value in
            found = Self.string(value)
            return false
        }
        return found
    }

    /// Calls `body` with the bytes of the first value of `name`; nil when there is none.
    package func withFirstValue<Result>(for name: HTTPField.Name, _ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        var found: Result? = nil
        self.forEachValue(of: name) { value in
            found = body(value)
            return false
        }
        return found
    }

    /// ``withFirstValue(for:_:)`` for a name given as its lowercase bytes, which a caller
    /// that asks again and again keeps (no `HTTPField.Name` read per question).
    package func withFirstValue<Result>(lowercased name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        var found: Result? = nil
        self.forEachValue(lowercased: name) { value in
            found = body(value)
            return false
        }
        return found
    }

    /// What a caller asks of a field's value, said without a closure: the load generator's
    /// checks, tested on every response with nothing counted or called per test.
    package enum ValueTest {
        /// Any value (the field came).
        case any
        case equals(UnsafeRawBufferPointer)
        case contains(UnsafeRawBufferPointer)
    }

    /// Whether the first value of the field named `name` (its lowercase bytes) passes
    /// `test`; false when the field did not come.
    package func firstValue(lowercased name: UnsafeRawBufferPointer, passes test: ValueTest) -> Bool {
        // A plain walk of the records, no closure: asked of every response of a scripted run.
        self.storage.withUnsafeBytes { raw in
            var offset = 0
            for _ in 0..<self.count {
                let nameLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                let valueLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
                let nameStart = offset + Self.recordHeaderSize
                let valueStart = nameStart + nameLength
                offset = valueStart + valueLength
                guard nameLength == name.count,
                      Self.matches(UnsafeRawBufferPointer(rebasing: raw[nameStart..<valueStart]), lowercased: name) else { continue }
                let value = UnsafeRawBufferPointer(rebasing: raw[valueStart..<offset])
                switch test {
                case .any: return true
                case .equals(let expected):
                    guard value.count == expected.count else { return false }
                    return value.count == 0 || memcmp(value.baseAddress!, expected.baseAddress!, value.count) == 0
                case .contains(let text): return value.containsBytes(text)
                }
            }
            return false
        }
    }

    /// ``firstValue(lowercased:passes:)`` of the records at `records`, read where they are:
    /// called on `records.pointee` from another module, Swift would copy them first (a count
    /// taken and given back around each question).
    package static func firstValue(in records: UnsafePointer<FieldRecords>, lowercased name: UnsafeRawBufferPointer,
                                   passes test: ValueTest) -> Bool {
        records.pointee.firstValue(lowercased: name, passes: test)
    }

    /// The first value of a tracked field; nil for a set of several (`[.keepAlive, .location]`).
    package func firstValue(ofTracked field: Tracked) -> String? {
        self.withFirstValue(ofTracked: field) { Self.string($0) }
    }

    /// The first value of `name` read as a decimal number (digits only, as RFC 9110 writes a
    /// Content-Length), without making a `String` of it; nil when there is none, or it is
    /// not one, or it does not fit an `Int`.
    package func firstNumber(for name: HTTPField.Name) -> Int? {
        var found: Int? = nil
        self.forEachValue(of: name) { value in
            found = Self.number(value)
            return false
        }
        return found
    }

    /// ``firstNumber(for:)`` of a tracked field (Content-Length, say).
    package func firstNumber(ofTracked field: Tracked) -> Int? {
        self.withFirstValue(ofTracked: field) { Self.number($0) } ?? nil
    }

    /// Calls `body` with the first value of a tracked field, read straight from its record
    /// (``trackedAt``); nil when the field did not come, or `field` is not one field.
    private func withFirstValue<Result>(ofTracked field: Tracked, _ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        guard field.rawValue.nonzeroBitCount == 1, self.tracked.contains(field) else { return nil }
        let record = Int(self.trackedAt[field.rawValue.trailingZeroBitCount])
        guard record >= 0 else { return self.withFirstValue(lowercased: field.lowercasedBytes, body) }
        return self.storage.withUnsafeBytes { raw in
            let nameLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: record, as: UInt32.self)))
            let valueLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: record + 4, as: UInt32.self)))
            let valueStart = record + Self.recordHeaderSize + nameLength
            return body(UnsafeRawBufferPointer(rebasing: raw[valueStart..<valueStart + valueLength]))
        }
    }

    /// `value` as a decimal number: digits only, fitting an `Int`; else nil.
    private static func number(_ value: UnsafeRawBufferPointer) -> Int? {
        guard !value.isEmpty else { return nil }
        var number = 0
        for byte in value {
            let digit = byte &- 0x30
            guard digit < 10 else { return nil }
            // Below this, ten times it plus a digit still fits (and most lengths are far below).
            if number < Int.max / 10 - 1 {
                number = number &* 10 &+ Int(digit)
                continue
            }
            let (times10, overflow) = number.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(digit))
            if overflow || overflow2 { return nil }
            number = sum
        }
        return number
    }

    /// Every value of `name` joined with ", " (a list sent over several lines); nil when
    /// there is none.
    package func joinedValues(for name: HTTPField.Name) -> String? {
        var joined: String? = nil
        self.forEachValue(of: name) { value in
            joined = joined.map { $0 + ", " + Self.string(value) } ?? Self.string(value)
            return true
        }
        return joined
    }

    /// A value as text (bytes that are not UTF-8 repaired, as `HTTPField.value` shows them).
    static func string(_ value: UnsafeRawBufferPointer) -> String {
        String(decoding: value, as: UTF8.self)
    }

    /// The fields as `HTTPFields`, in order, each name with the case it was sent in.
    package func makeFields() -> HTTPFields {
        var fields = HTTPFields()
        fields.reserveCapacity(self.count)
        self.forEach { nameBytes, value in
            // llhttp lets only tokens through as names, and a token is a valid name.
            guard let name = KnownFieldNames.lookup(nameBytes) ?? HTTPField.Name(String(decoding: nameBytes, as: UTF8.self)) else {
                return true
            }
            // ASCII values (nearly all) become a String directly; others keep their raw bytes,
            // cleaned only of what llhttp would not let through.
            fields.append(value.allSatisfy({ $0 < 0x80 })
                ? HTTPField(name: name, value: String(decoding: value, as: UTF8.self))
                : HTTPField(name: name, lenientValue: value))
            return true
        }
        return fields
    }
}
