import CNGHTTP2
import HTTPTypes
@testable import SalvoCore
import Testing

/// The HTTP/2 session without a socket: what it writes is checked frame by frame, and server
/// frames written by hand (HPACK's static table, literals) come back as events — heads, data,
/// trailers, resets, GOAWAY — with the bounds kept.
@Suite struct HTTP2SessionTests {
    /// A frame as the wire carries it (RFC 9113 §4.1).
    struct Frame: Equatable {
        var type: UInt8
        var flags: UInt8
        var stream: Int32
        var payload: [UInt8]

        var bytes: [UInt8] {
            let length = self.payload.count
            return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), self.type, self.flags,
                    UInt8(self.stream >> 24 & 0x7F), UInt8(self.stream >> 16 & 0xFF), UInt8(self.stream >> 8 & 0xFF), UInt8(self.stream & 0xFF)]
                + self.payload
        }

        static let data: UInt8 = 0, headers: UInt8 = 1, rstStream: UInt8 = 3, settings: UInt8 = 4, goAway: UInt8 = 7
        static let endStream: UInt8 = 0x1, ack: UInt8 = 0x1, endHeaders: UInt8 = 0x4

        static func parse(_ bytes: [UInt8]) -> [Frame] {
            var frames: [Frame] = []
            var index = 0
            while index + 9 <= bytes.count {
                let length = Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
                let stream = Int32(bytes[index + 5] & 0x7F) << 24 | Int32(bytes[index + 6]) << 16 | Int32(bytes[index + 7]) << 8 | Int32(bytes[index + 8])
                frames.append(Frame(type: bytes[index + 3], flags: bytes[index + 4], stream: stream,
                                    payload: Array(bytes[(index + 9)..<min(bytes.count, index + 9 + length)])))
                index += 9 + length
            }
            return frames
        }
    }

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// An HPACK integer with an `prefix`-bit prefix (RFC 7541 §5.1), first byte's high bits `mask`.
    static func integer(_ value: Int, prefix: Int, mask: UInt8 = 0) -> [UInt8] {
        let limit = (1 << prefix) - 1
        if value < limit { return [mask | UInt8(value)] }
        var bytes = [mask | UInt8(limit)]
        var rest = value - limit
        while rest >= 128 {
            bytes.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        return bytes + [UInt8(rest)]
    }

    /// A literal field without indexing, its name new (RFC 7541 §6.2.2).
    static func literal(_ name: String, _ value: String) -> [UInt8] {
        [0x00] + Self.integer(name.utf8.count, prefix: 7) + Array(name.utf8) + Self.integer(value.utf8.count, prefix: 7) + Array(value.utf8)
    }

    /// `:status: 200` from the static table (index 8), `:status: 404` (index 13).
    static let status200: [UInt8] = [0x88], status404: [UInt8] = [0x8D]

    static func records(_ fields: HTTPFields) -> FieldRecords {
        var records = FieldRecords()
        for field in fields { records.append(name: field.name.canonicalName, value: field.value) }
        return records
    }

    static func feed(_ session: HTTP2Session, _ frames: [Frame]) throws -> [HTTP2Session.Event] {
        let bytes = frames.flatMap(\.bytes)
        return try bytes.withUnsafeBytes { try session.receive($0) }
    }

    /// The server's connection preface, an empty SETTINGS frame, and its acknowledgement of
    /// ours (which puts our settings in force); their events left out.
    static func greet(_ session: HTTP2Session) throws {
        _ = try Self.feed(session, [Frame(type: Frame.settings, flags: 0, stream: 0, payload: []),
                                    Frame(type: Frame.settings, flags: Frame.ack, stream: 0, payload: [])])
    }

    func request(_ method: HTTPRequest.Method = .get, _ path: String = "/", fields: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "https", authority: "example.com", path: path, headerFields: fields)
    }

    @Test func thePrefaceSettingsAndARequestGoOut() throws {
        let session = try HTTP2Session()
        let stream = try session.submit(self.request(.get, "/items?page=2"))
        #expect(stream == 1)
        let out = session.output()
        #expect(Array(out.prefix(Self.preface.count)) == Self.preface)
        let frames = Frame.parse(Array(out.dropFirst(Self.preface.count)))
        #expect(frames.first?.type == Frame.settings)
        // ENABLE_PUSH (2) = 0 among the settings.
        let settings = frames.first?.payload ?? []
        var pushDisabled = false
        for start in stride(from: 0, to: settings.count - 5, by: 6) {
            let id = Int(settings[start]) << 8 | Int(settings[start + 1])
            let value = settings[(start + 2)..<(start + 6)].reduce(0) { $0 << 8 | Int($1) }
            if id == 2, value == 0 { pushDisabled = true }
        }
        #expect(pushDisabled, "SETTINGS_ENABLE_PUSH 0")
        let headers = try #require(frames.first { $0.type == Frame.headers })
        #expect(headers.stream == 1)
        #expect(headers.flags & Frame.endStream != 0, "no body: the HEADERS frame ends the stream")
        #expect(session.output().isEmpty, "nothing more to write")
    }

    @Test func aResponseComesBackAsEvents() throws {
        let session = try HTTP2Session()
        let stream = try session.submit(self.request())
        _ = session.output()
        let events = try Self.feed(session, [
            Frame(type: Frame.settings, flags: 0, stream: 0, payload: [0, 3, 0, 0, 0, 10]),   // MAX_CONCURRENT_STREAMS 10
            Frame(type: Frame.headers, flags: Frame.endHeaders, stream: stream, payload: Self.status200 + Self.literal("x-served-by", "test")),
            Frame(type: Frame.data, flags: 0, stream: stream, payload: Array("hel".utf8)),
            Frame(type: Frame.data, flags: Frame.endStream, stream: stream, payload: Array("lo".utf8)),
        ])
        var head = HTTPResponse(status: .ok)
        head.headerFields[HTTPField.Name("x-served-by")!] = "test"
        #expect(events == [
            .settings(maxConcurrentStreams: 10),
            .head(streamID: stream, HTTP2Session.Head(status: .ok, fields: Self.records(head.headerFields)), endStream: false),
            .data(streamID: stream, Array("hel".utf8), endStream: false),
            .data(streamID: stream, Array("lo".utf8), endStream: false),
            .data(streamID: stream, [], endStream: true),
            .streamClosed(streamID: stream, errorCode: 0),
        ])
        // Our SETTINGS ACK goes out.
        #expect(Frame.parse(session.output()).contains { $0.type == Frame.settings && $0.flags & Frame.ack != 0 })
    }

    @Test func aBodyGoesOutInDataFrames() throws {
        let session = try HTTP2Session()
        let body = Array(repeating: UInt8(ascii: "x"), count: 40_000)
        let stream = try session.submit(self.request(.post, "/upload", fields: [.contentType: "text/plain"]), body: body)
        let frames = Frame.parse(Array(session.output().dropFirst(Self.preface.count)))
        let data = frames.filter { $0.type == Frame.data && $0.stream == stream }
        #expect(data.flatMap(\.payload) == body)
        #expect((data.last?.flags ?? 0) & Frame.endStream != 0)
        #expect(((frames.first { $0.type == Frame.headers }?.flags ?? 0) & Frame.endStream) == 0)
    }

    @Test func informationalHeadsAndTrailers() throws {
        let session = try HTTP2Session()
        let stream = try session.submit(self.request())
        _ = session.output()
        try Self.greet(session)
        let events = try Self.feed(session, [
            Frame(type: Frame.headers, flags: Frame.endHeaders, stream: stream, payload: Self.literal(":status", "103") + Self.literal("link", "</a.css>")),
            Frame(type: Frame.headers, flags: Frame.endHeaders, stream: stream, payload: Self.status404),
            Frame(type: Frame.data, flags: 0, stream: stream, payload: [1]),
            Frame(type: Frame.headers, flags: Frame.endHeaders | Frame.endStream, stream: stream, payload: Self.literal("grpc-status", "0")),
        ])
        guard events.count == 5, case .informational(_, let early) = events[0], case .head(_, let final, false) = events[1],
              case .trailers(_, let trailers) = events[3], case .streamClosed(_, 0) = events[4] else {
            Issue.record("unexpected events \(events)")
            return
        }
        #expect(early.status.code == 103)
        #expect(final.status == .notFound)
        #expect(trailers[HTTPField.Name("grpc-status")!] == "0")
    }

    @Test func aHeadOverTheLimitResetsItsStreamOnly() throws {
        var settings = HTTP2Session.Settings()
        settings.maxHeaderListSize = 1024
        let session = try HTTP2Session(settings: settings)
        let big = try session.submit(self.request(.get, "/big"))
        let small = try session.submit(self.request(.get, "/small"))
        _ = session.output()
        try Self.greet(session)
        let events = try Self.feed(session, [
            Frame(type: Frame.headers, flags: Frame.endHeaders | Frame.endStream, stream: big,
                  payload: Self.status200 + Self.literal("x-huge", String(repeating: "a", count: 4000))),
            Frame(type: Frame.headers, flags: Frame.endHeaders | Frame.endStream, stream: small, payload: Self.status200),
        ])
        #expect(events.contains { if case .streamClosed(big, let code) = $0 { code != 0 } else { false } }, "\(events)")
        #expect(!events.contains { if case .head(big, _, _) = $0 { true } else { false } })
        #expect(events.contains { if case .head(small, _, true) = $0 { true } else { false } })
        #expect(Frame.parse(session.output()).contains { $0.type == Frame.rstStream && $0.stream == big })
    }

    @Test func goAwayResetsAndConnectionErrors() throws {
        let session = try HTTP2Session()
        let first = try session.submit(self.request())
        let second = try session.submit(self.request())
        _ = session.output()
        try Self.greet(session)
        // GOAWAY: last stream 1, NO_ERROR; stream 3 was never processed.
        let goAway = try Self.feed(session, [Frame(type: Frame.goAway, flags: 0, stream: 0, payload: [0, 0, 0, UInt8(first), 0, 0, 0, 0])])
        #expect(goAway.contains(.goAway(lastStreamID: first, errorCode: 0)))
        _ = second
        // The server resets stream 1 with CANCEL (8).
        let reset = try Self.feed(session, [Frame(type: Frame.rstStream, flags: 0, stream: first, payload: [0, 0, 0, 8])])
        #expect(reset.contains(.streamClosed(streamID: first, errorCode: 8)))

        // HEADERS on stream 0 is a connection error: receive throws, a GOAWAY is queued.
        let broken = try HTTP2Session()
        _ = try broken.submit(self.request())
        _ = broken.output()
        try Self.greet(broken)
        #expect(throws: TransportError.self) {
            _ = try Self.feed(broken, [Frame(type: Frame.headers, flags: Frame.endHeaders, stream: 0, payload: Self.status200)])
        }
        #expect(Frame.parse(broken.output()).contains { $0.type == Frame.goAway })
    }

    @Test func windowsOpenOnlyAsTheCallerConsumes() throws {
        var settings = HTTP2Session.Settings()
        settings.initialWindowSize = 16_384
        let session = try HTTP2Session(settings: settings)
        let stream = try session.submit(self.request())
        _ = session.output()
        try Self.greet(session)
        _ = session.output()
        let chunk = [UInt8](repeating: 7, count: 16_384)
        let events = try Self.feed(session, [
            Frame(type: Frame.headers, flags: Frame.endHeaders, stream: stream, payload: Self.status200),
            Frame(type: Frame.data, flags: 0, stream: stream, payload: chunk),
        ])
        #expect(events.contains(.data(streamID: stream, chunk, endStream: false)))
        let windowUpdate: UInt8 = 8
        #expect(!Frame.parse(session.output()).contains { $0.type == windowUpdate }, "nothing consumed: no window update")
        session.consume(16_384, of: stream)
        let updates = Frame.parse(session.output()).filter { $0.type == windowUpdate }
        #expect(updates.contains { $0.stream == stream }, "the stream's window reopens")
        // More than the window without a WINDOW_UPDATE is the server's flow-control error.
        let greedy = try HTTP2Session(settings: settings)
        let only = try greedy.submit(self.request())
        _ = greedy.output()
        try Self.greet(greedy)
        let overflow = try Self.feed(greedy, [
            Frame(type: Frame.headers, flags: Frame.endHeaders, stream: only, payload: Self.status200),
            Frame(type: Frame.data, flags: 0, stream: only, payload: chunk),
            Frame(type: Frame.data, flags: 0, stream: only, payload: [1, 2, 3]),
        ])
        #expect(overflow.contains { if case .streamClosed(only, let code) = $0 { code != 0 } else { false } } ||
                Frame.parse(greedy.output()).contains { $0.type == Frame.rstStream || $0.type == Frame.goAway })
    }

    @Test func aStreamedBodyWaitsForItsPieces() throws {
        let session = try HTTP2Session()
        let stream = try session.submit(self.request(.post, "/upload"), body: .streamed)
        var frames = Frame.parse(Array(session.output().dropFirst(Self.preface.count)))
        #expect(frames.contains { $0.type == Frame.headers && $0.flags & Frame.endStream == 0 })
        #expect(!frames.contains { $0.type == Frame.data }, "no piece yet, no DATA")
        #expect(session.drainEvents().contains(.bodyWanted(streamID: stream)), "the producer is asked for a piece")
        try Self.greet(session)
        session.provide(Array("abc".utf8), to: stream)
        frames = Frame.parse(session.output())
        #expect(frames.filter { $0.type == Frame.data }.flatMap(\.payload) == Array("abc".utf8))
        session.finishBody(of: stream)
        frames = Frame.parse(session.output())
        #expect(frames.contains { $0.type == Frame.data && $0.flags & Frame.endStream != 0 && $0.stream == stream })
    }

    @Test func aFirstFrameThatIsNotSettingsBreaksTheConnection() throws {
        let session = try HTTP2Session()
        let stream = try session.submit(self.request())
        _ = session.output()
        #expect(throws: TransportError.self) {
            _ = try Self.feed(session, [Frame(type: Frame.headers, flags: Frame.endHeaders | Frame.endStream, stream: stream, payload: Self.status200)])
        }
        #expect(Frame.parse(session.output()).contains { $0.type == Frame.goAway })
        #expect(!session.isAlive || session.output().isEmpty)
    }

    // MARK: A hostile server

    /// A session with a request out and the server's preface in.
    func started() throws -> (HTTP2Session, Int32) {
        let session = try HTTP2Session()
        let stream = try session.submit(self.request())
        _ = session.output()
        try Self.greet(session)
        _ = session.output()
        return (session, stream)
    }

    @Test func floodsOfPingsOrSettingsEndTheConnection() throws {
        let ping = Frame(type: 6, flags: 0, stream: 0, payload: [UInt8](repeating: 1, count: 8))
        let (pinged, _) = try self.started()
        // Acknowledgements pile up while nothing is written: past the bound, an error, not memory.
        #expect(throws: TransportError.self) {
            _ = try Self.feed(pinged, Array(repeating: ping, count: HTTP2Session.maxOutboundAcknowledgements + 100))
        }
        let (settled, _) = try self.started()
        #expect(throws: TransportError.self) {
            _ = try Self.feed(settled, Array(repeating: Frame(type: Frame.settings, flags: 0, stream: 0, payload: []),
                                             count: HTTP2Session.maxOutboundAcknowledgements + 100))
        }
        // One SETTINGS frame with too many entries.
        let (crowded, _) = try self.started()
        let entries = (0..<(HTTP2Session.maxSettingsEntries + 1)).flatMap { _ in [UInt8]([0, 3, 0, 0, 0, 100]) }
        #expect(throws: TransportError.self) {
            _ = try Self.feed(crowded, [Frame(type: Frame.settings, flags: 0, stream: 0, payload: entries)])
        }
    }

    @Test func endlessContinuationFramesEndTheConnection() throws {
        let (session, stream) = try self.started()
        let continuation: UInt8 = 9
        var frames = [Frame(type: Frame.headers, flags: 0, stream: stream, payload: Self.status200)]
        for index in 0..<(HTTP2Session.maxContinuations + 4) {
            frames.append(Frame(type: continuation, flags: 0, stream: stream, payload: Self.literal("x-\(index)", "v")))
        }
        #expect(throws: TransportError.self) { _ = try Self.feed(session, frames) }
    }

    @Test func anHPACKBombResetsItsStreamOnly() throws {
        let (session, stream) = try self.started()
        // One 4000-byte field into the dynamic table (literal with incremental indexing, new
        // name), then referenced again and again: 1 byte on the wire each, 4 KB in the list.
        let insert = [0x40] + Self.integer(6, prefix: 7) + Array("x-bomb".utf8) + Self.integer(4000, prefix: 7)
            + [UInt8](repeating: UInt8(ascii: "a"), count: 4000)
        let references = [UInt8](repeating: 0xBE, count: 200)   // index 62: the newest dynamic entry
        let events = try Self.feed(session, [
            Frame(type: Frame.headers, flags: Frame.endHeaders | Frame.endStream, stream: stream,
                  payload: Self.status200 + insert + references),
        ])
        #expect(events.contains { if case .streamClosed(stream, let code) = $0 { code != 0 } else { false } }, "\(events)")
        #expect(!events.contains { if case .head = $0 { true } else { false } })
        // The connection goes on: another request is answered.
        let next = try session.submit(self.request())
        _ = session.output()
        let answered = try Self.feed(session, [Frame(type: Frame.headers, flags: Frame.endHeaders | Frame.endStream, stream: next, payload: Self.status200)])
        #expect(answered.contains { if case .head(next, _, true) = $0 { true } else { false } })
    }

    @Test func aStormOfResetsAndGoAways() throws {
        let (session, _) = try self.started()
        var streams: [Int32] = []
        for _ in 0..<50 { streams.append(try session.submit(self.request())) }
        _ = session.output()
        let resets = streams.map { Frame(type: Frame.rstStream, flags: 0, stream: $0, payload: [0, 0, 0, 8]) }
        let events = try Self.feed(session, resets)
        #expect(events.filter { if case .streamClosed(_, 8) = $0 { true } else { false } }.count == 50)
        let goAways = (0..<20).map { _ in Frame(type: Frame.goAway, flags: 0, stream: 0, payload: [0, 0, 0, 0, 0, 0, 0, 0]) }
        let gone = try Self.feed(session, goAways)
        #expect(gone.contains(.goAway(lastStreamID: 0, errorCode: 0)))
        #expect(throws: TransportError.self, "no new stream after the server went away") { _ = try session.submit(self.request()) }
    }

    @Test func headListsDropConnectionSpecificFields() {
        var fields = HTTPFields()
        fields[.connection] = "keep-alive, x-hop"
        fields[HTTPField.Name("keep-alive")!] = "timeout=5"
        fields[HTTPField.Name("x-hop")!] = "1"
        fields[.te] = "trailers"
        fields[.transferEncoding] = "chunked"
        fields[HTTPField.Name("host")!] = "example.com"
        fields[.accept] = "application/json"
        let list = HTTP2HeaderBlock(self.request(.get, "/a", fields: fields)).fields
        #expect(list.map(\.name) == [":method", ":scheme", ":authority", ":path", "te", "accept"])
        #expect(list.first { $0.name == ":path" }?.value == "/a")
    }
}
