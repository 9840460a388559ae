import OrderedCollections

/// A Swift value that stands for a JSON value, so that it can be written in a ``JSONValue``
/// literal as it is: strings, numbers, booleans, optionals (nil is `null`), arrays of such
/// values, and ``JSONValue`` itself.
///
/// ```swift
/// let name = "Ada", age = 36, tags = ["admin", "ops"], nickname: String? = nil, city = "London"
/// let body: JSONValue = ["name": name, "age": age, "tags": tags, "nickname": nickname,
///                        "address": ["city": city, "country": "UK"]]
/// ```
///
/// Conform a type of your own to write it in literals too.
///
/// What a literal cannot say, because Swift types a literal nested in another before it
/// reaches `JSONValue`:
/// - A nested object literal becomes a Swift `Dictionary`, which keeps no order: its members
///   are written sorted by key (the same bytes every time). Write it `as JSONValue` to keep
///   the order you wrote: `"address": ["city": city, "country": "UK"] as JSONValue`. The outer
///   literal, and every object built by inserting members, keep their order.
/// - A nested array literal of mixed kinds (`[1, "a"]`) or an empty one (`[]`) has no
///   element type: write it `as JSONValue`.
public protocol JSONValueConvertible {
    /// The value as JSON.
    var jsonValue: JSONValue { get }
}

extension JSONValue: JSONValueConvertible {
    public var jsonValue: JSONValue { self }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(value) }

    /// An array of literal constants, variables of ``JSONValueConvertible`` types, and nil for null.
    public init(arrayLiteral elements: (any JSONValueConvertible)?...) {
        self = .array(elements.map { $0?.jsonValue ?? .null })
    }

    /// An object with the members in the order written; a repeated key keeps its first
    /// place and its last value. Values are literal constants, variables of
    /// ``JSONValueConvertible`` types, and nil for null.
    public init(dictionaryLiteral elements: (String, (any JSONValueConvertible)?)...) {
        var members = OrderedDictionary<String, JSONValue>(minimumCapacity: elements.count)
        for (key, value) in elements {
            members[key] = value?.jsonValue ?? .null
        }
        self = .object(members)
    }
}

extension String: JSONValueConvertible {
    public var jsonValue: JSONValue { .string(self) }
}

extension Substring: JSONValueConvertible {
    public var jsonValue: JSONValue { .string(String(self)) }
}

extension Bool: JSONValueConvertible {
    public var jsonValue: JSONValue { .bool(self) }
}

extension Double: JSONValueConvertible {
    public var jsonValue: JSONValue { .number(self) }
}

extension Float: JSONValueConvertible {
    public var jsonValue: JSONValue { .number(Double(self)) }
}

// Integers become JSON numbers, which `JSONValue` holds as a Double: exact up to 2^53.
extension Int: JSONValueConvertible {
    public var jsonValue: JSONValue { .number(Double(self)) }
}

extension Int32: JSONValueConvertible {
    public var jsonValue: JSONValue { .number(Double(self)) }
}

extension Int64: JSONValueConvertible {
    public var jsonValue: JSONValue { .number(Double(self)) }
}

extension UInt: JSONValueConvertible {
    public var jsonValue: JSONValue { .number(Double(self)) }
}

extension UInt32: JSONValueConvertible {
    public var jsonValue: JSONValue { .number(Double(self)) }
}

extension UInt64: JSONValueConvertible {
    public var jsonValue: JSONValue { .number(Double(self)) }
}

/// nil is `null`.
extension Optional: JSONValueConvertible where Wrapped: JSONValueConvertible {
    public var jsonValue: JSONValue { self?.jsonValue ?? .null }
}

extension Array: JSONValueConvertible where Element: JSONValueConvertible {
    public var jsonValue: JSONValue { .array(self.map(\.jsonValue)) }
}

/// The members in order.
extension OrderedDictionary: JSONValueConvertible where Key == String, Value: JSONValueConvertible {
    public var jsonValue: JSONValue {
        var members = OrderedDictionary<String, JSONValue>(minimumCapacity: self.count)
        for (key, value) in self {
            members[key] = value.jsonValue
        }
        return .object(members)
    }
}

/// What an object literal nested in a ``JSONValue`` literal becomes (its value type is the
/// one such a literal has, so that its members may be of mixed kinds). A dictionary has no
/// order: its members come sorted by key, so that the same value is written the same way.
extension Dictionary: JSONValueConvertible where Key == String, Value == (any JSONValueConvertible)? {
    public var jsonValue: JSONValue {
        var members = OrderedDictionary<String, JSONValue>(minimumCapacity: self.count)
        for key in self.keys.sorted() {
            members[key] = self[key].flatMap { $0?.jsonValue } ?? .null
        }
        return .object(members)
    }
}
