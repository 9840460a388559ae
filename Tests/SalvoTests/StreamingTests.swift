import Foundation
import Synchronization
@testable import Salvo
import SalvoTestSupport
import Testing

/// Line splitting and the event-stream format, without sockets.
@Suite struct StreamParsingTests {
    func lines(_ pieces: [String], bareCR: Bool) throws -> [String] {
        var splitter = LineSplitter(acceptsBareCR: bareCR, maxLineLength: 100)
        var lines: [[UInt8]] = []
        for piece in pieces { try splitter.push(Array(piece.utf8), into: &lines) }
        if let rest = splitter.finish() { lines.append(rest) }
        return lines.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func linesEndAtLFAndCRLFAcrossPieces() async throws {
        #expect(try self.lines(["a\nb", "c\r", "\nd\r\n", "\n", "tail"], bareCR: false) == ["a", "bc", "d", "", "tail"])
        #expect(try self.lines(["a\rb\r", "\nc\n\r"], bareCR: true) == ["a", "b", "c", ""])
        #expect(throws: ClientError.self) { try self.lines([String(repeating: "x", count: 101)], bareCR: false) }
    }

    func events(_ text: String, lastEventID: String? = nil) throws -> [ServerSentEvent] {
        var parser = ServerSentEventParser(maxEventSize: 1000, lastEventID: lastEventID)
        return try self.lines([text], bareCR: true).compactMap { line throws(ClientError) in try parser.push(line: Array(line.utf8)) }
    }

    /// The examples of the event-stream section of the HTML standard, and its corner cases.
    @Test func eventStreamFormat() async throws {
        #expect(try self.events("\u{FEFF}data: YHOO\ndata: +2\ndata: 10\n\n") == [ServerSentEvent(data: "YHOO\n+2\n10")])
        let stock = try self.events(": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n")
        #expect(stock.map(\.data) == ["first event", "second event", " third event"])
        #expect(stock.map(\.id) == ["1", "", ""], "an empty id field resets the last event ID")
        #expect(try self.events("data\n\ndata\ndata\n\ndata:\n").map(\.data) == ["", "\n"], "the last event has no blank line: dropped")
        let typed = try self.events("event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nretry: 250\ndata: x\n\nretry: soon\ndata: y\n\n",
                                    lastEventID: "41")
        #expect(typed.map(\.event) == ["add", "remove", "message", "message"])
        #expect(typed.map(\.id) == ["41", "41", "41", "41"])
        #expect(typed[2].retry == .milliseconds(250))
        #expect(typed[3].retry == nil, "a retry that is not digits is ignored")
        #expect(try self.events("id: a\u{0}b\ndata: x\n\n").first?.id == nil, "an id with NUL is ignored")
        #expect(try self.events("data: {\"index\": 3}\n\n").first?.decode([String: Int].self) == ["index": 3])
    }
}

/// Streams over the engine against the API server: JSON Lines, Server-Sent Events (with
/// reconnection), raw chunks with backpressure, repeated requests.
@Suite struct StreamingTests {
    struct Index: Decodable, Sendable, Equatable { var index: Int }

    @Test func jsonLinesArriveOneByOne() async throws {
        let client = try await SharedAPI.client()
        let response = try await client.stream(Endpoint<Empty>.get("/jsonl", query: [QueryItem("n", "5"), QueryItem("ms", "20")]))
        #expect(response.headerFields[.contentType] == "application/x-ndjson")
        var seen: [Int] = []
        for try await item in response.jsonLines(of: Index.self) {
            seen.append(item.index)
        }
        #expect(seen == [0, 1, 2, 3, 4])
    }

    @Test func aTruncatedJSONLinesStreamFails() async throws {
        let client = try await SharedAPI.client()
        let response = try await client.stream(Endpoint<Empty>.get("/jsonl", query: [QueryItem("n", "2"), QueryItem("truncate", "1")]))
        var seen: [Int] = []
        do {
            for try await item in response.jsonLines(of: Index.self) { seen.append(item.index) }
            Issue.record("a stream cut short ended quietly")
        } catch {
            #expect(error.code == .transportFailed, "\(error)")
        }
        #expect(seen == [0, 1])
    }

    @Test func aLineThatDoesNotDecodeNamesItsNumber() async throws {
        let mock = MockTransport()
        mock.on(.get, "/lines", reply: .text("{\"index\": 1}\n\n{\"index\": \"two\"}\n", contentType: "application/x-ndjson"))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        var seen: [Int] = []
        do {
            for try await item in try await client.stream(Endpoint<Empty>.get("/lines")).jsonLines(of: Index.self) {
                seen.append(item.index)
            }
            Issue.record("decoded")
        } catch {
            #expect(error.code == .decodingFailed)
            #expect(error.detail?.hasPrefix("line 3:") == true, "\(error)")
            #expect(error.codingPath == "index")
        }
        #expect(seen == [1])
    }

    @Test func serverSentEventsOverTheEngine() async throws {
        let client = try await SharedAPI.client()
        let response = try await client.stream(Endpoint<Empty>.get("/sse", query: [QueryItem("n", "3")], headers: [.accept: "text/event-stream"]))
        var events: [ServerSentEvent] = []
        for try await event in response.serverSentEvents() { events.append(event) }
        #expect(events.map(\.id) == ["0", "1", "2"])
        #expect(events.allSatisfy { $0.event == "tick" })
        #expect(events[1].data == "{\"index\": 1}\nsecond line")
        #expect(events[0].retry == .milliseconds(50), "set in a block without data, reported with the next event")
        #expect(events[1].retry == nil)
    }

    /// The stream breaks after two events; the client reconnects with Last-Event-ID and the
    /// server resumes after it.
    @Test func eventStreamsReconnectWithTheLastEventID() async throws {
        let client = try await SharedAPI.client()
        let stream = client.events(Endpoint<Empty>.get("/sse", query: [QueryItem("n", "5"), QueryItem("drop", "2")]),
                                   reconnect: .automatic(maxAttempts: 3, delay: .milliseconds(20)))
        var ids: [String?] = []
        for try await event in stream { ids.append(event.id) }
        #expect(ids == ["0", "1", "2", "3", "4"])

        let once = client.events(Endpoint<Empty>.get("/sse", query: [QueryItem("n", "5"), QueryItem("drop", "2")]))
        var count = 0
        do {
            for try await _ in once { count += 1 }
            Issue.record("a broken stream without reconnection ended quietly")
        } catch {
            #expect(error.code == .transportFailed)
        }
        #expect(count == 2)
        // A refused status is thrown at once.
        await #expect(throws: ClientError.self) {
            for try await _ in client.events(Endpoint<Empty>.get("/status/404"), reconnect: .automatic()) {}
        }
    }

    /// The first reconnection finds the server down; the next one gets through.
    @Test func aReconnectionThatCannotConnectIsAnotherAttempt() async throws {
        let mock = MockTransport()
        let calls = Mutex(0)
        mock.on(.get, "/ticks") { _ in
            switch calls.withLock({ count in count += 1; return count }) {
            case 1: return .text("id: 1\ndata: one\n\n", contentType: "text/event-stream")
            case 2: return .error(TransportError(.connectionRefused))
            case 3: return .text("id: 2\ndata: two\n\n", contentType: "text/event-stream")
            default: return .text(": nothing new\n\n", contentType: "text/event-stream")
            }
        }
        let client = try Client(baseURL: "http://api.test", transport: mock)
        var ids: [String?] = []
        for try await event in client.events(Endpoint<Empty>.get("/ticks"), reconnect: .automatic(maxAttempts: 3, delay: .milliseconds(5))) {
            ids.append(event.id)
        }
        #expect(ids == ["1", "2"])
        #expect(mock.requests.count == 6, "two streams, one refused connection, three empty reconnections")
        #expect(mock.requests.last?.headerFields[HTTPField.Name("Last-Event-ID")!] == "2")
    }

    /// A refused stream whose body never ends: the call reports the refusal with the body's
    /// beginning instead of waiting for an end that never comes.
    @Test func aRefusedStreamDoesNotWaitForItsBody() async throws {
        struct Refusal: Decodable { var error: String }
        let client = try await SharedAPI.client()
        do {
            _ = try await client.stream(Endpoint<Empty>.get("/refuse-stream").failing(as: Refusal.self))
            Issue.record("a 503 was accepted")
        } catch {
            #expect(error.code == .unacceptableStatus)
            #expect(error.responseHead?.status.code == 503)
            #expect((error.decodedFailureBody as? Refusal)?.error == "busy", "\(error)")
            // The server sends 300 more bytes over 30 s; the call did not wait for them all.
            #expect((error.responseBody?.count ?? 0) < #"{"error": "busy"}"#.utf8.count + 300)
        }
    }

    /// A transport of another kind whose refusal never ends and ignores `cancel()`: the
    /// wait for its body is bounded all the same.
    @Test func aRefusedStreamFromAnyTransportIsBounded() async throws {
        final class Endless: Transport {
            /// Held, never finished: the body has no end.
            let open = Mutex<[AsyncStream<[UInt8]>.Continuation]>([])
            func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(TransportError) -> TransportResponse {
                let (chunks, more) = AsyncStream<[UInt8]>.makeStream()
                more.yield(Array(#"{"error": "busy"}"#.utf8))
                self.open.withLock { $0.append(more) }
                return TransportResponse(head: HTTPResponse(status: .serviceUnavailable), body: .stream(chunks))
            }
        }
        struct Refusal: Decodable { var error: String }
        let client = try Client(baseURL: "http://api.test", transport: Endless())
        do {
            _ = try await client.stream(Endpoint<Empty>.get("/events").failing(as: Refusal.self))
            Issue.record("a 503 was accepted")
        } catch {
            #expect(error.failureBody(as: Refusal.self)?.error == "busy", "\(error)")
        }
    }

    struct Written: Decodable { var written: Int }

    /// A body nobody reads holds the server back: the engine stops reading the socket, the
    /// kernel's buffers fill, the server's writes block.
    @Test func rawChunksHaveBackpressure() async throws {
        let client = try await SharedAPI.client()
        let size = 512 << 20
        // Keyed: another test's download on the shared server is counted apart.
        let key = QueryItem("key", "backpressure-\(UUID().uuidString)")
        let response = try await client.stream(Endpoint<Empty>.get("/download", query: [QueryItem("size", "\(size)"), key]))
        var chunks = response.body.makeAsyncIterator()
        let first = try await chunks.next()
        #expect((first?.count ?? 0) > 0)
        try await Task.sleep(for: .milliseconds(500))
        let progress = try await client.value(Endpoint<Written>.get("/download-progress", query: [key]))
        #expect(progress.written < 64 << 20, "the server wrote \(progress.written) bytes while the client read one chunk")
        response.cancel()
    }

    @Test func requestValuesRepeat() async throws {
        let mock = MockTransport()
        mock.on(.get, "/tick", reply: .text("{\"index\": 7}", contentType: "application/json"))
        let client = try Client(baseURL: "http://api.test", transport: mock)
        var once: [Index] = []
        for try await value in client.values(for: Endpoint<Index>.get("/tick")) { once.append(value) }
        #expect(once == [Index(index: 7)])
        var polled = 0
        for try await _ in client.values(for: Endpoint<Index>.get("/tick"), every: .milliseconds(10)) {
            polled += 1
            if polled == 3 { break }
        }
        #expect(polled == 3)
        #expect(mock.requests.count == 4)
        var failures = 0
        do {
            for try await _ in client.values(for: Endpoint<Index>.get("/nowhere")) {}
        } catch {
            failures += 1
        }
        #expect(failures == 1)
    }
}
