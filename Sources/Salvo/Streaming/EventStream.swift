/// When a Server-Sent Events stream that ended or broke is opened again.
public struct EventStreamReconnect: Sendable, Hashable {
    /// Reconnections in a row that brought no event before giving up.
    public var maxAttempts: Int
    /// The wait before reconnecting, until the stream sets its own with `retry:`.
    public var delay: Duration

    public init(maxAttempts: Int, delay: Duration = .seconds(3)) {
        self.maxAttempts = maxAttempts
        self.delay = delay
    }

    /// The longest wait a stream's `retry:` can ask for; a larger one is taken as this.
    public static let longestDelay = Duration.seconds(3600)

    /// One connection: its end is the sequence's end, its failure the sequence's failure.
    public static let never = EventStreamReconnect(maxAttempts: 0)

    /// Reconnect with `Last-Event-ID` after an end or a network failure, as a browser's
    /// `EventSource` does — up to `maxAttempts` times in a row without an event.
    public static func automatic(maxAttempts: Int = 5, delay: Duration = .seconds(3)) -> EventStreamReconnect {
        EventStreamReconnect(maxAttempts: maxAttempts, delay: delay)
    }
}

extension Client {
    /// The Server-Sent Events of `request`, reconnecting as `reconnect` says.
    ///
    /// ```swift
    /// for try await event in client.events(Endpoint<Empty>.get("/notifications"), reconnect: .automatic()) {
    ///     let note = try event.decode(Notification.self)
    /// }
    /// ```
    ///
    /// The request goes with `Accept: text/event-stream` unless it names its own, and after a
    /// reconnection with `Last-Event-ID` set to the ID of the last event delivered (or to
    /// `lastEventID` at first) — an `id:` of an event the break cut off does not count. A 204 ends the sequence for good (the server's way to say
    /// "stop"); any other refused status, or a failure when no reconnection is left, throws.
    /// The wait between attempts is the stream's `retry:`, else the policy's delay. Give the
    /// call no total timeout; cancel the task or leave the loop to stop.
    ///
    /// An event stream is quiet by nature, so it has no bound on the server's silence unless
    /// `options` gives one (`readTimeout`): as with a browser's `EventSource`, a connection that
    /// died without a word is noticed only by TCP. With a server that sends heartbeats (a
    /// comment line every 15 s, say), set a read timeout a little longer than their period and
    /// `reconnect: .automatic()`: a dead connection then ends with `.readTimeout` and the
    /// stream opens again, from its last event ID.
    public func events<R: Request>(_ request: R, reconnect: EventStreamReconnect = .never, lastEventID: String? = nil,
                                   options: CallOptions = CallOptions()) -> EventStream {
        EventStream(
            prepare: { () throws(ClientError) in
                var (head, body) = try self.prepare(request)
                if head.headerFields[.accept] == nil { head.headerFields[.accept] = MediaType.eventStream.rawValue }
                return (head, body)
            },
            open: { (head, body) async throws(ClientError) in
                var options = options
                if options.readTimeout == nil { options.readTimeout = .zero }   // quiet by nature: no silence bound
                return try await self.stream(request, head: head, body: body, options: options).erased
            },
            reconnect: reconnect, lastEventID: lastEventID)
    }
}

extension StreamingResponse {
    var erased: StreamingResponse<any Sendable> {
        StreamingResponse<any Sendable>(request: self.request, head: self.head, body: self.body, urlString: self.urlString,
                                        coders: self.coders, maxBodySize: self.maxBodySize, details: self.details)
    }
}

/// Server-Sent Events across reconnections (see ``Client/events(_:reconnect:lastEventID:options:)``).
public struct EventStream: AsyncSequence, Sendable {
    public typealias Element = ServerSentEvent
    public typealias Failure = ClientError

    let prepare: @Sendable () throws(ClientError) -> (HTTPRequest, HTTPBody?)
    let open: @Sendable (HTTPRequest, HTTPBody?) async throws(ClientError) -> StreamingResponse<any Sendable>
    let reconnect: EventStreamReconnect
    let lastEventID: String?

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(stream: self, lastEventID: self.lastEventID, delay: self.reconnect.delay)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: EventStream
        private var prepared: (HTTPRequest, HTTPBody?)?
        private var lines: LineReader?
        private var parser: ServerSentEventParser
        private var failedAttempts = 0
        private var delay: Duration
        private var finished = false
        private var connections = 0

        init(stream: EventStream, lastEventID: String?, delay: Duration) {
            self.stream = stream
            self.parser = ServerSentEventParser(maxEventSize: 1 << 20, lastEventID: lastEventID)
            self.delay = delay
        }

        public mutating func next() async throws(ClientError) -> ServerSentEvent? {
            try await self.next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ClientError) -> ServerSentEvent? {
            while !self.finished {
                do {
                    // A reconnection that cannot connect (the server restarting) is one more
                    // failed attempt, not the end.
                    if self.lines == nil {
                        guard try await self.connect(isolation: actor) else { return nil }
                    }
                    while let line = try await self.lines?.next(isolation: actor) {
                        if let event = try self.parser.push(line: line) {
                            self.failedAttempts = 0
                            if let retry = event.retry { self.delay = Swift.min(retry, EventStreamReconnect.longestDelay) }
                            return event
                        }
                    }
                    // The server ended the stream: reconnect, as a browser would.
                    if let retry = self.parser.pendingRetry { self.delay = Swift.min(retry, EventStreamReconnect.longestDelay) }
                    self.lines = nil
                    try await self.pauseBeforeReconnecting(after: nil, isolation: actor)
                } catch where error.code == .transportFailed {
                    self.lines = nil
                    try await self.pauseBeforeReconnecting(after: error, isolation: actor)
                }
            }
            return nil
        }

        /// Opens the stream (again); false when the server said to stop (204).
        private mutating func connect(isolation actor: isolated (any Actor)?) async throws(ClientError) -> Bool {
            if self.prepared == nil { self.prepared = try self.stream.prepare() }
            guard let prepared = self.prepared else { return false }
            var head = prepared.0
            let body = prepared.1
            if self.connections > 0 {
                if let body, !body.isReplayable {
                    throw ClientError(.invalidRequest, detail: "the event stream's request body cannot be sent again to reconnect")
                }
            }
            if let id = self.parser.lastEventID, !id.isEmpty { head.headerFields[.lastEventID] = id }
            self.connections += 1
            let response = try await self.stream.open(head, body)
            if response.status == .noContent {
                response.cancel()
                self.finished = true
                return false
            }
            self.lines = LineReader(body: response.body, acceptsBareCR: true, maxLineLength: 1 << 20)
            self.parser.startOver()
            return true
        }

        /// Waits before the next attempt, or ends the sequence: with `error` when there was
        /// one, quietly when the stream simply ended and no reconnection is left.
        private mutating func pauseBeforeReconnecting(after error: ClientError?, isolation actor: isolated (any Actor)?) async throws(ClientError) {
            guard self.failedAttempts < self.stream.reconnect.maxAttempts else {
                self.finished = true
                if let error { throw error }
                return
            }
            self.failedAttempts += 1
            do {
                try await Task.sleep(for: self.delay)
            } catch {
                self.finished = true
                throw ClientError(.cancelled, detail: "cancelled while waiting to reconnect")
            }
        }
    }
}

extension HTTPField.Name {
    /// `Last-Event-ID`, sent when an event stream reconnects.
    static let lastEventID = HTTPField.Name("Last-Event-ID")!
}
