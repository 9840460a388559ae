import Foundation
import Observation
import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// Uploads and downloads with progress, and the client's observable activity.
@Suite struct TransferTests {
    struct Received: Decodable, Sendable { var size: Int; var sha256: String }

    /// Progress reports, kept for checking.
    final class Reports: Sendable {
        let all = Mutex<[TransferProgress]>([])
        var handler: ProgressHandler { { progress in self.all.withLock { $0.append(progress) } } }
        var list: [TransferProgress] { self.all.withLock { $0 } }
    }

    struct UploadFile: UploadRequest {
        typealias SuccessResponseBody = Received
        var method: HTTPRequest.Method { .put }
        var path: String { "/upload" }
        var file: String
        func encodeUploadData() throws(ClientError) -> HTTPBody {
            do { return try .file(path: self.file, contentType: "application/octet-stream") } catch { throw .transport(error) }
        }
    }

    func scratchDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-transfer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func uploadsReportProgressAndArriveWhole() async throws {
        let client = try await SharedAPI.client()
        let bytes = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let reports = Reports()
        let response = try await client.upload(Endpoint<Received>.put("/upload"), body: .binary(bytes), timeout: .seconds(30),
                                               progress: reports.handler)
        let received = try response.decodeSuccessBody()
        #expect(received.size == bytes.count)
        #expect(received.sha256 == SHA256Hex.of(bytes))
        let list = reports.list
        #expect(list.count > 10)
        #expect(list.first?.completedBytes == 0)
        #expect(list.last == TransferProgress(completedBytes: bytes.count, totalBytes: bytes.count))
        #expect(zip(list, list.dropFirst()).allSatisfy { $0.completedBytes <= $1.completedBytes })

        let directory = try self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("upload.bin").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let fileReports = Reports()
        let fromFile = try await client.upload(UploadFile(file: path), progress: fileReports.handler)
        #expect(try fromFile.decodeSuccessBody().sha256 == SHA256Hex.of(bytes))
        #expect(fileReports.list.last?.fractionCompleted == 1)
        // An upload's own timeout.
        let slow = try await client.upload(Endpoint<Received>.put("/upload"), body: .binary([1, 2, 3]), timeout: .seconds(5))
        #expect(slow.status == .ok)
    }

    @Test func downloadsLandWholeOrNotAtAll() async throws {
        let client = try await SharedAPI.client()
        let directory = try self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("data.bin").path
        let reports = Reports()
        let file = try await client.download(Endpoint<Empty>.get("/download", query: [QueryItem("size", "5000000")]),
                                             to: destination, progress: reports.handler)
        #expect(file.size == 5_000_000)
        #expect(file.path == destination)
        let saved = try [UInt8](Data(contentsOf: URL(fileURLWithPath: destination)))
        #expect(saved.count == 5_000_000)
        #expect(saved.enumerated().allSatisfy { $0.element == UInt8($0.offset % 251) })
        #expect(reports.list.last == TransferProgress(completedBytes: 5_000_000, totalBytes: 5_000_000))

        // Cut short: the previous file stays as it was, nothing half-written is left.
        do {
            _ = try await client.download(Endpoint<Empty>.get("/download", query: [QueryItem("size", "3000000"), QueryItem("truncate", "100000")]),
                                          to: destination)
            Issue.record("a truncated download succeeded")
        } catch {
            #expect(error.code == .transportFailed, "\(error)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)).count == 5_000_000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["data.bin"])

        // A refused status: the error carries the failure body; no file.
        let missing = directory.appendingPathComponent("missing.json").path
        do {
            _ = try await client.download(Endpoint<Empty>.get("/users/99").failing(as: Problem.self), to: missing)
            Issue.record("a 404 was saved")
        } catch {
            #expect(error.status == .notFound)
            #expect(error.failureBody(as: Problem.self) == Problem(error: "no user 99"))
        }
        #expect(!FileManager.default.fileExists(atPath: missing))
        // A destination that cannot be written.
        do {
            _ = try await client.download(Endpoint<Empty>.get("/text"), to: "/nonexistent-directory/x.txt")
            Issue.record("wrote into a missing directory")
        } catch {
            #expect(error.code == .fileFailed)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["data.bin"])

        // A transport that ends a body short of its Content-Length without saying so.
        let mock = MockTransport(always: MockTransport.Reply(headerFields: [.contentLength: "10"], body: [1, 2, 3, 4, 5]))
        let short = try Client(baseURL: "http://api.test", transport: mock)
        do {
            _ = try await short.download(Endpoint<Empty>.get("/file"), to: directory.appendingPathComponent("short.bin").path)
            Issue.record("a short body was saved")
        } catch {
            #expect(error.transportError?.code == .truncatedBody, "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["data.bin"])
    }

    @Test func cancellingADownloadLeavesNothing() async throws {
        let client = try await SharedAPI.client()
        let directory = try self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("big.bin").path
        let started = Reports()
        let task = Task {
            try await client.download(Endpoint<Empty>.get("/download", query: [QueryItem("size", "\(1 << 30)")]), to: destination,
                                      progress: started.handler)
        }
        while (started.list.last?.completedBytes ?? 0) < 1 << 20 { try await Task.sleep(for: .milliseconds(10)) }
        task.cancel()
        let result = await task.result
        #expect(throws: ClientError.self) { try result.get() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func activityIsObservable() async throws {
        let activity = ClientActivity()
        let client = try Client(baseURL: try await SharedAPI.server.get().baseURL, configuration: .init(activity: activity))
        let changed = Mutex(0)
        withObservationTracking { _ = activity.inFlightCount } onChange: { changed.withLock { $0 += 1 } }
        let calls = (0..<3).map { _ in
            Task { try await client.value(Endpoint<Empty>.get("/slow", query: [QueryItem("ms", "2000")])) }
        }
        let deadline = ContinuousClock.now + .seconds(5)
        while activity.inFlightCount < 3 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(activity.inFlightCount == 3)
        #expect(activity.isBusy)
        #expect(activity.inFlight.allSatisfy { $0.path == "/slow?ms=2000" && $0.method == .get })
        for call in calls { _ = try await call.value }
        #expect(activity.inFlightCount == 0)
        #expect(activity.completedCount == 3)
        // Observation calls onChange at the first change; calls that start on other threads
        // at the same moment may each reach it before the tracking ends.
        #expect((1...3).contains(changed.withLock { $0 }), "onChange fires for the tracking")
        _ = await client.outcome(Endpoint<Empty>.get("/slow", query: [QueryItem("ms", "2000")]), options: .init(timeout: .milliseconds(50)))
        #expect(activity.failedCount == 1)
    }
}
