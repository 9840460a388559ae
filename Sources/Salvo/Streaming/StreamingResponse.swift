import Synchronization
import Foundation

/// A response whose body is still arriving: the head now, the body as you read it — raw
/// chunks, lines, JSON Lines or Server-Sent Events — with backpressure through to the socket.
///
/// ```swift
/// let response = try await client.stream(Endpoint<Empty>.get("/logs", headers: [.accept: "application/x-ndjson"]))
/// for try await entry in response.jsonLines(of: LogEntry.self) {
///     print(entry.message)
/// }
/// ```
///
/// Reading slowly slows the server down: the engine stops reading the socket while enough
/// waits unread. Stopping early (leaving the loop, ``cancel()``) closes the connection.
public struct StreamingResponse<Failure: Sendable>: Sendable {
    /// The request as sent.
    public let request: HTTPRequest
    public let head: HTTPResponse
    /// The body, chunk by chunk (read once).
    public let body: ResponseBody
    /// The URL the response came from (after redirects), as text.
    public let urlString: String
    let coders: Coders
    let maxBodySize: Int
    let details: ExchangeDetails

    /// The URL the response came from (after redirects).
    public var url: URL { FoundationURL.make(self.urlString) }
    public var status: HTTPResponse.Status { self.head.status }
    public var headerFields: HTTPFields { self.head.headerFields }
    /// Each redirect followed: the request sent and the 3xx that answered it.
    public var redirects: [RedirectHop] { self.details.redirects }
    /// The HTTP version the response came in.
    public var version: HTTPVersion { self.details.version }
    /// Interim (1xx) responses before this one.
    public var interimResponses: [HTTPResponse] { self.details.interimResponses }
    /// The content coding the transport decodes the body from, if it does.
    public var decodedContentEncoding: String? { self.details.decodedContentEncoding }
    /// The metrics: of the whole exchange once the body has been read, up to the head before.
    public var metrics: TransportMetrics { self.body.metrics ?? self.details.metrics }

    /// The body's lines (LF or CRLF ends one), as UTF-8 text. A line longer than
    /// `maxLineLength` bytes (its ending aside) fails with `.bodyTooLarge`, after the lines
    /// before it, however the body arrives in chunks.
    public func lines(maxLineLength: Int = 1 << 20) -> TextLines {
        TextLines(body: self.body, maxLineLength: maxLineLength)
    }

    /// The body as JSON Lines (`application/x-ndjson`): each line decoded as `type` when it
    /// arrives; blank lines are skipped. A line that does not decode fails with
    /// `.decodingFailed` naming its number; a body cut short, with the transport's error.
    public func jsonLines<T: Decodable & Sendable>(of type: T.Type, decoder: JSONDecoder? = nil,
                                                   maxLineLength: Int = 1 << 20) -> JSONLines<T> {
        JSONLines(lines: self.lines(maxLineLength: maxLineLength), coders: decoder.map { Coders(decoder: $0) } ?? self.coders)
    }

    /// The body as Server-Sent Events (`text/event-stream`). To reconnect with
    /// `Last-Event-ID` when the stream ends, use ``Client/events(_:reconnect:lastEventID:options:)``.
    public func serverSentEvents(maxEventSize: Int = 1 << 20) -> ServerSentEvents {
        ServerSentEvents(body: self.body, maxEventSize: maxEventSize)
    }

    /// The rest of the body, up to the call's body size limit.
    public func collect() async throws(ClientError) -> [UInt8] {
        do {
            return try await self.body.collect(upTo: self.maxBodySize)
        } catch {
            var failure = ClientError.transport(error)
            failure.responseHead = self.head
            throw failure
        }
    }

    /// Stops reading: the request is cancelled and its connection closed.
    public func cancel() {
        self.body.cancel()
    }
}

extension Client {
    /// Sends `request` and returns as soon as the response head has arrived; read the body
    /// from the result as it comes.
    ///
    /// The validators run on the head (a `ContentTypeValidator` checks the type the head
    /// announces). A response they refuse is read — up to the body size limit — and thrown as
    /// for `value(_:options:)`, with its failure body decoded when it decodes.
    ///
    /// For a stream that should last, give the call no total `timeout` (a total timeout also
    /// covers reading the body).
    public func stream<R: Request>(_ request: R, options: CallOptions = CallOptions()) async throws(ClientError)
        -> StreamingResponse<R.FailureResponseBody> {
        let (head, body) = try self.prepare(request)
        return try await self.stream(request, head: head, body: body, options: options)
    }

    /// The streaming exchange for a prepared head.
    func stream<R: Request>(_ request: R, head: HTTPRequest, body: HTTPBody?,
                            options: CallOptions) async throws(ClientError) -> StreamingResponse<R.FailureResponseBody> {
        let options = options.withTimeout(of: request.metadata)
        // Through the chain (straight to the transport without middleware): a stream is not
        // a hot path worth a second route.
        let routed = try await self.route(head, body: body, operationName: request.operationName, metadata: request.metadata,
                                          options: options, streaming: true)
        let streamed = routed.exchange
        let limit = options.maxBodySize ?? self.configuration.maxBodySize
        let response = StreamingResponse<R.FailureResponseBody>(request: routed.request, head: streamed.head, body: streamed.body,
                                                                urlString: routed.url, coders: self.configuration.coders,
                                                                maxBodySize: limit, details: ExchangeDetails(streamed))
        if var error = ResponseValidation.refusal(of: streamed.head, body: [], for: routed.request, by: self.validators(for: options)) {
            if error.code == .unacceptableStatus {
                // So that the caller sees what the server said; bounded, as a stream has
                // no total timeout and a refusal's body may never end.
                let bytes = await Self.beginning(of: streamed.body, upTo: min(limit, Self.refusalBodyLimit), within: Self.refusalBodyWait)
                error.responseBody = bytes
                error.decodedFailureBody = try? request.decodeFailureBody(from: bytes, coders: self.configuration.coders)
                error.coders = self.configuration.coders
            } else {
                streamed.body.cancel()
            }
            throw error
        }
        return response
    }

    /// How much of a refused stream's body is kept, and how long it is waited for.
    static let refusalBodyLimit = 64 * 1024
    static let refusalBodyWait = Duration.seconds(2)

    /// The first `limit` bytes of `body`, or what came within `wait`; the rest is cancelled.
    /// Bounded even for a body that ignores cancellation: the read runs in a task of its own,
    /// and the wait ends at the first of its end and the timer.
    static func beginning(of body: ResponseBody, upTo limit: Int, within wait: Duration) async -> [UInt8] {
        let limit = Swift.max(0, limit)
        let collected = Mutex<[UInt8]>([])
        let (ended, end) = AsyncStream<Void>.makeStream()
        let reader = Task {
            do {
                for try await chunk in body {
                    let full = collected.withLock { bytes in
                        bytes += chunk.prefix(limit - bytes.count)
                        return bytes.count >= limit
                    }
                    if full { break }
                }
            } catch {
                // Cancelled, or broken: what arrived is what there is.
            }
            end.yield()
        }
        let timer = Task {
            try? await Task.sleep(for: wait)
            end.yield()
        }
        var first = ended.makeAsyncIterator()
        _ = await first.next()
        reader.cancel()
        timer.cancel()
        body.cancel()
        return collected.withLock { $0 }
    }
}
