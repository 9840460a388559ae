import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// A body that is an `AsyncStream` (as a mock or another transport builds one) ends — returns
/// nil — when the task reading it is cancelled. Every reader must take that end for the
/// cancellation it is: no download moved into place, no truncated lines or values.
@Suite struct CancelledBodyTests {
    /// Answers once, with a body fed by the test; tells the test each time the reader asks
    /// for a chunk, so that it can cancel while the reader waits for one.
    final class HeldBody: Transport {
        let feed: AsyncStream<[UInt8]>.Continuation
        private let chunks: AsyncStream<[UInt8]>
        private let asked: AsyncStream<Void>.Continuation
        private let asks: AsyncStream<Void>

        init() {
            (self.chunks, self.feed) = AsyncStream<[UInt8]>.makeStream()
            (self.asks, self.asked) = AsyncStream<Void>.makeStream()
        }

        func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(TransportError) -> TransportResponse {
            TransportResponse(head: HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain"]),
                              body: .stream(Announced(base: self.chunks, asked: self.asked)))
        }

        /// Returns once the reader has asked for chunks `count` times (call it once).
        func readerAsked(times count: Int) async {
            var asks = self.asks.makeAsyncIterator()
            for _ in 0..<count { _ = await asks.next() }
        }
    }

    /// `base`, saying each time a chunk is asked for (before waiting for it).
    struct Announced: AsyncSequence, Sendable {
        let base: AsyncStream<[UInt8]>
        let asked: AsyncStream<Void>.Continuation

        func makeAsyncIterator() -> Iterator { Iterator(base: self.base.makeAsyncIterator(), asked: self.asked) }

        struct Iterator: AsyncIteratorProtocol {
            var base: AsyncStream<[UInt8]>.Iterator
            let asked: AsyncStream<Void>.Continuation

            mutating func next() async -> [UInt8]? {
                self.asked.yield()
                return await self.base.next()
            }
        }
    }

    /// What a reading task ended with.
    struct Outcome<Value: Sendable>: Sendable {
        var value: Value
        var error: ClientError?
    }

    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("salvo-cancelled-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func aCancelledDownloadIsNotMovedIntoPlace() async throws {
        let directory = try self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("export.csv").path
        try await withWatchdog {
            let held = HeldBody()
            let client = try Client(baseURL: "http://api.test", transport: held)
            held.feed.yield(Array("first half,".utf8))
            let download = Task { () -> ClientError? in
                do throws(ClientError) {
                    _ = try await client.download(Endpoint<Empty>.get("/export"), to: path)
                    return nil
                } catch {
                    return error
                }
            }
            await held.readerAsked(times: 2)   // the first chunk written, the second awaited
            download.cancel()
            let error = await download.value
            #expect(error?.code == .cancelled, "\(String(describing: error))")
        }
        #expect(!FileManager.default.fileExists(atPath: path), "a cancelled download was moved into place")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "the partial file is removed")

        // The same body, ended by its producer: whole, so moved into place.
        try await withWatchdog {
            let held = HeldBody()
            let client = try Client(baseURL: "http://api.test", transport: held)
            held.feed.yield(Array("whole".utf8))
            held.feed.finish()
            let file = try await client.download(Endpoint<Empty>.get("/export"), to: path)
            #expect(file.size == 5)
        }
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func cancelledLinesEndWithCancellationNotATruncatedLine() async throws {
        try await withWatchdog {
            let held = HeldBody()
            let client = try Client(baseURL: "http://api.test", transport: held)
            held.feed.yield(Array("one\ntw".utf8))
            let response = try await client.stream(Endpoint<Empty>.get("/lines"))
            let reader = Task { () -> Outcome<[String]> in
                var lines: [String] = []
                do throws(ClientError) {
                    for try await line in response.lines() { lines.append(line) }
                    return Outcome(value: lines, error: nil)
                } catch {
                    return Outcome(value: lines, error: error)
                }
            }
            await held.readerAsked(times: 2)
            reader.cancel()
            let outcome = await reader.value
            #expect(outcome.value == ["one"], "the cut line \"tw\" must not come out as a line")
            #expect(outcome.error?.code == .cancelled, "\(String(describing: outcome.error))")
        }
    }

    /// The body cancelled (not the task) while its reader waits; then its producer ends it.
    @Test func linesOfACancelledBodyEndWithCancellation() async throws {
        try await withWatchdog {
            let held = HeldBody()
            let client = try Client(baseURL: "http://api.test", transport: held)
            held.feed.yield(Array("one\ntw".utf8))
            let response = try await client.stream(Endpoint<Empty>.get("/lines"))
            let reader = Task { () -> Outcome<[String]> in
                var lines: [String] = []
                do throws(ClientError) {
                    for try await line in response.lines() { lines.append(line) }
                    return Outcome(value: lines, error: nil)
                } catch {
                    return Outcome(value: lines, error: error)
                }
            }
            await held.readerAsked(times: 2)
            response.cancel()
            held.feed.finish()
            let outcome = await reader.value
            #expect(outcome.value == ["one"])
            #expect(outcome.error?.code == .cancelled, "\(String(describing: outcome.error))")
        }
    }

    @Test func cancelledJSONLinesEndWithCancellation() async throws {
        struct Index: Decodable, Sendable, Equatable { var index: Int }
        try await withWatchdog {
            let held = HeldBody()
            let client = try Client(baseURL: "http://api.test", transport: held)
            held.feed.yield(Array("{\"index\": 1}\n{\"index\": 2}".utf8))
            let response = try await client.stream(Endpoint<Empty>.get("/jsonl"))
            let reader = Task { () -> Outcome<[Int]> in
                var seen: [Int] = []
                do throws(ClientError) {
                    for try await item in response.jsonLines(of: Index.self) { seen.append(item.index) }
                    return Outcome(value: seen, error: nil)
                } catch {
                    return Outcome(value: seen, error: error)
                }
            }
            await held.readerAsked(times: 2)
            reader.cancel()
            let outcome = await reader.value
            #expect(outcome.value == [1], "the line cut by the cancel is not decoded as a whole one")
            #expect(outcome.error?.code == .cancelled, "\(String(describing: outcome.error))")
        }
    }

    @Test func aCancelledCollectedCallIsNotATruncatedValue() async throws {
        try await withWatchdog {
            let held = HeldBody()
            let client = try Client(baseURL: "http://api.test", transport: held)
            held.feed.yield(Array("the first half".utf8))
            let call = Task { await client.outcome(Endpoint<String>.get("/text")) }
            await held.readerAsked(times: 2)
            call.cancel()
            let (value, error) = await call.value
            #expect(value == nil, "a truncated body came back as the value")
            #expect(error?.code == .cancelled, "\(String(describing: error))")
        }
    }
}
