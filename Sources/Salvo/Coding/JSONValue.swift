import OrderedCollections

/// Any JSON value, for documents without a type of their own: what `[String: Any]` is in
/// untyped code, but `Sendable`, `Hashable` and `Codable`.
///
/// ```swift
/// let document = try await client.value(Endpoint<JSONValue>.get("/anything"))
/// let name = document["users"]?[0]?["name"]?.stringValue
///
/// let user = "Ada", age = 36
/// var body: JSONValue = ["name": user, "age": age, "tags": ["admin"], "manager": nil]
/// body["team"] = "compilers"
/// ```
///
/// An object keeps its members in order: as written in a literal, as inserted, or as they
/// came in the document Salvo decoded. Salvo writes a `JSONValue` body in that order, so the
/// same value gives the same bytes every time (see ``JSONValueConvertible`` for literals).
/// Two objects are equal when they have the same members, whatever their order, as JSON
/// means it.
public enum JSONValue: Sendable, Hashable, Codable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    /// The members in order; a key appears once.
    case object(OrderedDictionary<String, JSONValue>)

    /// An object of `members`, in the order of their keys (a `Dictionary` has none of its own):
    /// `JSONValue(["id": .number(7)])`. Name an `OrderedDictionary` (`import
    /// OrderedCollections`) with `.object(…)` to choose the order.
    public init(_ members: [String: JSONValue]) {
        self = .object(OrderedDictionary(uniqueKeysWithValues: members.sorted { $0.key < $1.key }))
    }

    /// The member named `key` of an object; nil for a missing member or a value that is not
    /// an object.
    ///
    /// Setting a member of an object adds it at the end, or replaces its value in place;
    /// setting nil removes it (set ``null`` to write a JSON null). Setting a member of
    /// ``null`` makes it an object with that one member. A value of another kind (a string,
    /// a number, a boolean, an array) is left as it is.
    public subscript(key: String) -> JSONValue? {
        get {
            if case .object(let object) = self { return object[key] }
            return nil
        }
        set {
            switch self {
            case .object(var object):
                // Left null for a moment, so the members are not copied on write.
                self = .null
                object[key] = newValue
                self = .object(object)
            case .null:
                if let newValue { self = .object([key: newValue]) }
            case .bool, .number, .string, .array:
                break
            }
        }
    }

    /// The element at `index` of an array (nil past its end).
    public subscript(index: Int) -> JSONValue? {
        if case .array(let array) = self, array.indices.contains(index) { return array[index] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    public var doubleValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// The number, when it is a whole one.
    public var intValue: Int? {
        if case .number(let number) = self, let whole = Int(exactly: number) { return whole }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let bool) = self { return bool }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let array) = self { return array }
        return nil
    }

    /// The members of an object, in order.
    public var objectValue: OrderedDictionary<String, JSONValue>? {
        if case .object(let object) = self { return object }
        return nil
    }

    public var isNull: Bool { self == .null }

    /// Objects compare by their members, not their order (RFC 8259 §4: an object is unordered).
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let left), .bool(let right)): left == right
        case (.number(let left), .number(let right)): left == right
        case (.string(let left), .string(let right)): left == right
        case (.array(let left), .array(let right)): left == right
        case (.object(let left), .object(let right)):
            left.count == right.count && left.allSatisfy { member in right[member.key] == member.value }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0)
        case .bool(let bool):
            hasher.combine(1)
            hasher.combine(bool)
        case .number(let number):
            hasher.combine(2)
            hasher.combine(number)
        case .string(let string):
            hasher.combine(3)
            hasher.combine(string)
        case .array(let array):
            hasher.combine(4)
            hasher.combine(array)
        case .object(let object):
            // Members hashed one by one and summed, so that the order does not count, as in `==`.
            hasher.combine(5)
            hasher.combine(object.count)
            var members = 0
            for (key, value) in object {
                var member = Hasher()
                member.combine(key)
                member.combine(value)
                members &+= member.finalize()
            }
            hasher.combine(members)
        }
    }

    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let bool): "\(bool)"
        case .number(let number): Int(exactly: number).map { "\($0)" } ?? "\(number)"
        case .string(let string): "\"\(string)\""
        case .array(let array): "[" + array.map(\.description).joined(separator: ", ") + "]"
        case .object(let object): "{" + object.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "}"
        }
    }
}
