import Foundation
import Salvo

/// Where Salvo's decoder and Foundation's `JSONDecoder` may disagree, each a choice rather
/// than a bug. Everything else the differential target finds is one.
enum KnownDifferences {
    /// Salvo refused a document `JSONDecoder` decoded, and the document is not JSON at all by
    /// `JSONSerialization`'s reading: `JSONDecoder` checks the grammar of a value only when
    /// something decodes it, so a bad number in a member no property asks for (`"x": 03`)
    /// passes it, where Salvo's one-pass scan checks every byte of the document.
    static func salvoIsStricter(_ document: [UInt8]) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(document), options: [.fragmentsAllowed])) == nil
    }

    /// Salvo decoded a `JSONValue` from a document `JSONDecoder` refused, and the value is
    /// what `JSONSerialization` reads from it: `JSONDecoder` refuses some valid numbers
    /// (`0E2`, a zero with an upper-case exponent) that RFC 8259 allows.
    static func foundationDecoderRefusesValidJSON(_ document: [UInt8], salvo value: JSONValue) -> Bool {
        guard let object = try? JSONSerialization.jsonObject(with: Data(document), options: [.fragmentsAllowed]) else { return false }
        return self.matches(value, object)
    }

    static func matches(_ value: JSONValue, _ object: Any) -> Bool {
        switch value {
        case .null: return object is NSNull
        case .bool(let bool): return (object as? NSNumber)?.boolValue == bool
        case .number(let number): return (object as? NSNumber)?.doubleValue == number
        case .string(let string): return object as? String == string
        case .array(let elements):
            guard let array = object as? [Any], array.count == elements.count else { return false }
            return zip(elements, array).allSatisfy { self.matches($0, $1) }
        case .object(let members):
            guard let dictionary = object as? [String: Any], dictionary.count == members.count else { return false }
            return members.allSatisfy { key, member in dictionary[key].map { self.matches(member, $0) } ?? false }
        }
    }
}
