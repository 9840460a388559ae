import Foundation

/// One Server-Sent Event.
public struct ServerSentEvent: Sendable, Hashable {
    /// The last event ID the stream set (it carries over to later events until changed).
    public var id: String?
    /// The event's type: `message` unless the stream named one.
    public var event: String
    /// Its data lines, joined with `\n`.
    public var data: String
    /// The reconnection delay the stream set since the previous event, if it set one.
    public var retry: Duration?

    public init(id: String? = nil, event: String = "message", data: String, retry: Duration? = nil) {
        self.id = id
        self.event = event
        self.data = data
        self.retry = retry
    }

    /// The data decoded from JSON, with Foundation's default decoding (see
    /// ``decode(_:coders:)`` for a client's key mapping and strategies).
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws(ClientError) -> T {
        try Coders(decoder: decoder).decodeJSON(T.self, from: Array(self.data.utf8))
    }

    /// The data decoded from JSON as `coders` decode bodies:
    /// `try event.decode(Note.self, coders: client.configuration.coders)`.
    public func decode<T: Decodable>(_ type: T.Type, coders: Coders) throws(ClientError) -> T {
        try coders.decodeJSON(T.self, from: Array(self.data.utf8))
    }
}

/// The event-stream format (the WHATWG HTML standard, §9.2): fields by line, events at blank
/// lines. Pure; fed one line at a time.
struct ServerSentEventParser: Sendable {
    private var data: [UInt8] = []
    private var hasData = false
    private var eventType: String?
    private var retry: Duration?
    private var firstLine = true
    let maxEventSize: Int
    /// The ID of the last event dispatched: what a reconnection sends as `Last-Event-ID`.
    private(set) var lastEventID: String?
    /// The ID the event being read will carry. The standard keeps it apart from
    /// ``lastEventID`` until a blank line dispatches the event: a stream that breaks in the
    /// middle of an event must not resume after an event the reader never got.
    private var idBuffer: String?

    init(maxEventSize: Int, lastEventID: String? = nil) {
        self.maxEventSize = maxEventSize
        self.lastEventID = lastEventID
        self.idBuffer = lastEventID
    }

    /// The event a blank `line` completes, if any.
    mutating func push(line rawLine: [UInt8]) throws(ClientError) -> ServerSentEvent? {
        var line = rawLine[...]
        if self.firstLine {
            self.firstLine = false
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line = line.dropFirst(3) }
        }
        if line.isEmpty { return self.dispatch() }
        if line.first == UInt8(ascii: ":") { return nil }
        let field: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            field = line
            value = []
        }
        switch String(decoding: field, as: UTF8.self) {
        case "data":
            if self.hasData { self.data.append(UInt8(ascii: "\n")) }
            self.data += value
            self.hasData = true
            if self.data.count > self.maxEventSize {
                throw ClientError(.bodyTooLarge, detail: "an event larger than \(self.maxEventSize) bytes")
            }
        case "event":
            self.eventType = String(decoding: value, as: UTF8.self)
        case "id":
            if !value.contains(0) { self.idBuffer = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
               let milliseconds = Int64(String(decoding: value, as: UTF8.self)) {
                self.retry = .milliseconds(milliseconds)
            }
        default:
            break
        }
        return nil
    }

    /// At the end of the stream: an event not closed by a blank line is dropped (the
    /// standard's rule), but a retry it set is kept.
    var pendingRetry: Duration? { self.retry }

    /// A new connection: half an event from the last one is dropped, its `id:` with it; the
    /// ID of the last event dispatched stays.
    mutating func startOver() {
        self.data = []
        self.hasData = false
        self.eventType = nil
        self.idBuffer = self.lastEventID
        self.firstLine = true
    }

    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            self.data = []
            self.hasData = false
            self.eventType = nil
        }
        // Set before the check for data, as the standard orders it: a block with an `id:`
        // and no data still moves the ID a reconnection resumes from.
        self.lastEventID = self.idBuffer
        guard self.hasData else { return nil }
        let event = ServerSentEvent(id: self.lastEventID, event: self.eventType.flatMap { $0.isEmpty ? nil : $0 } ?? "message",
                                    data: String(decoding: self.data, as: UTF8.self), retry: self.retry)
        self.retry = nil
        return event
    }
}

/// A body read as Server-Sent Events (see ``StreamingResponse/serverSentEvents(maxEventSize:)``).
public struct ServerSentEvents: AsyncSequence, Sendable {
    public typealias Element = ServerSentEvent
    public typealias Failure = ClientError

    let body: ResponseBody
    let maxEventSize: Int

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(lines: LineReader(body: self.body, acceptsBareCR: true, maxLineLength: self.maxEventSize),
                      parser: ServerSentEventParser(maxEventSize: self.maxEventSize))
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var lines: LineReader
        var parser: ServerSentEventParser

        public mutating func next() async throws(ClientError) -> ServerSentEvent? {
            try await self.next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ClientError) -> ServerSentEvent? {
            while let line = try await self.lines.next(isolation: actor) {
                if let event = try self.parser.push(line: line) { return event }
            }
            return nil
        }
    }
}
