import Foundation
@testable import Salvo
import Testing

/// A file body or a file part takes its Content-Type from the file's extension unless the
/// caller names one.
@Suite struct FileBodyTypeTests {
    /// A directory of its own with one small file per name.
    static func files(_ names: [String]) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-types-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in names {
            try Data("x".utf8).write(to: directory.appendingPathComponent(name))
        }
        return directory
    }

    @Test func aFileBodysTypeComesFromItsExtension() throws {
        let expected: [(String, String)] = [
            ("a.json", "application/json"), ("a.txt", "text/plain; charset=utf-8"), ("a.html", "text/html; charset=utf-8"),
            ("a.css", "text/css"), ("a.js", "text/javascript"), ("a.png", "image/png"), ("a.jpg", "image/jpeg"),
            ("a.JPEG", "image/jpeg"), ("a.gif", "image/gif"), ("a.webp", "image/webp"), ("a.svg", "image/svg+xml"),
            ("a.pdf", "application/pdf"), ("a.zip", "application/zip"), ("a.tar.gz", "application/gzip"),
            ("a.csv", "text/csv"), ("a.xml", "application/xml"), ("a.mp4", "video/mp4"), ("a.mp3", "audio/mpeg"),
            ("a.wav", "audio/wav"), ("a.unknown", "application/octet-stream"), ("noextension", "application/octet-stream"),
        ]
        let directory = try Self.files(expected.map(\.0))
        defer { try? FileManager.default.removeItem(at: directory) }
        for (name, type) in expected {
            let body = try HTTPBody.file(path: directory.appendingPathComponent(name).path)
            #expect(body.contentType == type, "\(name)")
        }
        let named = try HTTPBody.file(path: directory.appendingPathComponent("a.json").path, contentType: "text/x-mine")
        #expect(named.contentType == "text/x-mine")
        #expect(MediaType.forFile(named: "dir.d/file") == .octetStream)
    }

    @Test func theTypeIsSentAndAPartsTypeToo() async throws {
        let directory = try Self.files(["photo.png", "data.csv"])
        defer { try? FileManager.default.removeItem(at: directory) }
        let mock = MockTransport(always: .status(.noContent))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        let photo = try HTTPBody.file(path: directory.appendingPathComponent("photo.png").path)
        _ = try await client.send(Endpoint<Empty>.put("/photo", body: photo))
        #expect(mock.requests.first?.headerFields[.contentType] == "image/png")
        let part = try MultipartPart.file(path: directory.appendingPathComponent("data.csv").path, name: "data")
        #expect(part.contentType == .csv)
    }
}
