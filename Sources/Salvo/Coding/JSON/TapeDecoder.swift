import Foundation

/// Salvo's JSON decoder: `Decodable` values straight from a ``JSONTape``.
///
/// It keeps `JSONDecoder`'s behaviour — the same strategies for keys, dates, data and
/// non-conforming floats, the same special types (`Date`, `Data`, `URL`, `Decimal`, string-keyed
/// dictionaries without key conversion), the same `DecodingError`s with their coding paths —
/// and spends less per value: the document is scanned once into a flat index, keys are
/// compared as bytes, numbers are parsed in place.
///
/// One decoder object serves a whole document: it moves to each nested value and back,
/// keeping the coding path as a stack.
final class TapeDecoder: Decoder {
    struct Options {
        /// The options of `decoder`, or nil when it asks for something only `JSONDecoder`
        /// itself does (JSON5, a subclass, a top level without braces). Every date strategy
        /// that Linux's Foundation has is one of this decoder's.
        init?(_ decoder: JSONDecoder, keyMapping: (@Sendable (String) -> String)?) {
            guard type(of: decoder) == JSONDecoder.self, !decoder.allowsJSON5, !decoder.assumesTopLevelDictionary else { return nil }
            self.keys = decoder.keyDecodingStrategy
            self.dates = decoder.dateDecodingStrategy
            self.data = decoder.dataDecodingStrategy
            self.floats = decoder.nonConformingFloatDecodingStrategy
            self.userInfo = decoder.userInfo
            // The mapping stands for the custom key strategy it was made with; a strategy
            // set on the decoder since then wins.
            if case .custom = decoder.keyDecodingStrategy { self.keyMapping = keyMapping } else { self.keyMapping = nil }
        }

        var keys: JSONDecoder.KeyDecodingStrategy
        var dates: JSONDecoder.DateDecodingStrategy
        var data: JSONDecoder.DataDecodingStrategy
        var floats: JSONDecoder.NonConformingFloatDecodingStrategy
        var userInfo: [CodingUserInfoKey: any Sendable]
        /// A mapping from wire names to property names, used instead of `keys` when set.
        var keyMapping: (@Sendable (String) -> String)?
    }

    let tape: JSONTape
    let options: Options
    /// The value being decoded.
    var index: Int
    /// The place of the container holding the value (nil: the top of the document).
    var parent: CodingPathNode?
    /// The value's key in that container (nil for the top-level value).
    var key: (any CodingKey)?
    /// Wire keys already converted by the key strategy, in this document.
    private var convertedKeys: [String: String] = [:]
    /// Whether the key mapping agrees with the decoder's strategy (nil: not checked yet).
    private var mappingVerdict: Bool?
    /// The last type found to be none of those decoded apart (``decodeHere(_:)``).
    private var lastPlainType: ObjectIdentifier?
    /// Tables of the members of large objects by property name, for the object being
    /// decoded and those around it (a stack: the objects it is inside), so that memory stays
    /// bounded by the nesting, not the document.
    private var memberTables: [(object: Int, table: [String: Int])] = []

    /// Objects with more members than this are looked up through a table: a scan per key
    /// would make decoding a large object (a dictionary keyed by `Int`, say) quadratic.
    static let memberTableThreshold = 32

    init(tape: JSONTape, options: Options, index: Int = 0, parent: CodingPathNode? = nil, key: (any CodingKey)? = nil) {
        self.tape = tape
        self.options = options
        self.index = index
        self.parent = parent
        self.key = key
    }

    var codingPath: [any CodingKey] { CodingPathNode.path(self.parent, then: self.key) }
    var userInfo: [CodingUserInfoKey: Any] { self.options.userInfo }

    var entry: JSONTape.Entry { self.tape.entries[self.index] }

    /// The current value's place, as the node a container made here keeps.
    var node: CodingPathNode? {
        guard let key = self.key else { return self.parent }
        return CodingPathNode(key: key, parent: self.parent)
    }

    // MARK: Decoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let entry = self.entry
        guard entry.kind == .object else { throw self.mismatch([String: Any].self, entry) }
        return KeyedDecodingContainer(TapeKeyedContainer<Key>(decoder: self, object: self.index, node: self.node))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let entry = self.entry
        guard entry.kind == .array else { throw self.mismatch([Any].self, entry) }
        return TapeUnkeyedContainer(decoder: self, array: self.index, node: self.node)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        TapeSingleValueContainer(decoder: self, index: self.index, parent: self.parent, key: self.key)
    }

    // MARK: Values

    /// Decodes the value at `index`, `key` in the container at `parent`.
    func decode<T: Decodable>(_ type: T.Type, at index: Int, in parent: CodingPathNode?, key: (any CodingKey)?) throws -> T {
        try self.at(index, in: parent, key: key) { try $0.decodeHere(T.self) }
    }

    /// Runs `body` with the decoder moved to the value at `index` (`key` in the container at
    /// `parent`), then moves it back: one decoder serves the whole document.
    @inline(__always)
    func at<T>(_ index: Int, in parent: CodingPathNode?, key: (any CodingKey)?, _ body: (TapeDecoder) throws -> T) rethrows -> T {
        let saved = (self.index, self.parent, self.key)
        (self.index, self.parent, self.key) = (index, parent, key)
        defer { (self.index, self.parent, self.key) = saved }
        return try body(self)
    }

    /// Decodes the value at ``index``, with the types `JSONDecoder` treats apart.
    func decodeHere<T: Decodable>(_ type: T.Type) throws -> T {
        // Metatype comparisons first: cheaper than casts, and most types are none of these.
        if T.self == String.self { return try self.decodeString() as! T }
        if T.self == Int.self { return try self.decodeInteger(Int.self) as! T }
        if T.self == Double.self { return try self.decodeDouble() as! T }
        if T.self == Bool.self { return try self.decodeBool() as! T }
        if T.self == Date.self { return try self.decodeDate() as! T }
        if T.self == Data.self { return try self.decodeData() as! T }
        // The elements of an array are of one type: checked once, not per element.
        let identity = ObjectIdentifier(T.self)
        if identity == self.lastPlainType { return try T(from: self) }
        switch type {
        case is URL.Type:
            let text = try self.decodeString()
            guard let url = URL(string: text) else {
                throw self.corrupted("Invalid URL string.")
            }
            return url as! T
        case is Decimal.Type:
            let entry = self.entry
            guard entry.kind == .number else { throw self.mismatch(Decimal.self, entry) }
            guard let decimal = Decimal(string: self.tape.numberText(entry), locale: Locale(identifier: "en_US_POSIX")) else {
                throw self.corrupted("The number \(self.tape.numberText(entry)) is not a valid Decimal.")
            }
            return decimal as! T
        case let array as any TapeDecodableArray.Type:
            return try array.decodeElements(from: self) as! T
        case let dictionary as any StringKeyedDictionary.Type:
            return try dictionary.decodeStringKeyed(from: self) as! T
        default:
            self.lastPlainType = identity
            return try T(from: self)
        }
    }

    // MARK: Scalars
    //
    // Read in place at `index`: the decoder does not move, so no state changes for a scalar.
    // `parent` and `key` only make the coding path of an error.

    func decodeNil() -> Bool { self.entry.kind == .null }

    func decodeBool() throws -> Bool { try self.bool(at: self.index, parent: self.parent, key: self.key) }
    func decodeString() throws -> String { try self.string(at: self.index, parent: self.parent, key: self.key) }
    func decodeInteger<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        try self.integer(T.self, at: self.index, parent: self.parent, key: self.key)
    }
    func decodeDouble() throws -> Double { try self.double(at: self.index, parent: self.parent, key: self.key) }
    func decodeFloat() throws -> Float { try self.float(at: self.index, parent: self.parent, key: self.key) }

    @inline(__always)
    func bool(at index: Int, parent: CodingPathNode?, key: (any CodingKey)?) throws -> Bool {
        switch self.tape.entries[index].kind {
        case .true: return true
        case .false: return false
        default: throw self.mismatch(Bool.self, self.tape.entries[index], parent: parent, key: key)
        }
    }

    @inline(__always)
    func string(at index: Int, parent: CodingPathNode?, key: (any CodingKey)?) throws -> String {
        let entry = self.tape.entries[index]
        guard entry.kind == .string else { throw self.mismatch(String.self, entry, parent: parent, key: key) }
        switch self.tape.string(entry) {
        case .success(let text): return text
        case .failure(let problem): throw Self.corrupted("The data contains \(problem.message).", parent: parent, key: key)
        }
    }

    @inline(__always)
    func integer<T: FixedWidthInteger>(_ type: T.Type, at index: Int, parent: CodingPathNode?, key: (any CodingKey)?) throws -> T {
        let entry = self.tape.entries[index]
        guard entry.kind == .number else { throw self.mismatch(T.self, entry, parent: parent, key: key) }
        guard let value = self.tape.integer(entry, as: T.self) else {
            throw Self.corrupted("Parsed JSON number <\(self.tape.numberText(entry))> does not fit in \(T.self).", parent: parent, key: key)
        }
        return value
    }

    func double(at index: Int, parent: CodingPathNode?, key: (any CodingKey)?, as type: Any.Type = Double.self) throws -> Double {
        let entry = self.tape.entries[index]
        switch entry.kind {
        case .number:
            guard let value = self.tape.double(entry), value.isFinite else {
                throw Self.corrupted("Parsed JSON number <\(self.tape.numberText(entry))> does not fit in Double.", parent: parent, key: key)
            }
            return value
        case .string:
            if case .convertFromString(let positive, let negative, let nan) = self.options.floats,
               case .success(let text) = self.tape.string(entry) {
                if text == positive { return .infinity }
                if text == negative { return -.infinity }
                if text == nan { return .nan }
            }
            throw self.mismatch(type, entry, parent: parent, key: key)
        default:
            throw self.mismatch(type, entry, parent: parent, key: key)
        }
    }

    func float(at index: Int, parent: CodingPathNode?, key: (any CodingKey)?) throws -> Float {
        let entry = self.tape.entries[index]
        guard entry.kind == .number else {
            // Non-conforming values ("+inf") come as strings: the same rules as for Double.
            return Float(try self.double(at: index, parent: parent, key: key, as: Float.self))
        }
        // Rounded once from the text, as JSONDecoder does (through a Double it could round twice).
        let raw = self.tape.rawBytes(of: entry)
        guard let float = Float(String(decoding: raw, as: UTF8.self)), float.isFinite,
              float != 0 || !JSONTape.hasNonZeroDigit(raw) else {
            throw Self.corrupted("Parsed JSON number <\(self.tape.numberText(entry))> does not fit in Float.", parent: parent, key: key)
        }
        return float
    }

    private func decodeDate() throws -> Date {
        switch self.options.dates {
        case .deferredToDate:
            return try Date(from: self)
        case .secondsSince1970:
            return Date(timeIntervalSince1970: try self.decodeDouble())
        case .millisecondsSince1970:
            return Date(timeIntervalSince1970: try self.decodeDouble() / 1000)
        case .iso8601:
            let text = try self.decodeString()
            guard let date = try? Date(text, strategy: .iso8601) else {
                throw self.corrupted("Expected date string to be ISO8601-formatted.")
            }
            return date
        case .custom(let decode):
            return try decode(self)
        }
    }

    private func decodeData() throws -> Data {
        switch self.options.data {
        case .deferredToData:
            return try Data(from: self)
        case .base64:
            let text = try self.decodeString()
            guard let data = Data(base64Encoded: text) else {
                throw self.corrupted("Encountered Data is not valid Base64.")
            }
            return data
        case .custom(let decode):
            return try decode(self)
        @unknown default:
            return try Data(from: self)
        }
    }

    /// Moves to the value under `keys` (property names, as after key mapping), keeping the
    /// coding path from the top of the document.
    func descend(into keys: [String]) throws {
        for name in keys {
            let entry = self.entry
            let key = AnyCodingKey(name)
            guard entry.kind == .object else { throw self.mismatch([String: Any].self, entry) }
            let node = self.node
            var member = self.index + 1
            var found: Int?
            for _ in 0..<entry.count where found == nil {
                if case .success(let wire) = self.tape.string(self.tape.entries[member]), self.convertedKey(wire, in: node) == name {
                    found = member + 1
                }
                member = self.tape.after(member + 1)
            }
            guard let found else {
                throw DecodingError.keyNotFound(key, .init(codingPath: CodingPathNode.path(node),
                                                           debugDescription: "No value associated with key \(key) (\"\(name)\")."))
            }
            (self.index, self.parent, self.key) = (found, node, key)
        }
    }

    // MARK: Keys

    /// Property name → the tape index of its value, for the object at `object` (its place:
    /// `node`); the first one of a repeated key, as `JSONDecoder`.
    func memberTable(of object: Int, node: CodingPathNode?) -> [String: Int] {
        if let cached = self.memberTables.last(where: { $0.object == object }) { return cached.table }
        // Tables of objects this one is not inside are done with.
        while let top = self.memberTables.last, !(top.object < object && object < Int(self.tape.entries[top.object].end)) {
            self.memberTables.removeLast()
        }
        let count = Int(self.tape.entries[object].count)
        var table = [String: Int](minimumCapacity: count)
        var member = object + 1
        for _ in 0..<count {
            if case .success(let wire) = self.tape.string(self.tape.entries[member]) {
                let name = self.convertsKeys ? self.convertedKey(wire, in: node) : wire
                if table[name] == nil { table[name] = member + 1 }
            }
            member = self.tape.after(member + 1)
        }
        self.memberTables.append((object, table))
        return table
    }

    /// The property name for a wire key of the object at `node`, per the key strategy.
    func convertedKey(_ wire: String, in node: CodingPathNode?) -> String {
        if let mapping = self.options.keyMapping, self.mappingHolds(mapping, for: wire, in: node) {
            if let cached = self.convertedKeys[wire] { return cached }
            let converted = mapping(wire)
            self.convertedKeys[wire] = converted
            return converted
        }
        switch self.options.keys {
        case .useDefaultKeys:
            return wire
        case .convertFromSnakeCase:
            if let cached = self.convertedKeys[wire] { return cached }
            let converted = Self.camelCase(fromSnakeCase: wire)
            self.convertedKeys[wire] = converted
            return converted
        case .custom(let convert):
            return convert(CodingPathNode.path(node, then: AnyCodingKey(wire))).stringValue
        @unknown default:
            return wire
        }
    }

    /// Whether `mapping` (made with the decoder's custom key strategy) still says what the
    /// strategy says — checked once per document, on its first key: a strategy replaced on the
    /// decoder in place since then wins.
    private func mappingHolds(_ mapping: @Sendable (String) -> String, for wire: String, in node: CodingPathNode?) -> Bool {
        if let verdict = self.mappingVerdict { return verdict }
        var verdict = false
        if case .custom(let convert) = self.options.keys {
            verdict = convert(CodingPathNode.path(node, then: AnyCodingKey(wire))).stringValue == mapping(wire)
        }
        self.mappingVerdict = verdict
        return verdict
    }

    /// Whether wire keys go through a strategy before they are compared.
    private(set) lazy var convertsKeys: Bool = {
        if self.options.keyMapping != nil { return true }
        if case .useDefaultKeys = self.options.keys { return false }
        return true
    }()

    /// `JSONDecoder`'s own rule: words after the first capitalized, the first lowercased,
    /// underscores at either end kept.
    static func camelCase(fromSnakeCase key: String) -> String {
        guard !key.isEmpty, let first = key.firstIndex(where: { $0 != "_" }) else { return key }
        var last = key.index(before: key.endIndex)
        while last > first && key[last] == "_" { last = key.index(before: last) }
        let core = key[first...last]
        let words = core.split(separator: "_")
        guard words.count > 1 else { return key }
        let joined = ([words[0].lowercased()] + words.dropFirst().map { $0.capitalized }).joined()
        return String(key[..<first]) + joined + String(key[key.index(after: last)...])
    }

    // MARK: Errors

    func kindName(_ entry: JSONTape.Entry) -> String {
        switch entry.kind {
        case .object: "a dictionary"
        case .array: "an array"
        case .string: "a string"
        case .number: "a number"
        case .true, .false: "a boolean"
        case .null: "null"
        }
    }

    func mismatch(_ type: Any.Type, _ entry: JSONTape.Entry) -> DecodingError {
        self.mismatch(type, entry, parent: self.parent, key: self.key)
    }

    func mismatch(_ type: Any.Type, _ entry: JSONTape.Entry, parent: CodingPathNode?, key: (any CodingKey)?) -> DecodingError {
        let codingPath = CodingPathNode.path(parent, then: key)
        if entry.kind == .null {
            return DecodingError.valueNotFound(type, .init(codingPath: codingPath,
                                                           debugDescription: "Cannot get value of type \(type) -- found null value instead"))
        }
        return DecodingError.typeMismatch(type, .init(codingPath: codingPath,
                                                      debugDescription: "Expected to decode \(type) but found \(self.found(entry)) instead."))
    }

    /// What a value is, with the start of its text: `a string "abc"`, `a number 12.5`,
    /// `a dictionary {"id": 1, …`, so that a mismatch says what came instead.
    func found(_ entry: JSONTape.Entry) -> String {
        switch entry.kind {
        case .string:
            // A string's raw bytes sit between its quotes, escapes as written.
            "\(self.kindName(entry)) \"\(Self.excerpt(self.tape.rawBytes(of: entry)))\""
        case .number:
            "\(self.kindName(entry)) \(Self.excerpt(self.tape.rawBytes(of: entry)))"
        case .true: "a boolean true"
        case .false: "a boolean false"
        case .null: "null"
        case .object, .array:
            "\(self.kindName(entry)) \(Self.excerpt(self.containerText(entry)))"
        }
    }

    /// A container's text from its opening bracket to its closing one, or the first bytes
    /// of a long one: its entry ends on the list, not in the text, so the brackets are
    /// counted (outside strings) over no more than an excerpt needs.
    private func containerText(_ entry: JSONTape.Entry) -> UnsafeRawBufferPointer {
        let start = Int(entry.start)
        let limit = min(self.tape.count, start + 4 * Self.excerptLength + 1)
        var depth = 0, inString = false, escaped = false
        for offset in start..<limit {
            let byte = self.tape.bytes[offset]
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 { return UnsafeRawBufferPointer(rebasing: self.tape.bytes[start...offset]) }
            default: break
            }
        }
        return UnsafeRawBufferPointer(rebasing: self.tape.bytes[start..<limit])
    }

    /// The start of `bytes` as text, at most ``excerptLength`` characters, `…` when cut;
    /// control characters and line breaks as spaces, so the excerpt stays on one line.
    static func excerpt(_ bytes: UnsafeRawBufferPointer) -> String {
        let text = String(decoding: bytes.prefix(4 * Self.excerptLength), as: UTF8.self)
        var shown = String(text.prefix(Self.excerptLength).map { $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true ? " " : $0 })
        if text.count > Self.excerptLength || bytes.count > 4 * Self.excerptLength { shown += "…" }
        return shown
    }

    static let excerptLength = 40

    func corrupted(_ description: String) -> DecodingError {
        Self.corrupted(description, parent: self.parent, key: self.key)
    }

    static func corrupted(_ description: String, parent: CodingPathNode?, key: (any CodingKey)?) -> DecodingError {
        DecodingError.dataCorrupted(.init(codingPath: CodingPathNode.path(parent, then: key), debugDescription: description))
    }
}

/// `[String: Value]`: decoded member by member, its keys never converted (as `JSONDecoder` does).
protocol StringKeyedDictionary {
    static func decodeStringKeyed(from decoder: TapeDecoder) throws -> Self
}

extension Dictionary: StringKeyedDictionary where Key == String, Value: Decodable {
    static func decodeStringKeyed(from decoder: TapeDecoder) throws -> Self {
        let entry = decoder.entry
        guard entry.kind == .object else { throw decoder.mismatch(Self.self, entry) }
        let node = decoder.node
        var result: [String: Value] = [:]
        result.reserveCapacity(Int(entry.count))
        var member = decoder.index + 1
        for _ in 0..<entry.count {
            let keyEntry = decoder.tape.entries[member]
            guard case .success(let key) = decoder.tape.string(keyEntry) else {
                throw decoder.corrupted("A key is not valid UTF-8.")
            }
            // The first of repeated keys counts, as in JSONDecoder.
            if result[key] == nil {
                result[key] = try decoder.decode(Value.self, at: member + 1, in: node, key: AnyCodingKey(key))
            }
            member = decoder.tape.after(member + 1)
        }
        return result
    }
}

/// `[Element]`: decoded element by element into storage reserved once, without an unkeyed
/// container or the standard library's generic path.
protocol TapeDecodableArray {
    static func decodeElements(from decoder: TapeDecoder) throws -> Self
}

extension Array: TapeDecodableArray where Element: Decodable {
    static func decodeElements(from decoder: TapeDecoder) throws -> Self {
        let entry = decoder.entry
        guard entry.kind == .array else { throw decoder.mismatch(Self.self, entry) }
        let node = decoder.node
        var result: [Element] = []
        result.reserveCapacity(Int(entry.count))
        var element = decoder.index + 1
        for position in 0..<Int(entry.count) {
            result.append(try decoder.decode(Element.self, at: element, in: node, key: IndexCodingKey(position)))
            element = decoder.tape.after(element)
        }
        return result
    }
}
