import Foundation
@testable import Salvo
import SalvoTestSupport
import Testing

struct Signup: Codable, Sendable {
    struct Address: Codable, Sendable { var streetName: String; var city: String }
    var fullName: String
    var age: Int
    var newsletter: Bool
    var nickname: String?
    var tags: [String]
    var address: Address
    var joined: Date
}

/// Key mapping, the form encoder and the multipart encoder, alone and over the wire against
/// Python's own parsers.
@Suite struct CodingTests {
    let signup = Signup(fullName: "Ada Lovelace", age: 36, newsletter: true, nickname: nil, tags: ["math", "poetry & science"],
                        address: .init(streetName: "St James's Sq", city: "London"), joined: Date(timeIntervalSince1970: 1_700_000_000))

    @Test func keyMappingBothWays() async throws {
        #expect(KeyMapping.snakeCase.wireName("emailAddress") == "email_address")
        #expect(KeyMapping.snakeCase.wireName("userID") == "user_id")
        #expect(KeyMapping.snakeCase.wireName("userIDToken") == "user_id_token")
        #expect(KeyMapping.snakeCase.wireName("plain") == "plain")
        #expect(KeyMapping.snakeCase.propertyName("email_address") == "emailAddress")
        #expect(KeyMapping.snakeCase.propertyName("_private_key_") == "_privateKey_")
        #expect(KeyMapping.kebabCase.wireName("customHeader") == "custom-header")
        let upper = KeyMapping.custom(toWire: { $0.uppercased() }, fromWire: { $0.lowercased() })
        let coders = Coders.json(keys: upper)
        struct Thing: Codable, Equatable { var name: String }
        let bytes = try coders.encodeJSON(Thing(name: "x"))
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"NAME":"x"}"#)
        #expect(try coders.decodeJSON(Thing.self, from: bytes) == Thing(name: "x"))
    }

    @Test func formEncoderStrategies() async throws {
        var form = URLFormEncoder(keys: .snakeCase)
        form.dateEncoding = .iso8601
        #expect(try form.encodeString(self.signup) == "full_name=Ada+Lovelace&age=36&newsletter=true&tags%5B%5D=math&tags%5B%5D=poetry+%26+science"
            + "&address%5Bstreet_name%5D=St+James%27s+Sq&address%5Bcity%5D=London&joined=2023-11-14T22%3A13%3A20Z")
        form = URLFormEncoder(arrayEncoding: .indexed, boolEncoding: .numeric, dateEncoding: .millisecondsSince1970, nestingStyle: .dots)
        let fields = try form.fields(of: self.signup)
        #expect(fields.map(\.name) == ["fullName", "age", "newsletter", "tags[0]", "tags[1]", "address.streetName", "address.city", "joined"])
        #expect(fields.first { $0.name == "newsletter" }?.value == "1")
        #expect(fields.last?.value == "1700000000000")
        // Dates past what milliseconds in an Int64 can say are written, not a crash.
        #expect(try form.fields(of: ["at": Date(timeIntervalSince1970: 1e19)]).first?.value == "1e+22")
        #expect(try form.fields(of: ["at": Date(timeIntervalSince1970: .infinity)]).first?.value == "inf")
        form.arrayEncoding = .commaSeparated
        #expect(try form.fields(of: ["ids": [1, 2, 3]]) == [QueryItem("ids", "1,2,3")])
        // A dictionary's keys are sorted, so the same value always makes the same form.
        #expect(try URLFormEncoder().encodeString(["b": "2", "a": "1", "c": "3"]) == "a=1&b=2&c=3")
        #expect(throws: ClientError.self) { try URLFormEncoder().encode([1, 2, 3]) }
        #expect(throws: ClientError.self) { try URLFormEncoder().encode("text") }
    }

    @Test func multipartLayoutAndBoundary() async throws {
        var encoder = try MultipartFormEncoder(boundary: "XyZ")
        let bytes = try encoder.encode(parts: [.text("hello", name: "greeting"),
                                               .data([1, 2, 3], name: "blob", filename: "a\"b.bin")])
        #expect(String(decoding: bytes, as: UTF8.self) == "--XyZ\r\nContent-Disposition: form-data; name=\"greeting\"\r\n\r\nhello\r\n"
            + "--XyZ\r\nContent-Disposition: form-data; name=\"blob\"; filename=\"a%22b.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n\u{1}\u{2}\u{3}\r\n"
            + "--XyZ--\r\n")
        #expect(encoder.contentType == "multipart/form-data; boundary=XyZ")
        // A chosen boundary that is in the content is refused; a generated one is replaced.
        #expect(throws: ClientError.self) { try encoder.encode(parts: [.text("a --XyZ b", name: "x")]) }
        var generated = try MultipartFormEncoder()
        let first = generated.boundary
        let clash = String(decoding: try generated.encode(parts: [.text("--\(first)", name: "x")]), as: UTF8.self)
        #expect(generated.boundary != first)
        #expect(clash.hasPrefix("--\(generated.boundary)\r\n"))
        #expect(clash.components(separatedBy: "--\(generated.boundary)").count == 3, "opening and closing only")
        for bad in ["", String(repeating: "a", count: 71), "bad\r\nboundary", "trailing "] {
            #expect(throws: ClientError.self) { try MultipartFormEncoder(boundary: bad) }
        }
        #expect(throws: ClientError.self) { try MultipartPart.file(path: "/nonexistent/file", name: "f") }
        #expect(throws: ClientError.self) { try MultipartPart.file(path: "/tmp", name: "f") }
    }

    @Test func boundaryScannerFindsItAcrossPieces() {
        var scanner = BoundaryScanner(boundary: "abc")
        let first = scanner.scan(Array("xx-".utf8))
        let second = scanner.scan(Array("-ab".utf8))
        let third = scanner.scan(Array("c".utf8))
        #expect(!first && !second && third)
    }

    struct FormEcho: Decodable { var fields: [[String]]; var contentType: String }
    struct MultipartEcho: Decodable {
        struct Part: Decodable { var name: String; var filename: String?; var contentType: String?; var size: Int; var sha256: String; var text: String }
        var parts: [Part]
    }

    /// Python's `parse_qsl` and `email` package read what Salvo's encoders write.
    @Test func formsAndMultipartRoundTripThroughPython() async throws {
        let client = try await SharedAPI.client(.init(coders: .json(keys: .snakeCase)))
        let form = try await client.value(Endpoint<FormEcho>.post("/form", body: try .form(self.signup, encoder: client.configuration.coders.formEncoder)))
        #expect(form.contentType == "application/x-www-form-urlencoded")
        #expect(form.fields.first == ["full_name", "Ada Lovelace"])
        #expect(form.fields.contains(["tags[]", "poetry & science"]))
        #expect(form.fields.contains(["address[street_name]", "St James's Sq"]))

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-multipart-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("résumé.txt")
        let content = Array((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try Data(content).write(to: file)
        let parts: [MultipartPart] = [
            .text("Ada ✓", name: "author"),
            .data([0, 255, 13, 10], name: "raw", filename: "raw.bin", contentType: .octetStream),
            try .json(["k": "v"], name: "meta"),
            try .file(path: file.path, name: "cv"),
        ]
        let echo = try await client.value(Endpoint<MultipartEcho>.post("/multipart", body: try .multipart(parts)))
        #expect(echo.parts.map(\.name) == ["author", "raw", "meta", "cv"])
        #expect(echo.parts[0].text.data(using: .isoLatin1).map { String(decoding: $0, as: UTF8.self) } == "Ada ✓")
        #expect(echo.parts[1].size == 4)
        #expect(echo.parts[2].contentType == "application/json")
        #expect(echo.parts[3].filename == "résumé.txt")
        #expect(echo.parts[3].contentType?.hasPrefix("text/plain") == true)
        #expect(echo.parts[3].size == content.count)
        #expect(echo.parts[3].sha256 == SHA256Hex.of(content))
    }

    /// A file that goes away while its part is sent fails the call with an error naming it.
    @Test func aMultipartFileThatShrinksFailsTheUpload() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-shrink-\(UUID().uuidString)").path
        try Data(count: 4 << 20).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let part = try MultipartPart.file(path: path, name: "big")
        truncate(path, 1000)
        let client = try await SharedAPI.client()
        do {
            _ = try await client.value(Endpoint<MultipartEcho>.post("/multipart", body: try .multipart([part])))
            Issue.record("a shrunken file went out")
        } catch {
            #expect(error.code == .transportFailed)
            #expect(error.transportError?.code == .requestBodyFailed)
            #expect(error.description.contains(path), "\(error)")
        }
    }
}
