/// A JSON document (RFC 8259) checked and indexed in one pass: a flat list of its values in
/// document order, each with where its bytes are and, for an object or array, where it ends
/// on the list — so that a decoder can walk, skip and look up without parsing twice.
///
/// An object's entry is followed by its members, each a key (a string entry) then its value;
/// an array's by its elements. The scan keeps its own stack, so a deep document cannot
/// exhaust the thread's; more than ``maxDepth`` levels are refused.
final class JSONTape {
    enum Kind: UInt8 {
        case object, array, string, number, `true`, `false`, null
    }

    struct Entry {
        var kind: Kind
        /// A string with backslash escapes: its bytes need decoding.
        var escaped: Bool
        /// Strings: the first byte after the opening quote. Numbers and literals: the first
        /// byte. Containers: the opening bracket.
        var start: Int32
        /// Strings: the closing quote. Numbers: one past the last byte. Containers: the
        /// list index just after their last descendant.
        var end: Int32
        /// Containers: members (objects) or elements (arrays).
        var count: Int32
        /// A string with bytes outside ASCII (written as they are, not escaped).
        var nonASCII = false
    }

    static let maxDepth = 512
    /// The largest document a tape indexes: offsets are 32-bit. Larger ones go to
    /// `JSONDecoder` (see ``Coders/decodeJSON(_:from:)``).
    static let maxDocumentSize = Int(Int32.max) - 1

    /// The document, owned: decoders may outlive the call that made them.
    let bytes: UnsafeMutableRawBufferPointer
    /// The entries, owned (freed on deinit): read without reference counting.
    let entries: UnsafeMutablePointer<Entry>
    /// The document's length (``bytes`` has at least one byte, even for an empty one).
    let count: Int

    /// The index just after the value at `index` (its next sibling, if any).
    @inline(__always)
    func after(_ index: Int) -> Int {
        let entry = self.entries[index]
        return entry.kind == .object || entry.kind == .array ? Int(entry.end) : index + 1
    }

    /// Scans `input`.
    ///
    /// - Throws: `DecodingError.dataCorrupted` naming the first byte that breaks the grammar.
    init(_ input: UnsafeRawBufferPointer) throws {
        guard input.count <= Self.maxDocumentSize else { throw Self.outOfRoom("the document is larger than 2 GiB") }
        guard let copy = malloc(max(input.count, 1)) else { throw Self.outOfRoom("no memory for the document") }
        self.bytes = UnsafeMutableRawBufferPointer(start: copy, count: max(input.count, 1))
        self.count = input.count
        if input.count > 0 { self.bytes.copyMemory(from: input) }
        // About one entry per five bytes in usual documents; grown when a document has more.
        guard var entries = EntryBuffer(capacity: min(input.count / 5 + 4, 1 << 20)) else {
            Glibc.free(copy)
            throw Self.outOfRoom("no memory for the index")
        }
        var scanner = Scanner(bytes: UnsafeRawBufferPointer(self.bytes).prefix(input.count))
        do {
            try scanner.scanDocument(into: &entries)
        } catch {
            // Not every stored property is set yet: no deinit runs, so free both here.
            Glibc.free(self.bytes.baseAddress)
            entries.free()
            throw error
        }
        self.entries = entries.base
    }

    deinit {
        free(self.bytes.baseAddress)
        free(self.entries)
    }

    static func outOfRoom(_ reason: String) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: "The JSON could not be read: \(reason)."))
    }

    /// The bytes of a string entry, without its quotes (escapes as written), or a number's.
    @inline(__always)
    func rawBytes(of entry: Entry) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self.bytes[Int(entry.start)..<Int(entry.end)])
    }
}

/// Entries as they are scanned: a plain growable buffer (entries are plain values).
struct EntryBuffer {
    private(set) var base: UnsafeMutablePointer<JSONTape.Entry>
    private(set) var count = 0
    private var capacity: Int

    init?(capacity: Int) {
        self.capacity = max(capacity, 8)
        guard let memory = malloc(self.capacity * MemoryLayout<JSONTape.Entry>.stride) else { return nil }
        self.base = memory.assumingMemoryBound(to: JSONTape.Entry.self)
    }

    @inline(__always)
    mutating func append(_ entry: JSONTape.Entry) throws {
        if self.count == self.capacity { try self.grow() }
        self.base[self.count] = entry
        self.count += 1
    }

    private mutating func grow() throws {
        guard let memory = realloc(self.base, 2 * self.capacity * MemoryLayout<JSONTape.Entry>.stride) else {
            throw JSONTape.outOfRoom("no memory for the index")
        }
        self.capacity *= 2
        self.base = memory.assumingMemoryBound(to: JSONTape.Entry.self)
    }

    subscript(index: Int) -> JSONTape.Entry {
        get { self.base[index] }
        nonmutating set { self.base[index] = newValue }
    }

    func free() {
        Glibc.free(self.base)
    }
}

/// The scanner behind ``JSONTape``: a cursor over the bytes and a stack of open containers.
private struct Scanner {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(bytes: Slice<UnsafeRawBufferPointer>) {
        self.bytes = UnsafeRawBufferPointer(rebasing: bytes)
    }

    mutating func scanDocument(into entries: inout EntryBuffer) throws {
        try withUnsafeTemporaryAllocation(of: OpenContainer.self, capacity: JSONTape.maxDepth) { stack in
            try self.scanDocument(into: &entries, open: OpenStack(storage: stack))
        }
    }

    /// An open container: its entry index, and whether it is an object.
    struct OpenContainer {
        var index: Int
        var object: Bool
    }

    /// The open containers, innermost last, on the caller's stack.
    struct OpenStack {
        let storage: UnsafeMutableBufferPointer<OpenContainer>
        var count = 0

        var last: OpenContainer? { self.count == 0 ? nil : self.storage[self.count - 1] }

        mutating func append(_ container: OpenContainer) {
            self.storage[self.count] = container
            self.count += 1
        }

        @discardableResult
        mutating func removeLast() -> OpenContainer {
            self.count -= 1
            return self.storage[self.count]
        }
    }

    private mutating func scanDocument(into entries: inout EntryBuffer, open: OpenStack) throws {
        // Then a key comes next when `expectKey`.
        var open = open
        self.skipWhitespace()
        guard self.offset < self.bytes.count else { throw self.error("the document is empty") }
        var expectKey = false
        while true {
            self.skipWhitespace()
            guard self.offset < self.bytes.count else { throw self.error("the document ends inside a value") }
            if expectKey {
                // An object member: key, colon, then its value comes around the loop.
                guard self.bytes[self.offset] == UInt8(ascii: "\"") else {
                    throw self.error("expected a quoted key")
                }
                try entries.append(self.scanString())
                self.skipWhitespace()
                guard self.offset < self.bytes.count, self.bytes[self.offset] == UInt8(ascii: ":") else {
                    throw self.error("expected ':' after a key")
                }
                self.offset += 1
                expectKey = false
                continue
            }
            let byte = self.bytes[self.offset]
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard open.count < JSONTape.maxDepth else {
                    throw self.error("more than \(JSONTape.maxDepth) levels of nesting")
                }
                let isObject = byte == UInt8(ascii: "{")
                try entries.append(JSONTape.Entry(kind: isObject ? .object : .array, escaped: false, start: Int32(self.offset), end: 0, count: 0))
                open.append(OpenContainer(index: entries.count - 1, object: isObject))
                self.offset += 1
                self.skipWhitespace()
                let closing = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                if self.offset < self.bytes.count, self.bytes[self.offset] == closing {
                    // Empty: close at once.
                    self.offset += 1
                    let index = open.removeLast().index
                    entries[index].end = Int32(entries.count)
                } else {
                    expectKey = isObject
                    continue
                }
            case UInt8(ascii: "\""):
                try entries.append(self.scanString())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try entries.append(self.scanNumber())
            case UInt8(ascii: "t"):
                try entries.append(self.scanLiteral("true", kind: .true))
            case UInt8(ascii: "f"):
                try entries.append(self.scanLiteral("false", kind: .false))
            case UInt8(ascii: "n"):
                try entries.append(self.scanLiteral("null", kind: .null))
            default:
                throw self.error("unexpected character '\(Self.printable(byte))'")
            }
            // A value is complete: count it in its container, then a comma or the container's end.
            while true {
                guard let container = open.last else {
                    self.skipWhitespace()
                    guard self.offset == self.bytes.count else { throw self.error("unexpected content after the document") }
                    return
                }
                entries[container.index].count += 1
                self.skipWhitespace()
                guard self.offset < self.bytes.count else { throw self.error("the document ends inside a container") }
                let next = self.bytes[self.offset]
                self.offset += 1
                if next == UInt8(ascii: ",") {
                    // A comma right before the end is allowed, as JSONDecoder allows it.
                    self.skipWhitespace()
                    let closing = container.object ? UInt8(ascii: "}") : UInt8(ascii: "]")
                    if self.offset < self.bytes.count, self.bytes[self.offset] == closing {
                        self.offset += 1
                        open.removeLast()
                        entries[container.index].end = Int32(entries.count)
                        continue
                    }
                    expectKey = container.object
                    break
                }
                let closing = container.object ? UInt8(ascii: "}") : UInt8(ascii: "]")
                guard next == closing else {
                    self.offset -= 1
                    throw self.error(container.object ? "expected ',' or '}'" : "expected ',' or ']'")
                }
                open.removeLast()
                entries[container.index].end = Int32(entries.count)
            }
        }
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while self.offset < self.bytes.count {
            switch self.bytes[self.offset] {
            case 0x20, 0x0A, 0x0D, 0x09: self.offset += 1
            default: return
            }
        }
    }

    mutating func scanString() throws -> JSONTape.Entry {
        let start = self.offset + 1
        var index = start
        var escaped = false
        var nonASCII = false
        let count = self.bytes.count
        let base = self.bytes.baseAddress!
        while index < count {
            // Most of a string is plain ASCII text: eight bytes at a time while none of them
            // is a quote, a backslash, a control character or a non-ASCII byte.
            while index + 8 <= count && !Self.needsAttention(base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                index += 8
            }
            guard index < count else { break }
            let byte = self.bytes[index]
            if byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            if byte == UInt8(ascii: "\"") {
                self.offset = index + 1
                return JSONTape.Entry(kind: .string, escaped: escaped, start: Int32(start), end: Int32(index), count: 0, nonASCII: nonASCII)
            }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                guard index + 1 < count else { break }
                switch self.bytes[index + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    guard let unit = self.hex4(at: index + 2) else {
                        self.offset = index
                        throw self.error("a \\u escape needs four hex digits")
                    }
                    index += 6
                    if (0xD800..<0xDC00).contains(unit) {
                        // A high surrogate: an escaped low one must follow.
                        guard index + 1 < count, self.bytes[index] == UInt8(ascii: "\\"), self.bytes[index + 1] == UInt8(ascii: "u"),
                              let low = self.hex4(at: index + 2), (0xDC00..<0xE000).contains(low) else {
                            self.offset = index - 6
                            throw self.error("a \\u escape with an unpaired surrogate")
                        }
                        index += 6
                    } else if (0xDC00..<0xE000).contains(unit) {
                        self.offset = index - 6
                        throw self.error("a \\u escape with an unpaired surrogate")
                    }
                default:
                    self.offset = index
                    throw self.error("invalid escape '\\\(Self.printable(self.bytes[index + 1]))'")
                }
                continue
            }
            if byte < 0x20 {
                self.offset = index
                throw self.error("an unescaped control character in a string")
            }
            if byte >= 0x80 {
                nonASCII = true
                guard let length = self.utf8Sequence(at: index) else {
                    self.offset = index
                    throw self.error("a string that is not valid UTF-8")
                }
                index += length
                continue
            }
            index += 1
        }
        self.offset = start - 1
        throw self.error("a string without its closing quote")
    }

    mutating func scanNumber() throws -> JSONTape.Entry {
        let start = self.offset
        var index = start
        let count = self.bytes.count
        func digits() -> Int {
            let first = index
            while index < count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self.bytes[index]) { index += 1 }
            return index - first
        }
        if self.bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self.bytes[index]) else {
            self.offset = index
            throw self.error("a number without digits")
        }
        if self.bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self.bytes[index]) {
                self.offset = index
                throw self.error("a number with a leading zero")
            }
        } else {
            _ = digits()
        }
        if index < count, self.bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else {
                self.offset = index
                throw self.error("no digits after a decimal point")
            }
        }
        if index < count, self.bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < count, self.bytes[index] == UInt8(ascii: "+") || self.bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else {
                self.offset = index
                throw self.error("no digits in an exponent")
            }
        }
        self.offset = index
        return JSONTape.Entry(kind: .number, escaped: false, start: Int32(start), end: Int32(index), count: 0)
    }

    mutating func scanLiteral(_ word: StaticString, kind: JSONTape.Kind) throws -> JSONTape.Entry {
        let length = word.utf8CodeUnitCount
        guard self.offset + length <= self.bytes.count,
              memcmp(self.bytes.baseAddress! + self.offset, word.utf8Start, length) == 0 else {
            throw self.error("unexpected characters (not true, false or null)")
        }
        let entry = JSONTape.Entry(kind: kind, escaped: false, start: Int32(self.offset), end: Int32(self.offset + length), count: 0)
        self.offset += length
        return entry
    }

    /// Whether any of the eight bytes of `word` is `"`, `\`, below 0x20 or above 0x7F
    /// (the classic bit tricks: a byte is zero after XOR with the byte looked for).
    @inline(__always)
    static func needsAttention(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
        let quote = hasZeroByte(word ^ (ones &* 0x22))
        let backslash = hasZeroByte(word ^ (ones &* 0x5C))
        let control = (word &- (ones &* 0x20)) & ~word & highs
        return (quote | backslash | control | (word & highs)) != 0
    }

    /// The value of four hex digits at `index`, if they are there.
    func hex4(at index: Int) -> UInt32? {
        guard index + 4 <= self.bytes.count else { return nil }
        var value: UInt32 = 0
        for offset in 0..<4 {
            guard let digit = Self.hexValue(self.bytes[index + offset]) else { return nil }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// The length of the well-formed UTF-8 sequence starting with the byte at `index` (≥ 0x80),
    /// or nil: no overlong forms, no surrogates, nothing past U+10FFFF (RFC 3629).
    func utf8Sequence(at index: Int) -> Int? {
        let lead = self.bytes[index]
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upper = 0x9F
        case 0xF0: length = 4; lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upper = 0x8F
        default: return nil
        }
        guard index + length <= self.bytes.count else { return nil }
        let second = self.bytes[index + 1]
        guard second >= lower && second <= upper else { return nil }
        for offset in 2..<length where self.bytes[index + offset] & 0xC0 != 0x80 {
            return nil
        }
        return length
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    static func printable(_ byte: UInt8) -> String {
        (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : "\\u{\(String(byte, radix: 16))}"
    }

    func error(_ reason: String) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(
            codingPath: [], debugDescription: "The given data was not valid JSON: \(reason) at byte \(self.offset)."))
    }
}

#if canImport(Glibc)
import Glibc
#endif
