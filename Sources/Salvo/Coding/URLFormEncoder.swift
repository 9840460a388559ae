import Foundation

/// Encodes an `Encodable` value as `application/x-www-form-urlencoded` — for a form body, or
/// as query items. Usable on its own.
///
/// ```swift
/// struct Search: Encodable { var query: String; var tags: [String]; var page: Page? }
/// struct Page: Encodable { var size: Int; var after: String }
///
/// let form = URLFormEncoder()
/// try form.encodeString(Search(query: "swift http", tags: ["a", "b"], page: Page(size: 20, after: "x")))
/// // query=swift+http&tags[]=a&tags[]=b&page[size]=20&page[after]=x  (brackets percent-encoded)
/// ```
///
/// Fields come in the order the value encodes them (declaration order for synthesized
/// `Codable`); the keys of a dictionary are sorted, so the same value always gives the same
/// bytes. A nil optional is left out. Nested values are named `outer[inner]`; arrays,
/// booleans, dates and `Data` follow the strategies below.
///
/// The key mapping renames the properties of types, never the keys of a `[String: …]`
/// dictionary, which are data — as `JSONEncoder`'s key strategies leave them. An empty array
/// is sent, not left out, so that a form can say "none" (a PATCH clearing a list):
/// `tags[]=` with `.brackets` and `.indexed` — what Rails' form helpers send for a list left
/// empty (a hidden `tags[]` field with an empty value) — and `tags=` with `.repeated` and
/// `.commaSeparated`, OpenAPI's form style for an empty array. A nil property sends nothing.
public struct URLFormEncoder: Sendable {
    /// How a `Bool` is written.
    public enum BoolEncoding: Sendable {
        /// `true` / `false`
        case literal
        /// `1` / `0`
        case numeric
    }

    /// How a `Date` is written.
    public enum DateEncoding: Sendable {
        /// Seconds since 1970 (the default), as `Double` prints them.
        case secondsSince1970
        /// Whole milliseconds since 1970.
        case millisecondsSince1970
        /// ISO 8601 in UTC, `2026-11-22T10:00:00Z`.
        case iso8601
        /// Your own text.
        case custom(@Sendable (Date) -> String)
    }

    /// How nested names are written.
    public enum NestingStyle: Sendable {
        /// `page[size]=20` (Rails, PHP, Rack, qs)
        case brackets
        /// `page.size=20` (Spring)
        case dots
    }

    public var arrayEncoding: QueryItem.ArrayFormat
    public var boolEncoding: BoolEncoding
    public var dateEncoding: DateEncoding
    public var nestingStyle: NestingStyle
    /// How property names become field names.
    public var keys: KeyMapping

    public init(arrayEncoding: QueryItem.ArrayFormat = .brackets, boolEncoding: BoolEncoding = .literal,
                dateEncoding: DateEncoding = .secondsSince1970, nestingStyle: NestingStyle = .brackets,
                keys: KeyMapping = .useDefaultKeys) {
        self.arrayEncoding = arrayEncoding
        self.boolEncoding = boolEncoding
        self.dateEncoding = dateEncoding
        self.nestingStyle = nestingStyle
        self.keys = keys
    }

    /// The fields of `value`, in order: the form's content, or query items.
    ///
    /// - Throws: ``ClientError`` `.encodingFailed` when `value` is not a set of named fields
    ///   (a bare number or array), or when its own `encode(to:)` throws; the coding path says where.
    public func fields<Value: Encodable>(of value: Value) throws(ClientError) -> [QueryItem] {
        let root = FormNode.Box()
        do {
            try FormEncoding(options: self, node: root, codingPath: []).encodeValue(value)
        } catch {
            throw ClientError.encoding(error, of: Value.self)
        }
        switch root.node {
        case .object(let members):
            var items: [QueryItem] = []
            for (key, node) in members {
                self.flatten(node, name: key, into: &items)
            }
            return items
        case .absent:
            return []
        default:
            throw ClientError(.encodingFailed, detail: "\(Value.self): a form needs named fields, not a single value or a list")
        }
    }

    /// `value` as a form body's bytes.
    public func encode<Value: Encodable>(_ value: Value) throws(ClientError) -> [UInt8] {
        Array(try self.encodeString(value).utf8)
    }

    /// `value` as form text, `name=value&…`.
    public func encodeString<Value: Encodable>(_ value: Value) throws(ClientError) -> String {
        Self.serialize(try self.fields(of: value))
    }

    /// Fields as form text: names and values percent-encoded, spaces as `+`.
    public static func serialize(_ fields: [QueryItem]) -> String {
        var text = ""
        for field in fields {
            guard let value = field.value else { continue }
            if !text.isEmpty { text += "&" }
            text += Self.escape(field.name) + "=" + Self.escape(value)
        }
        return text
    }

    static func escape(_ text: String) -> String {
        PercentEncoding.encode(text, allowing: .unreserved).replacingOccurrences(of: "%20", with: "+")
    }

    private func child(_ name: String, _ key: String) -> String {
        switch self.nestingStyle {
        case .brackets: "\(name)[\(key)]"
        case .dots: "\(name).\(key)"
        }
    }

    private func flatten(_ node: FormNode, name: String, into items: inout [QueryItem]) {
        switch node {
        case .absent:
            break
        case .scalar(let value):
            items.append(QueryItem(name, value))
        case .object(let members):
            for (key, child) in members {
                self.flatten(child, name: self.child(name, key), into: &items)
            }
        case .array(let elements) where elements.isEmpty:
            // Present but empty: one field with an empty value, spelled as the array style
            // spells a list (see the type's documentation).
            switch self.arrayEncoding {
            case .brackets, .indexed: items.append(QueryItem(name + "[]", ""))
            case .repeated, .commaSeparated: items.append(QueryItem(name, ""))
            }
        case .array(let elements):
            switch self.arrayEncoding {
            case .repeated:
                for element in elements { self.flatten(element, name: name, into: &items) }
            case .brackets:
                for element in elements { self.flatten(element, name: name + "[]", into: &items) }
            case .indexed:
                for (index, element) in elements.enumerated() {
                    self.flatten(element, name: "\(name)[\(index)]", into: &items)
                }
            case .commaSeparated:
                let scalars = elements.compactMap { element -> String? in
                    if case .scalar(let value) = element { return value }
                    return nil
                }
                if scalars.count == elements.count {
                    items.append(QueryItem(name, scalars.joined(separator: ",")))
                } else {
                    for (index, element) in elements.enumerated() { self.flatten(element, name: "\(name)[\(index)]", into: &items) }
                }
            }
        }
    }

    func string(for date: Date) -> String {
        switch self.dateEncoding {
        case .secondsSince1970: "\(date.timeIntervalSince1970)"
        case .millisecondsSince1970:
            // Beyond Int64 (a date billions of years away, or infinity) as the Double's text.
            Int64(exactly: (date.timeIntervalSince1970 * 1000).rounded()).map { "\($0)" } ?? "\(date.timeIntervalSince1970 * 1000)"
        case .iso8601: date.formatted(.iso8601)
        case .custom(let format): format(date)
        }
    }
}

/// The encoded value before it is flattened into fields.
indirect enum FormNode {
    case absent
    case scalar(String)
    case array([FormNode])
    case object([(String, FormNode)])

    /// A node being filled in by a container.
    final class Box {
        var node: FormNode = .absent
        var children: [(String, Box)] = []
        var elements: [Box] = []
        var kind: Kind = .unset
        /// A `[String: …]` dictionary: its keys are data, sorted (so that a form is the same
        /// every time) and never renamed by the key mapping.
        var isDictionary = false

        enum Kind { case unset, scalar, keyed, unkeyed }

        func resolve() -> FormNode {
            switch self.kind {
            case .unset, .scalar:
                return self.node
            case .keyed:
                var members = self.children.map { ($0.0, $0.1.resolve()) }
                if self.isDictionary { members.sort { $0.0 < $1.0 } }
                return .object(members)
            case .unkeyed:
                return .array(self.elements.map { $0.resolve() })
            }
        }
    }
}

/// Dictionaries with string keys, whose keys are data rather than property names.
protocol StringKeyedFormDictionary {}
extension Dictionary: StringKeyedFormDictionary where Key == String {}

/// The `Encoder` behind ``URLFormEncoder``.
struct FormEncoding: Encoder {
    let options: URLFormEncoder
    let node: FormNode.Box
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func encodeValue<T: Encodable>(_ value: T) throws {
        if let scalar = self.scalar(value) {
            self.node.kind = .scalar
            self.node.node = .scalar(scalar)
            return
        }
        if value is any StringKeyedFormDictionary { self.node.isDictionary = true }
        try value.encode(to: self)
        if case .keyed = self.node.kind {
            self.node.node = self.node.resolve()
        } else if case .unkeyed = self.node.kind {
            self.node.node = self.node.resolve()
        }
    }

    /// The value's text when it is one field: dates, data, URLs and decimals as the options say.
    private func scalar<T: Encodable>(_ value: T) -> String? {
        switch value {
        case let date as Date: self.options.string(for: date)
        case let data as Data: data.base64EncodedString()
        case let url as URL: url.absoluteString
        case let decimal as Decimal: decimal.description
        default: nil
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        self.node.kind = .keyed
        return KeyedEncodingContainer(KeyedFormContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        self.node.kind = .unkeyed
        return UnkeyedFormContainer(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleFormContainer(encoder: self)
    }

    func text<T: Encodable>(of value: T) -> String? {
        switch value {
        case let bool as Bool:
            switch self.options.boolEncoding {
            case .literal: bool ? "true" : "false"
            case .numeric: bool ? "1" : "0"
            }
        case let string as String: string
        case let number as any BinaryInteger: "\(number)"
        case let number as Double: "\(number)"
        case let number as Float: "\(number)"
        default: nil
        }
    }

    /// Encodes `value` into `box`, a child of this node.
    func encode<T: Encodable>(_ value: T, into box: FormNode.Box, key: any CodingKey) throws {
        if let text = self.text(of: value) {
            box.kind = .scalar
            box.node = .scalar(text)
        } else {
            let child = FormEncoding(options: self.options, node: box, codingPath: self.codingPath + [key])
            try child.encodeValue(value)
            if box.kind == .unset, case .absent = box.node {
                box.node = .absent
            }
        }
    }
}

struct KeyedFormContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: FormEncoding
    var codingPath: [any CodingKey] { self.encoder.codingPath }

    private func box(for key: Key) -> FormNode.Box {
        let box = FormNode.Box()
        // The mapping is for property names. A dictionary's keys are data (JSONEncoder's key
        // strategies leave them alone too), and a key with an integer value is an index, as
        // the client's JSON coders treat it.
        let node = self.encoder.node
        let name = node.isDictionary || key.intValue != nil ? key.stringValue : self.encoder.options.keys.wireName(key.stringValue)
        node.children.append((name, box))
        return box
    }

    mutating func encodeNil(forKey key: Key) throws {}

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try self.encoder.encode(value, into: self.box(for: key), key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let box = self.box(for: key)
        return FormEncoding(options: self.encoder.options, node: box, codingPath: self.codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let box = self.box(for: key)
        return FormEncoding(options: self.encoder.options, node: box, codingPath: self.codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let box = FormNode.Box()
        self.encoder.node.children.append(("super", box))
        return FormEncoding(options: self.encoder.options, node: box, codingPath: self.codingPath + [AnyCodingKey("super")])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        FormEncoding(options: self.encoder.options, node: self.box(for: key), codingPath: self.codingPath + [key])
    }
}

struct UnkeyedFormContainer: UnkeyedEncodingContainer {
    let encoder: FormEncoding
    var codingPath: [any CodingKey] { self.encoder.codingPath }
    var count: Int { self.encoder.node.elements.count }

    private func next() -> (FormNode.Box, AnyCodingKey) {
        let box = FormNode.Box()
        let key = AnyCodingKey(intValue: self.encoder.node.elements.count)
        self.encoder.node.elements.append(box)
        return (box, key)
    }

    mutating func encodeNil() throws {
        let (box, _) = self.next()
        box.kind = .scalar
        box.node = .scalar("")
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let (box, key) = self.next()
        try self.encoder.encode(value, into: box, key: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let (box, key) = self.next()
        return FormEncoding(options: self.encoder.options, node: box, codingPath: self.codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let (box, key) = self.next()
        return FormEncoding(options: self.encoder.options, node: box, codingPath: self.codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let (box, key) = self.next()
        return FormEncoding(options: self.encoder.options, node: box, codingPath: self.codingPath + [key])
    }
}

struct SingleFormContainer: SingleValueEncodingContainer {
    let encoder: FormEncoding
    var codingPath: [any CodingKey] { self.encoder.codingPath }

    mutating func encodeNil() throws {
        self.encoder.node.kind = .scalar
        self.encoder.node.node = .absent
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        if let text = self.encoder.text(of: value) {
            self.encoder.node.kind = .scalar
            self.encoder.node.node = .scalar(text)
        } else {
            try self.encoder.encodeValue(value)
        }
    }
}
