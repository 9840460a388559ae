import Foundation
import OrderedCollections

extension JSONValue {
    public init(from decoder: any Decoder) throws {
        if let tape = decoder as? TapeDecoder {
            // Salvo's decoder knows each value's kind: no trial decodes, and the error of
            // the value that fails (a number out of range) is the one reported.
            self = try tape.decodeJSONValue()
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            // Another decoder hands a dictionary over without the document's order (and
            // decoded as a dictionary, its keys are not renamed by a key strategy): sorted,
            // so that at least the same document gives the same value every time.
            let members = try container.decode([String: JSONValue].self)
            self = .object(OrderedDictionary(uncheckedUniqueKeysWithValues: members.sorted { $0.key < $1.key }))
        }
    }

    /// Through another encoder than Salvo's own writing of a body (a `JSONValue` inside an
    /// `Encodable` struct, say): an object goes as a `[String: JSONValue]`, its keys never
    /// renamed by a key strategy, in whatever order that encoder writes a dictionary.
    /// `JSONEncoder` keeps none; a `JSONValue` sent as a body is written in order (``Coders/encodeJSON(_:)``).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(Dictionary(uniqueKeysWithValues: object.map { ($0.key, $0.value) }))
        }
    }

    /// The JSON text of this value, objects' members in their order, written as `encoder`
    /// would format it: `.sortedKeys`, `.prettyPrinted` and `.withoutEscapingSlashes` are
    /// honoured, and a non-finite number is written as its `.convertToString` strategy says
    /// or is an error.
    func jsonBytes(as encoder: JSONEncoder) throws(EncodingError) -> [UInt8] {
        var writer = JSONValueWriter(formatting: encoder.outputFormatting, nonFinite: encoder.nonConformingFloatEncodingStrategy)
        try writer.write(self, depth: 0)
        return writer.bytes
    }
}

extension TapeDecoder {
    /// The members of the object here, in the document's order; of a repeated key the first
    /// counts, as with `JSONDecoder`. Keys are data: never renamed by a key strategy.
    /// The value here as a ``JSONValue``, built with a stack of its own: a document nested as
    /// deep as the tape takes (``JSONTape/maxDepth``) needs no thread stack for its depth.
    /// Decoded by recursion, 500 levels overflowed a thread's stack in a debug build under
    /// AddressSanitizer, and would a small thread's stack in any build. The same values, the
    /// same first-member-wins for repeated keys, and the same errors with the same coding paths
    /// as the recursive decoding (``decodeMembersInOrder()`` and the array's elements).
    func decodeJSONValue() throws -> JSONValue {
        var open: [OpenJSONContainer] = []
        // The value to build next: its entry, the node of the container it is in, its key there.
        var index = self.index
        var parent = self.parent
        var key = self.key
        while true {
            var value: JSONValue
            let entry = self.tape.entries[index]
            switch entry.kind {
            case .null: value = .null
            case .true, .false: value = .bool(try self.at(index, in: parent, key: key) { try $0.decodeBool() })
            case .number: value = .number(try self.at(index, in: parent, key: key) { try $0.decodeDouble() })
            case .string: value = .string(try self.at(index, in: parent, key: key) { try $0.decodeString() })
            case .array, .object:
                var container = OpenJSONContainer(index: index, entry: entry, parent: parent, key: key)
                if let child = try self.nextChild(of: &container) {
                    open.append(container)
                    (index, parent, key) = (child.index, container.node, child.key)
                    continue
                }
                value = container.value
            }
            // Up: into the container the value is in; then that container's next child, or
            // the container is whole and goes into its own.
            var descended = false
            while !open.isEmpty {
                let last = open.count - 1
                open[last].add(value)
                if let child = try self.nextChild(of: &open[last]) {
                    (index, parent, key) = (child.index, open[last].node, child.key)
                    descended = true
                    break
                }
                value = open.removeLast().value
            }
            if !descended { return value }
        }
    }

    /// The next child of `container` to build, and its key there; nil when none is left. An
    /// object's member whose key came before is skipped (the first one stands).
    private func nextChild(of container: inout OpenJSONContainer) throws -> (index: Int, key: any CodingKey)? {
        while container.left > 0 {
            container.left -= 1
            let child = container.next
            guard container.isObject else {
                container.next = self.tape.after(child)
                container.position += 1
                return (child, IndexCodingKey(container.position - 1))
            }
            // An object's member: its key's entry, then its value's.
            container.next = self.tape.after(child + 1)
            guard case .success(let name) = self.tape.string(self.tape.entries[child]) else {
                throw self.at(container.index, in: container.parent, key: container.key) { $0.corrupted("A key is not valid UTF-8.") }
            }
            if container.members[name] != nil { continue }
            container.pendingKey = name
            return (child + 1, AnyCodingKey(name))
        }
        return nil
    }

    func decodeMembersInOrder() throws -> OrderedDictionary<String, JSONValue> {
        let entry = self.entry
        guard entry.kind == .object else { throw self.mismatch(JSONValue.self, entry) }
        let node = self.node
        var members = OrderedDictionary<String, JSONValue>(minimumCapacity: Int(entry.count))
        var member = self.index + 1
        for _ in 0..<entry.count {
            guard case .success(let key) = self.tape.string(self.tape.entries[member]) else {
                throw self.corrupted("A key is not valid UTF-8.")
            }
            if members[key] == nil {
                members[key] = try self.decode(JSONValue.self, at: member + 1, in: node, key: AnyCodingKey(key))
            }
            member = self.tape.after(member + 1)
        }
        return members
    }
}

/// Writes a ``JSONValue`` as JSON text, members in order — what `JSONEncoder` cannot do, as
/// it keeps an object's members in a dictionary.
struct JSONValueWriter {
    private(set) var bytes: [UInt8] = []
    private let sortsKeys: Bool
    private let pretty: Bool
    private let escapesSlashes: Bool
    private let nonFinite: (positiveInfinity: String, negativeInfinity: String, nan: String)?
    /// Where the writer is, for an error.
    private var codingPath: [any CodingKey] = []

    init(formatting: JSONEncoder.OutputFormatting, nonFinite: JSONEncoder.NonConformingFloatEncodingStrategy) {
        self.sortsKeys = formatting.contains(.sortedKeys)
        self.pretty = formatting.contains(.prettyPrinted)
        self.escapesSlashes = !formatting.contains(.withoutEscapingSlashes)
        if case .convertToString(let positiveInfinity, let negativeInfinity, let nan) = nonFinite {
            self.nonFinite = (positiveInfinity, negativeInfinity, nan)
        } else {
            self.nonFinite = nil
        }
    }

    mutating func write(_ value: JSONValue, depth: Int) throws(EncodingError) {
        switch value {
        case .null: self.bytes += "null".utf8
        case .bool(let bool): self.bytes += (bool ? "true" : "false").utf8
        case .number(let number): try self.write(number)
        case .string(let string): self.write(string)
        case .array(let elements):
            guard !elements.isEmpty else { self.bytes += "[]".utf8; return }
            self.bytes.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { self.bytes.append(UInt8(ascii: ",")) }
                self.newline(depth: depth + 1)
                self.codingPath.append(IndexCodingKey(position))
                try self.write(element, depth: depth + 1)
                self.codingPath.removeLast()
            }
            self.newline(depth: depth)
            self.bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else { self.bytes += "{}".utf8; return }
            self.bytes.append(UInt8(ascii: "{"))
            let keys = self.sortsKeys ? members.keys.sorted() : Array(members.keys)
            for (position, key) in keys.enumerated() {
                if position > 0 { self.bytes.append(UInt8(ascii: ",")) }
                self.newline(depth: depth + 1)
                self.write(key)
                self.bytes += (self.pretty ? " : " : ":").utf8
                self.codingPath.append(AnyCodingKey(key))
                try self.write(members[key] ?? .null, depth: depth + 1)
                self.codingPath.removeLast()
            }
            self.newline(depth: depth)
            self.bytes.append(UInt8(ascii: "}"))
        }
    }

    private mutating func newline(depth: Int) {
        guard self.pretty else { return }
        self.bytes.append(UInt8(ascii: "\n"))
        self.bytes += repeatElement(UInt8(ascii: " "), count: 2 * depth)
    }

    private mutating func write(_ number: Double) throws(EncodingError) {
        guard number.isFinite else {
            guard let nonFinite = self.nonFinite else {
                throw EncodingError.invalidValue(number, .init(codingPath: self.codingPath,
                                                               debugDescription: "Unable to encode \(number) directly in JSON."))
            }
            self.write(number.isNaN ? nonFinite.nan : number < 0 ? nonFinite.negativeInfinity : nonFinite.positiveInfinity)
            return
        }
        // Whole numbers as integers (1, not 1.0), as JSONEncoder writes them; the rest in
        // Swift's shortest form that reads back as the same Double, which is valid JSON.
        if number.rounded(.towardZero) == number, abs(number) < 1e17, let whole = Int64(exactly: number) {
            self.bytes += String(whole).utf8
        } else {
            self.bytes += String(number).utf8
        }
    }

    private mutating func write(_ string: String) {
        self.bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): self.bytes += #"\""#.utf8
            case UInt8(ascii: "\\"): self.bytes += #"\\"#.utf8
            case UInt8(ascii: "/") where self.escapesSlashes: self.bytes += #"\/"#.utf8
            case 0x0A: self.bytes += #"\n"#.utf8
            case 0x0D: self.bytes += #"\r"#.utf8
            case 0x09: self.bytes += #"\t"#.utf8
            case 0x08: self.bytes += #"\b"#.utf8
            case 0x0C: self.bytes += #"\f"#.utf8
            case 0..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                self.bytes += #"\u00"#.utf8
                self.bytes.append(digits[Int(byte >> 4)])
                self.bytes.append(digits[Int(byte & 0x0F)])
            default: self.bytes.append(byte)
            }
        }
        self.bytes.append(UInt8(ascii: "\""))
    }
}

/// An array or object that ``TapeDecoder/decodeJSONValue()`` is building: where its next child
/// is, how many are left, what it has so far, and its place (for errors).
struct OpenJSONContainer {
    let index: Int
    let isObject: Bool
    /// The container's own place: the node its children are in, and where it is itself.
    let node: CodingPathNode?
    let parent: CodingPathNode?
    let key: (any CodingKey)?
    /// The next child's entry (an object's: its key's).
    var next: Int
    var left: Int
    /// Arrays: the position of the next element.
    var position = 0
    var elements: [JSONValue] = []
    var members = OrderedDictionary<String, JSONValue>()
    /// Objects: the key of the member whose value is being built.
    var pendingKey = ""

    init(index: Int, entry: JSONTape.Entry, parent: CodingPathNode?, key: (any CodingKey)?) {
        self.index = index
        self.isObject = entry.kind == .object
        self.parent = parent
        self.key = key
        // As `TapeDecoder.node`: the container's children are in a node of its key.
        self.node = key.map { CodingPathNode(key: $0, parent: parent) } ?? parent
        self.next = index + 1
        self.left = Int(entry.count)
        if self.isObject {
            self.members = OrderedDictionary(minimumCapacity: Int(entry.count))
        } else {
            self.elements.reserveCapacity(Int(entry.count))
        }
    }

    mutating func add(_ value: JSONValue) {
        if self.isObject {
            self.members[self.pendingKey] = value
        } else {
            self.elements.append(value)
        }
    }

    var value: JSONValue { self.isObject ? .object(self.members) : .array(self.elements) }
}
