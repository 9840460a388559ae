import FuzzSupport
@testable import Salvo

/// The form encoder and the multipart encoder, each encoding a value made from the input
/// and decoded back by the small readers in this target.
///
/// Input: a mode byte, an options byte, then the pieces of the value, separated by 0xFF.
/// Invariants:
/// - a form decodes back to exactly the fields the value has, named as the array and
///   nesting styles say (`list[]`, `list[0]`, `nested.inner`…), in order, values intact;
/// - a multipart body holds its boundary only as delimiters, one per part and the closing
///   one; each part gives back its name (as quoted), file name and content bytes;
/// - the streamed multipart body announces the length the body in memory has.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFormCoding(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let options = input.byte()
    if mode & 1 == 0 {
        checkForm(FormValue(&input), options: options)
    } else {
        checkMultipart(&input, options: options)
    }
    return 0
}

func checkForm(_ value: FormValue, options: UInt8) {
    let arrays: [QueryItem.ArrayFormat] = [.brackets, .indexed, .repeated, .commaSeparated]
    let encoder = URLFormEncoder(arrayEncoding: arrays[Int(options) % 4],
                                 boolEncoding: options & 4 == 0 ? .literal : .numeric,
                                 nestingStyle: options & 8 == 0 ? .brackets : .dots)
    let text: String
    do throws(ClientError) {
        text = try encoder.encodeString(value)
    } catch {
        fuzzCheck(false, "a form value did not encode: \(error)")
        return
    }
    fuzzCheck(text.utf8.allSatisfy { PercentEncoding.isUnreserved($0) || "%+&=".utf8.contains($0) },
              "form text with raw reserved bytes: \(text)")
    let decoded = FormReader.fields(of: text)
    let expected = value.expectedFields(encoder)
    fuzzCheck(decoded.map(\.0) == expected.map(\.0) && decoded.map(\.1) == expected.map(\.1),
              "form \(text)\n decoded \(decoded)\n expected \(expected)")
}

func checkMultipart(_ input: inout FuzzInput, options: UInt8) {
    var parts: [MultipartPart] = []
    while !input.isAtEnd && parts.count < 8 {
        let name = String(decoding: input.piece(until: 0xFF), as: UTF8.self)
        let kind = input.byte()
        let filename = kind & 1 != 0 ? String(decoding: input.piece(until: 0xFF), as: UTF8.self) : nil
        let content = input.piece(until: 0xFF)
        parts.append(MultipartPart(name: name, filename: filename, contentType: kind & 2 != 0 ? .octetStream : nil,
                                   content: .bytes(content)))
    }
    // A chosen boundary may clash with content (refused), a generated one is redrawn.
    var encoder: MultipartFormEncoder
    do throws(ClientError) {
        encoder = try MultipartFormEncoder(boundary: options & 1 != 0 ? "b" : nil)
    } catch {
        fuzzCheck(false, "the boundary \"b\" was refused")
        return
    }
    let body: [UInt8]
    do throws(ClientError) {
        body = try encoder.encode(parts: parts)
    } catch {
        fuzzCheck(options & 1 != 0, "a generated boundary could not be used: \(error)")
        return
    }
    let boundary = encoder.boundary
    let streamed = try? MultipartFormEncoder(boundary: boundary).body(parts: parts)
    fuzzCheck(streamed?.length == .known(body.count), "streamed length \(String(describing: streamed?.length)), body \(body.count) bytes")

    guard let read = MultipartReader.parts(of: body, boundary: boundary) else {
        fuzzCheck(false, "the multipart body does not read back: \(String(decoding: body, as: UTF8.self).debugDescription)")
        return
    }
    fuzzCheck(read.count == parts.count, "\(parts.count) parts written, \(read.count) read")
    for (part, got) in zip(parts, read) {
        guard case .bytes(let content) = part.content else { continue }
        fuzzCheck(got.name == MultipartFormEncoder.quoted(part.name), "name \(part.name.debugDescription) read as \(got.name.debugDescription)")
        fuzzCheck(got.filename == part.filename.map(MultipartFormEncoder.quoted),
                  "file name \(String(describing: part.filename)) read as \(String(describing: got.filename))")
        fuzzCheck(got.content == content, "content of \(part.name.debugDescription) changed")
    }
}
