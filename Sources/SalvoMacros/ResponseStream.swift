import Salvo

/// The elements of a streamed response, decoded one at a time as they arrive: what an endpoint
/// declared `-> ResponseStream<Element>` returns. The body is read only as fast as the loop
/// asks, so a slow consumer holds the server back instead of filling memory.
///
/// ```swift
/// @JSONLines
/// @GET("/events")
/// func events(since: Int) async throws -> ResponseStream<Event>
///
/// for try await event in try await api.events(since: 7) { print(event) }
/// ```
///
/// Framed as the endpoint's attribute says (`@JSONLines`, `@EventStream`), or by the response's
/// content type when it has none. Events of an event stream are decoded from their data, unless
/// `Element` is `ServerSentEvent` itself.
public struct ResponseStream<Element: Decodable & Sendable>: AsyncSequence, Sendable {
    public typealias Failure = ClientError

    private let source: Source
    private let coders: Coders

    private enum Source: Sendable {
        case jsonLines(JSONLines<Element>)
        case events(ServerSentEvents)
    }

    init<F>(response: StreamingResponse<F>, framing: APIScope.StreamFraming, coders: Coders) {
        switch framing {
        case .jsonLines: self.source = .jsonLines(response.jsonLines(of: Element.self, decoder: coders.decoder))
        case .serverSentEvents: self.source = .events(response.serverSentEvents())
        }
        self.coders = coders
    }

    public func makeAsyncIterator() -> AsyncIterator {
        switch self.source {
        case .jsonLines(let lines): AsyncIterator(source: .jsonLines(lines.makeAsyncIterator()), coders: self.coders)
        case .events(let events): AsyncIterator(source: .events(events.makeAsyncIterator()), coders: self.coders)
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate var source: IteratorSource
        let coders: Coders

        fileprivate enum IteratorSource {
            case jsonLines(JSONLines<Element>.AsyncIterator)
            case events(ServerSentEvents.AsyncIterator)
        }

        public mutating func next() async throws(ClientError) -> Element? {
            try await self.next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ClientError) -> Element? {
            switch self.source {
            case .jsonLines(var lines):
                let element = try await lines.next(isolation: actor)
                self.source = .jsonLines(lines)
                return element
            case .events(var events):
                let event = try await events.next(isolation: actor)
                self.source = .events(events)
                guard let event else { return nil }
                if let same = event as? Element { return same }
                return try event.decode(Element.self, coders: self.coders)
            }
        }
    }
}
