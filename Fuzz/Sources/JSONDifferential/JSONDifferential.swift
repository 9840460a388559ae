import Foundation
import FuzzSupport
import Salvo

/// Salvo's JSON decoder (a one-pass tape, then `Decoder` over it) against Foundation's
/// `JSONDecoder` and `JSONSerialization` on the same bytes.
///
/// Input: a shape byte, then the document.
/// Invariants:
/// - no crash, hang or stack overflow, whatever the document (a bad one is a thrown
///   `ClientError` `.decodingFailed`);
/// - decoded into each shape (a struct of optionals, nested structs, arrays, dictionaries,
///   integers of several widths, strings, doubles, `JSONValue`), Salvo and `JSONDecoder`
///   both fail, or both succeed with equal values — save the differences listed in
///   ``KnownDifferences``;
/// - Salvo accepts a document as `JSONValue` exactly when `JSONSerialization` accepts it, or
///   else exactly when `JSONDecoder` does.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONDifferential(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let shape = input.byte()
    let document = input.rest()
    switch shape % 10 {
    case 0: compare(JSONValue.self, document)
    case 1: compare(Record.self, document)
    case 2: compare([Record].self, document)
    case 3: compare([String: Int].self, document)
    case 4: compare([Int8].self, document)
    case 5: compare([UInt64].self, document)
    case 6: compare([Double].self, document)
    case 7: compare([String].self, document)
    case 8: compare([String: [String: Bool?]].self, document)
    default: compare(Outer.self, document)
    }
    if shape % 10 == 0 {
        compareWithSerialization(document)
    }
    return 0
}

struct Record: Codable, Equatable {
    var id: Int?
    var name: String?
    var score: Double?
    var tags: [String]?
    var flag: Bool?
    var small: Int16?
    var big: UInt?
    var float: Float?
}

struct Outer: Codable, Equatable {
    var record: Record
    var records: [Record]
    var values: [JSONValue]?
    var matrix: [[Int32]]?
}

func compare<Value: Decodable & Equatable>(_ type: Value.Type, _ document: [UInt8]) {
    let salvo = Result { () throws(ClientError) -> Value in try Coders().decodeJSON(Value.self, from: document) }
    let foundation = Result { try JSONDecoder().decode(Value.self, from: Data(document)) }
    let shown = String(decoding: document.prefix(300), as: UTF8.self).debugDescription
    switch (salvo, foundation) {
    case (.success(let a), .success(let b)):
        fuzzCheck(a == b,
                  "\(Value.self) from \(shown): Salvo \(a), Foundation \(b)")
    case (.failure(let error), .failure):
        fuzzCheck(error.code == .decodingFailed, "Salvo failed with \(error.code)")
    case (.success(let a), .failure(let error)):
        fuzzCheck((a as? JSONValue).map { KnownDifferences.foundationDecoderRefusesValidJSON(document, salvo: $0) } ?? false,
                  "\(Value.self) from \(shown): Salvo \(a), Foundation threw \(error)")
    case (.failure(let error), .success(let b)):
        fuzzCheck(KnownDifferences.salvoIsStricter(document),
                  "\(Value.self) from \(shown): Salvo threw \(error), Foundation \(b)")
    }
}

/// Salvo follows `JSONDecoder`; where `JSONSerialization` disagrees with `JSONDecoder` itself
/// (it takes `5e-325` as 0 and `1e400` as infinity, which `JSONDecoder` refuses), Salvo must
/// side with `JSONDecoder`.
func compareWithSerialization(_ document: [UInt8]) {
    let salvo = (try? Coders().decodeJSON(JSONValue.self, from: document)) != nil
    let serialization = (try? JSONSerialization.jsonObject(with: Data(document), options: [.fragmentsAllowed])) != nil
    guard salvo != serialization else { return }
    let decoder = (try? JSONDecoder().decode(JSONValue.self, from: Data(document))) != nil
    fuzzCheck(salvo == decoder,
              "\(String(decoding: document.prefix(300), as: UTF8.self).debugDescription): Salvo accepts \(salvo), JSONSerialization \(serialization)")
}
