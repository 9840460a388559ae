/// How the names of a Swift type's properties become the names on the wire, and back:
/// applied to JSON bodies, JSON responses, forms and query items made from values. The keys
/// of a `[String: …]` dictionary are data, not property names: no mapping touches them.
///
/// ```swift
/// let client = try Client(baseURL: "https://api.example.com", coders: .json(keys: .snakeCase))
/// // struct Profile { var emailAddress: String }  <->  {"email_address": "…"}
/// ```
public struct KeyMapping: Sendable {
    let toWire: (@Sendable (String) -> String)?
    let fromWire: (@Sendable (String) -> String)?

    /// Names as they are.
    public static let useDefaultKeys = KeyMapping(toWire: nil, fromWire: nil)

    /// `emailAddress` on the Swift side, `email_address` on the wire.
    public static let snakeCase = KeyMapping(
        toWire: { KeyMapping.separated($0, by: "_") },
        fromWire: { KeyMapping.camelCased($0, separator: "_") })

    /// `emailAddress` on the Swift side, `email-address` on the wire.
    public static let kebabCase = KeyMapping(
        toWire: { KeyMapping.separated($0, by: "-") },
        fromWire: { KeyMapping.camelCased($0, separator: "-") })

    /// Your own mapping: `toWire` names a property on the wire; `fromWire` gives the
    /// property's name for a name read from the wire (they should undo each other).
    public static func custom(toWire: @escaping @Sendable (String) -> String,
                              fromWire: @escaping @Sendable (String) -> String) -> KeyMapping {
        KeyMapping(toWire: toWire, fromWire: fromWire)
    }

    /// `name` as it goes on the wire.
    public func wireName(_ name: String) -> String { self.toWire?(name) ?? name }

    /// The property name for a name read from the wire.
    public func propertyName(_ wireName: String) -> String { self.fromWire?(wireName) ?? wireName }

    var isIdentity: Bool { self.toWire == nil && self.fromWire == nil }

    /// `userID2Name` → `user_id2_name` (a run of capitals is one word; its last capital starts
    /// the next word when a lowercase letter follows).
    static func separated(_ name: String, by separator: Character) -> String {
        let characters = Array(name)
        guard characters.contains(where: \.isUppercase) else { return name }
        var result = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) {
                    if result.last != separator { result.append(separator) }
                }
            }
            result += character.lowercased()
        }
        return result
    }

    /// `email_address` → `emailAddress`; leading and trailing separators are kept.
    static func camelCased(_ name: String, separator: Character) -> String {
        guard name.contains(separator) else { return name }
        let leading = name.prefix { $0 == separator }
        let trailing = name.reversed().prefix { $0 == separator }
        let core = name.dropFirst(leading.count).dropLast(trailing.count)
        guard !core.isEmpty else { return name }
        let words = core.split(separator: separator, omittingEmptySubsequences: true)
        var result = String(leading)
        for (index, word) in words.enumerated() {
            result += index == 0 ? word.lowercased() : word.prefix(1).uppercased() + word.dropFirst().lowercased()
        }
        return result + String(trailing)
    }
}

/// A coding key with any name, for walking JSON by key path and for remapped keys.
struct AnyCodingKey: CodingKey, Sendable {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }

    init(_ name: String) {
        self.init(stringValue: name)
    }
}
