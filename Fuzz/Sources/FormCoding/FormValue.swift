import FuzzSupport
import Salvo

/// A value with a field of each kind a form writes, filled from the input.
struct FormValue: Encodable {
    struct Nested: Encodable {
        var inner: String
        var count: Int
    }

    var text: String
    var number: Int
    var flag: Bool
    var list: [String]
    var nested: Nested?
    var records: [Nested]
    var map: [String: String]
    var ratio: Double

    init(_ input: inout FuzzInput) {
        func text() -> String { String(decoding: input.piece(until: 0xFF), as: UTF8.self) }
        self.text = text()
        self.number = Int(Int16(bitPattern: UInt16(input.byte()) << 8 | UInt16(input.byte())))
        self.flag = input.bool()
        self.list = (0..<input.int(below: 4)).map { _ in text() }
        self.nested = input.bool() ? Nested(inner: text(), count: input.int(below: 1000)) : nil
        self.records = (0..<input.int(below: 3)).map { _ in Nested(inner: text(), count: input.int(below: 10)) }
        var map: [String: String] = [:]
        for _ in 0..<input.int(below: 3) { map[text()] = text() }
        self.map = map
        self.ratio = Double(input.int(below: 1 << 16)) / 64
    }

    /// The fields the form must hold, worked out from the encoder's documented rules.
    func expectedFields(_ encoder: URLFormEncoder) -> [(String, String)] {
        func child(_ name: String, _ key: String) -> String {
            switch encoder.nestingStyle {
            case .brackets: "\(name)[\(key)]"
            case .dots: "\(name).\(key)"
            }
        }
        var fields: [(String, String)] = [("text", self.text), ("number", "\(self.number)")]
        fields.append(("flag", encoder.boolEncoding == .literal ? "\(self.flag)" : (self.flag ? "1" : "0")))
        func list(_ name: String, _ elements: [[(String, String)]], scalars: [String]?) {
            if elements.isEmpty {
                switch encoder.arrayEncoding {
                case .brackets, .indexed: fields.append((name + "[]", ""))
                case .repeated, .commaSeparated: fields.append((name, ""))
                }
                return
            }
            switch encoder.arrayEncoding {
            case .commaSeparated where scalars != nil:
                fields.append((name, scalars!.joined(separator: ",")))
            case .repeated:
                for element in elements { fields += element.map { (name + $0.0, $0.1) } }
            case .brackets:
                for element in elements { fields += element.map { (name + "[]" + $0.0, $0.1) } }
            case .indexed, .commaSeparated:
                for (index, element) in elements.enumerated() { fields += element.map { ("\(name)[\(index)]" + $0.0, $0.1) } }
            }
        }
        list("list", self.list.map { [("", $0)] }, scalars: self.list)
        if let nested = self.nested {
            fields += [(child("nested", "inner"), nested.inner), (child("nested", "count"), "\(nested.count)")]
        }
        // Elements' own names are appended to the list's: a leading separator for dots.
        let separator = encoder.nestingStyle == .brackets ? ("[", "]") : (".", "")
        list("records", self.records.map { [("\(separator.0)inner\(separator.1)", $0.inner), ("\(separator.0)count\(separator.1)", "\($0.count)")] },
             scalars: nil)
        for key in self.map.keys.sorted() { fields.append((child("map", key), self.map[key]!)) }
        fields.append(("ratio", "\(self.ratio)"))
        return fields
    }
}
