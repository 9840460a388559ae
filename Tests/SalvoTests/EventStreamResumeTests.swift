import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

/// Which event a reconnected Server-Sent Events stream resumes after: the last one
/// delivered, never one whose `id:` arrived but whose blank line did not (the HTML standard,
/// "dispatch the event": the last event ID is set only when an event is dispatched).
@Suite struct EventStreamResumeTests {
    /// Answers each connection with the next of its scripts: the chunks of a body, then
    /// either its end or a failure; records the heads it was sent.
    final class ScriptedStreams: Transport {
        struct Script: Sendable {
            var status: HTTPResponse.Status = .ok
            var chunks: [String] = []
            var failure: TransportError?
        }

        let scripts: Mutex<[Script]>
        let heads = Mutex<[HTTPRequest]>([])

        init(_ scripts: [Script]) {
            self.scripts = Mutex(scripts)
        }

        func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(TransportError) -> TransportResponse {
            self.heads.withLock { $0.append(request) }
            let script = self.scripts.withLock { $0.isEmpty ? Script(status: .noContent) : $0.removeFirst() }
            let (chunks, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
            for chunk in script.chunks { continuation.yield(Array(chunk.utf8)) }
            continuation.finish(throwing: script.failure)
            return TransportResponse(head: HTTPResponse(status: script.status, headerFields: [.contentType: "text/event-stream"]),
                                     body: .stream(chunks))
        }

        var lastEventIDs: [String?] {
            self.heads.withLock { $0.map { $0.headerFields[HTTPField.Name("Last-Event-ID")!] } }
        }
    }

    func events(over transport: ScriptedStreams) async throws -> [ServerSentEvent] {
        let client = try Client(baseURL: "http://api.test", transport: transport)
        return try await withWatchdog {
            var events: [ServerSentEvent] = []
            for try await event in client.events(Endpoint<Empty>.get("/ticks"), reconnect: .automatic(maxAttempts: 1, delay: .milliseconds(1))) {
                events.append(event)
            }
            return events
        }
    }

    /// The connection breaks after event 2's `id:` line, before its blank line: the
    /// reconnection asks for what follows event 1, the last one delivered.
    @Test func aBreakInTheMiddleOfAnEventResumesAfterTheLastDeliveredOne() async throws {
        let transport = ScriptedStreams([
            .init(chunks: ["id: 1\ndata: one\n\n", "id: 2\n", "data: tw"], failure: TransportError(.remoteClosed, phase: .readBody)),
            .init(chunks: ["id: 2\ndata: two\n\n"]),
        ])
        let events = try await self.events(over: transport)
        #expect(events.map(\.data) == ["one", "two"])
        #expect(events.map(\.id) == ["1", "2"])
        #expect(transport.lastEventIDs == [nil, "1", "2"], "the second connection resumes after event 1")
    }

    /// The same when the server ends the stream cleanly in the middle of an event (the
    /// standard drops an event without its blank line, and its ID with it).
    @Test func anEndInTheMiddleOfAnEventResumesAfterTheLastDeliveredOne() async throws {
        let transport = ScriptedStreams([
            .init(chunks: ["id: 7\ndata: seven\n\nid: 8\n"]),
            .init(chunks: ["id: 8\ndata: eight\n\n"]),
        ])
        let events = try await self.events(over: transport)
        #expect(events.map(\.id) == ["7", "8"])
        #expect(transport.lastEventIDs == [nil, "7", "8"])
    }

    /// The parser on its own: the ID moves at each blank line — one without data included,
    /// as the standard orders the steps — and an `id` holding NUL is ignored.
    @Test func theLastEventIDMovesOnlyWhenAnEventIsDispatched() throws {
        var parser = ServerSentEventParser(maxEventSize: 1000, lastEventID: "0")
        func push(_ line: String) throws -> ServerSentEvent? { try parser.push(line: Array(line.utf8)) }
        _ = try push("id: 1")
        _ = try push("data: one")
        #expect(parser.lastEventID == "0", "not yet dispatched")
        #expect(try push("")?.id == "1")
        #expect(parser.lastEventID == "1")
        _ = try push("id: 2")
        parser.startOver()
        #expect(parser.lastEventID == "1", "a new connection forgets the cut event's id")
        _ = try push("data: after")
        #expect(try push("")?.id == "1", "and its events carry the last dispatched ID")
        _ = try push("id: 3")
        #expect(try push("") == nil)
        #expect(parser.lastEventID == "3", "a blank line after an id without data still sets it")
        _ = try push("id: a\u{0}b")
        _ = try push("data: x")
        #expect(try push("")?.id == "3", "an id with NUL is ignored")
    }
}
