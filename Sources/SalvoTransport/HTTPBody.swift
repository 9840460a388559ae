import Synchronization

/// What a request sends after its head: bytes in memory, or chunks produced while it is sent.
///
/// ```swift
/// try await client.execute(post, body: .string(#"{"name":"salvo"}"#, contentType: "application/json"))
/// try await client.execute(post, body: .stream(chunks))        // chunked: length unknown
/// try await client.execute(put, body: try .file(path: "/var/backups/db.tar"))   // SalvoCore: streamed from disk
/// ```
///
/// A streamed body is sent as the connection takes it: its producer writes through an
/// ``HTTPBodyWriter``, which suspends while the connection is behind, so a slow server slows
/// the producer down instead of filling memory. Whether it can be sent twice — for a retry on
/// a fresh connection, or a 307/308 redirect — is ``isReplayable``.
///
/// A body may carry its ``contentType``: a request without a `Content-Type` of its own is
/// sent with it.
public struct HTTPBody: Sendable {
    /// The bytes, or how they are produced.
    public enum Content: Sendable {
        /// Bytes held in memory, sent with a Content-Length.
        case bytes([UInt8])
        /// A producer that writes its chunks; with a `length` they go with a Content-Length
        /// (and more or fewer bytes fail the request), without one chunked. `replayable`:
        /// `produce` can run again from the start.
        case stream(length: Int?, replayable: Bool, produce: @Sendable (HTTPBodyWriter) async throws -> Void)
    }

    public var content: Content
    /// The media type of the body, sent as `Content-Type` unless the request names its own.
    public var contentType: String?
    /// The content coding the bytes are already in (`gzip` for a compressed body), sent as
    /// `Content-Encoding` unless the request names its own.
    public var contentEncoding: String?
    /// Told when the request is over (see ``requestEnded()``).
    private var endSignal: EndSignal?

    public init(_ content: Content, contentType: String? = nil, contentEncoding: String? = nil) {
        self.content = content
        self.contentType = contentType
        self.contentEncoding = contentEncoding
    }

    /// A transport calls this once it is done with the body: the request ended, whether the
    /// body was sent or never will be. A body from ``makeWritable(length:contentType:)`` then
    /// fails its writer's waiting and later writes, so a writer never waits for a request
    /// that is gone. `reason` is what such a writer is told: `.serverAnsweredEarly` when the
    /// exchange succeeded before the body was all sent, `.requestEnded` when it failed.
    /// Calling it more than once does nothing more.
    public func requestEnded(_ reason: TransportError.CancellationReason = .requestEnded) {
        self.endSignal?.fire(reason)
    }

    /// Bytes held in memory, sent with a Content-Length.
    public static func bytes(_ bytes: [UInt8], contentType: String? = nil) -> HTTPBody {
        HTTPBody(.bytes(bytes), contentType: contentType)
    }

    /// UTF-8 text, sent with a Content-Length.
    public static func string(_ text: String, contentType: String? = nil) -> HTTPBody {
        HTTPBody(.bytes(Array(text.utf8)), contentType: contentType)
    }

    /// The chunks of an async sequence, read as the connection can send them. With a
    /// `length` the body goes with a Content-Length, and a sequence that yields another
    /// number of bytes fails the request (`.requestBodyFailed`); without one it is sent
    /// chunked. The sequence is iterated once: the request is not retried and a 307/308
    /// redirect is not followed with it.
    public static func stream<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, length: Int? = nil, contentType: String? = nil
    ) -> HTTPBody where Chunks.Element == [UInt8] {
        HTTPBody(.stream(length: length, replayable: false) { writer in
            for try await chunk in chunks {
                try await writer.write(chunk)
            }
        }, contentType: contentType)
    }

    /// A body written by `produce` through an ``HTTPBodyWriter``, which suspends while the
    /// connection is behind. `replayable`: `produce` can run again from the start (for a
    /// retry on a fresh connection or a 307/308 redirect).
    public static func producer(
        length: Int? = nil, replayable: Bool = false, contentType: String? = nil,
        _ produce: @escaping @Sendable (HTTPBodyWriter) async throws -> Void
    ) -> HTTPBody {
        HTTPBody(.stream(length: length, replayable: replayable, produce: produce), contentType: contentType)
    }

    /// A body and the writer that fills it, for code that produces the bytes somewhere else
    /// than in a closure: write with ``HTTPBodyWriter/write(_:)`` from any task, then call
    /// ``HTTPBodyWriter/finish()`` (or ``HTTPBodyWriter/fail(_:)``). Each write waits until the
    /// connection has taken the bytes, so a slow server slows the writer down. The body can be
    /// sent once.
    ///
    /// ```swift
    /// let (body, writer) = HTTPBody.makeWritable(length: nil)
    /// async let response = client.execute(upload, body: body)
    /// for await piece in pieces { try await writer.write(piece) }
    /// writer.finish()
    /// print(try await response.status)
    /// ```
    public static func makeWritable(length: Int? = nil, contentType: String? = nil) -> (HTTPBody, HTTPBodyWriter) {
        let channel = WritableBodyChannel()
        var body = HTTPBody(.stream(length: length, replayable: false) { connection in
            try await channel.drain(into: connection)
        }, contentType: contentType)
        body.endSignal = EndSignal { reason in
            channel.close(reason == .serverAnsweredEarly
                ? .cancelled(reason, phase: .write, detail: "the server answered before the body was sent")
                : .cancelled(reason, phase: .write, detail: "the request ended before its body was sent"))
        }
        return (body, HTTPBodyWriter(channel: channel))
    }

    /// How the head frames the body: with a Content-Length, or chunked.
    public var length: Length {
        switch self.content {
        case .bytes(let bytes): .known(bytes.count)
        case .stream(let length?, _, _): .known(length)
        case .stream(nil, _, _): .unknown
        }
    }

    /// Whether the body can be sent again (after a redirect, for a retry on a fresh connection).
    public var isReplayable: Bool {
        switch self.content {
        case .bytes: true
        case .stream(_, let replayable, _): replayable
        }
    }

    /// The length of a body as its head announces it.
    public enum Length: Sendable, Hashable {
        /// A Content-Length of this many bytes.
        case known(Int)
        /// Chunked: the length is not known up front.
        case unknown
    }
}

/// Runs its action once, on the first ``fire()``.
final class EndSignal: Sendable {
    private let action: Mutex<(@Sendable (TransportError.CancellationReason) -> Void)?>

    init(_ action: @escaping @Sendable (TransportError.CancellationReason) -> Void) {
        self.action = Mutex(action)
    }

    func fire(_ reason: TransportError.CancellationReason) {
        self.action.withLock { $0.take() }?(reason)
    }
}
