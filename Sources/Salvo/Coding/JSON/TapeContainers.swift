/// An object's members, found by comparing key bytes.
struct TapeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: TapeDecoder
    /// The object's index on the tape.
    let object: Int
    /// The object's place in the document.
    let node: CodingPathNode?

    init(decoder: TapeDecoder, object: Int, node: CodingPathNode?) {
        self.decoder = decoder
        self.object = object
        self.node = node
    }

    var codingPath: [any CodingKey] { CodingPathNode.path(self.node) }

    /// Each key once, in the order of first appearance, even when the document repeats one
    /// (or the key strategy maps two to one name): `JSONDecoder` lists a key once too, and
    /// code such as `Dictionary(uniqueKeysWithValues:)` over the keys depends on it.
    var allKeys: [Key] {
        let tape = self.decoder.tape
        let count = Int(tape.entries[self.object].count)
        var keys: [Key] = []
        keys.reserveCapacity(count)
        var seen = Set<String>(minimumCapacity: count)
        var member = self.object + 1
        for _ in 0..<count {
            if case .success(let wire) = tape.string(tape.entries[member]) {
                let name = self.decoder.convertedKey(wire, in: self.node)
                if seen.insert(name).inserted, let key = Key(stringValue: name) { keys.append(key) }
            }
            member = tape.after(member + 1)
        }
        return keys
    }

    /// The tape index of `key`'s value; the first one when a key repeats, as `JSONDecoder`
    /// does (checked against Swift 6.3's Foundation).
    private func find(_ key: Key) -> Int? {
        self.find(named: key.stringValue)
    }

    /// The tape index of the value of the member called `name` (after key conversion).
    private func find(named name: String) -> Int? {
        let tape = self.decoder.tape
        let count = tape.entries[self.object].count
        if count > TapeDecoder.memberTableThreshold {
            return self.decoder.memberTable(of: self.object, node: self.node)[name]
        }
        var name = name
        var member = self.object + 1
        let converts = self.decoder.convertsKeys
        for _ in 0..<count {
            let keyEntry = tape.entries[member]
            let matches: Bool
            if converts {
                if case .success(let wire) = tape.string(keyEntry) {
                    matches = self.decoder.convertedKey(wire, in: self.node) == name
                } else {
                    matches = false
                }
            } else {
                matches = tape.stringEquals(keyEntry, &name)
            }
            if matches { return member + 1 }
            member = tape.after(member + 1)
        }
        return nil
    }

    private func value(for key: Key) throws -> Int {
        guard let index = self.find(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: self.codingPath,
                                                       debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return index
    }

    func contains(_ key: Key) -> Bool { self.find(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        self.decoder.tape.entries[try self.value(for: key)].kind == .null
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try self.decoder.bool(at: try self.value(for: key), parent: self.node, key: key)
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try self.decoder.string(at: try self.value(for: key), parent: self.node, key: key)
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try self.decoder.double(at: try self.value(for: key), parent: self.node, key: key)
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try self.decoder.float(at: try self.value(for: key), parent: self.node, key: key)
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try self.integer(Int.self, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try self.integer(Int8.self, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try self.integer(Int16.self, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try self.integer(Int32.self, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try self.integer(Int64.self, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try self.integer(UInt.self, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try self.integer(UInt8.self, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try self.integer(UInt16.self, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try self.integer(UInt32.self, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try self.integer(UInt64.self, key) }

    @inline(__always)
    private func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: Key) throws -> T {
        try self.decoder.integer(T.self, at: try self.value(for: key), parent: self.node, key: key)
    }

    /// Runs `read` with the decoder at `key`'s value (nested containers).
    private func nested<T>(_ key: Key, _ read: (TapeDecoder) throws -> T) throws -> T {
        try self.decoder.at(try self.value(for: key), in: self.node, key: key, read)
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try self.decoder.decode(T.self, at: try self.value(for: key), in: self.node, key: key)
    }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let index = self.find(key), self.decoder.tape.entries[index].kind != .null else { return nil }
        return try self.decoder.string(at: index, parent: self.node, key: key)
    }

    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        guard let index = self.find(key), self.decoder.tape.entries[index].kind != .null else { return nil }
        return try self.decoder.integer(Int.self, at: index, parent: self.node, key: key)
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        guard let index = self.find(key), self.decoder.tape.entries[index].kind != .null else { return nil }
        return try self.decoder.bool(at: index, parent: self.node, key: key)
    }

    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        guard let index = self.find(key), self.decoder.tape.entries[index].kind != .null else { return nil }
        return try self.decoder.double(at: index, parent: self.node, key: key)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let index = self.find(key), self.decoder.tape.entries[index].kind != .null else { return nil }
        return try self.decoder.decode(T.self, at: index, in: self.node, key: key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try self.nested(key) { try $0.container(keyedBy: NestedKey.self) }
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try self.nested(key) { try $0.unkeyedContainer() }
    }

    func superDecoder() throws -> any Decoder {
        // Looked up by name: a type's own keys seldom have a `super` case.
        self.superDecoder(named: AnyCodingKey("super"), at: self.find(named: "super"))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        self.superDecoder(named: key, at: self.find(key))
    }

    /// A decoder of its own for a member, or one holding null when there is none (as `JSONDecoder`).
    private func superDecoder(named key: any CodingKey, at index: Int?) -> any Decoder {
        let decoder = self.decoder
        guard let index else { return NullDecoder(codingPath: self.codingPath + [key], userInfo: decoder.userInfo) }
        return TapeDecoder(tape: decoder.tape, options: decoder.options, index: index, parent: self.node, key: key)
    }
}

/// An array's elements, in order.
struct TapeUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: TapeDecoder
    /// The array's place in the document.
    let node: CodingPathNode?
    let count: Int?
    private(set) var currentIndex = 0
    /// The tape index of the current element.
    private var next: Int

    init(decoder: TapeDecoder, array: Int, node: CodingPathNode?) {
        self.decoder = decoder
        self.node = node
        self.count = Int(decoder.tape.entries[array].count)
        self.next = array + 1
    }

    var codingPath: [any CodingKey] { CodingPathNode.path(self.node) }
    var isAtEnd: Bool { self.currentIndex >= self.count! }

    private mutating func advance<T>(_ type: Any.Type, _ read: (TapeDecoder) throws -> T) throws -> T {
        guard !self.isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: self.codingPath + [IndexCodingKey(self.currentIndex)],
                                                          debugDescription: "Unkeyed container is at end."))
        }
        let value = try self.decoder.at(self.next, in: self.node, key: IndexCodingKey(self.currentIndex), read)
        self.next = self.decoder.tape.after(self.next)
        self.currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard !self.isAtEnd else {
            throw DecodingError.valueNotFound(Never?.self, .init(codingPath: self.codingPath, debugDescription: "Unkeyed container is at end."))
        }
        guard self.decoder.tape.entries[self.next].kind == .null else { return false }
        self.next += 1
        self.currentIndex += 1
        return true
    }

    /// Reads the current element in place and moves past it.
    @inline(__always)
    private mutating func scalar<T>(_ type: Any.Type, _ read: (TapeDecoder, Int, CodingPathNode?, IndexCodingKey) throws -> T) throws -> T {
        guard !self.isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: self.codingPath + [IndexCodingKey(self.currentIndex)],
                                                          debugDescription: "Unkeyed container is at end."))
        }
        let value = try read(self.decoder, self.next, self.node, IndexCodingKey(self.currentIndex))
        self.next += 1
        self.currentIndex += 1
        return value
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        try self.scalar(type) { try $0.bool(at: $1, parent: $2, key: $3) }
    }
    mutating func decode(_ type: String.Type) throws -> String {
        try self.scalar(type) { try $0.string(at: $1, parent: $2, key: $3) }
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        try self.scalar(type) { try $0.double(at: $1, parent: $2, key: $3) }
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        try self.scalar(type) { try $0.float(at: $1, parent: $2, key: $3) }
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try self.integer(Int.self) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try self.integer(Int8.self) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try self.integer(Int16.self) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try self.integer(Int32.self) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try self.integer(Int64.self) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try self.integer(UInt.self) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try self.integer(UInt8.self) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try self.integer(UInt16.self) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try self.integer(UInt32.self) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try self.integer(UInt64.self) }

    private mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        try self.scalar(type) { try $0.integer(T.self, at: $1, parent: $2, key: $3) }
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try self.advance(type) { try $0.decodeHere(T.self) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try self.advance(type) { try $0.container(keyedBy: NestedKey.self) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try self.advance([Any].self) { try $0.unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try self.advance((any Decoder).self) { decoder in
            TapeDecoder(tape: decoder.tape, options: decoder.options, index: decoder.index, parent: decoder.parent, key: decoder.key)
        }
    }
}

/// One value.
struct TapeSingleValueContainer: SingleValueDecodingContainer {
    let decoder: TapeDecoder
    let index: Int
    /// The value's container and key in it, for coding paths.
    let parent: CodingPathNode?
    let key: (any CodingKey)?

    init(decoder: TapeDecoder, index: Int, parent: CodingPathNode?, key: (any CodingKey)?) {
        self.decoder = decoder
        self.index = index
        self.parent = parent
        self.key = key
    }

    var codingPath: [any CodingKey] { CodingPathNode.path(self.parent, then: self.key) }

    /// Runs `body` with the decoder at this value (a nested decode moves it).
    private func read<T>(_ body: (TapeDecoder) throws -> T) throws -> T {
        try self.decoder.at(self.index, in: self.parent, key: self.key, body)
    }

    func decodeNil() -> Bool { self.decoder.tape.entries[self.index].kind == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try self.decoder.bool(at: self.index, parent: self.parent, key: self.key) }
    func decode(_ type: String.Type) throws -> String { try self.decoder.string(at: self.index, parent: self.parent, key: self.key) }
    func decode(_ type: Double.Type) throws -> Double { try self.decoder.double(at: self.index, parent: self.parent, key: self.key) }
    func decode(_ type: Float.Type) throws -> Float { try self.decoder.float(at: self.index, parent: self.parent, key: self.key) }
    func decode(_ type: Int.Type) throws -> Int { try self.integer(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try self.integer(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try self.integer(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try self.integer(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try self.integer(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try self.integer(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try self.integer(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try self.integer(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try self.integer(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try self.integer(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try self.read { try $0.decodeHere(T.self) } }

    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        try self.decoder.integer(T.self, at: self.index, parent: self.parent, key: self.key)
    }
}

/// The decoder of a member that is not there: it holds null.
struct NullDecoder: Decoder, SingleValueDecodingContainer {
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    private func missing(_ type: Any.Type) -> DecodingError {
        DecodingError.valueNotFound(type, .init(codingPath: self.codingPath, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw self.missing([String: Any].self) }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw self.missing([Any].self) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
    func decodeNil() -> Bool { true }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { throw self.missing(T.self) }
}

/// An array element's place in a coding path; its text is made only if someone asks.
struct IndexCodingKey: CodingKey {
    let index: Int

    init(_ index: Int) {
        self.index = index
    }

    init?(stringValue: String) {
        nil
    }

    init?(intValue: Int) {
        self.index = intValue
    }

    var stringValue: String { "Index \(self.index)" }
    var intValue: Int? { self.index }
}
