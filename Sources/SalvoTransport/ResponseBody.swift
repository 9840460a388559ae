import HTTPTypes
import Synchronization

/// A response body as an `AsyncSequence` of byte chunks, with backpressure.
///
/// From the engine, the connection stops reading its socket once enough waits unread here,
/// and reads again as the consumer catches up: a slow consumer slows the server down instead
/// of filling memory. Any ``Transport`` makes one from a ``ResponseBodySource``; bodies that
/// are already in memory come from ``bytes(_:trailers:)``.
///
/// ```swift
/// let response = try await client.stream(request)
/// for try await chunk in response.body {
///     try file.write(chunk)
/// }
/// ```
///
/// Dropping the body (and its iterators) before the end cancels the request and closes its
/// connection; ``drain(upTo:)`` reads a short rest instead, so the connection can be reused
/// (a retry after a 503, say). Chunk boundaries carry no meaning.
///
/// The body is read once: a second iterator (a second `for await`, or ``collect(upTo:)`` after
/// one), or two tasks calling `next()` on copies of one iterator at the same time, get
/// ``TransportError/Code/bodyAlreadyIterated`` while the first reader carries on.
public struct ResponseBody: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = TransportError

    let source: any ResponseBodySource
    private let consumer: ConsumerToken

    /// A body read from `source`.
    public init(source: any ResponseBodySource) {
        self.source = source
        self.consumer = ConsumerToken(source: source)
    }

    /// A body that is already in memory.
    public static func bytes(_ bytes: [UInt8], trailers: HTTPFields? = nil) -> ResponseBody {
        ResponseBody(source: BufferedBodySource(chunks: bytes.isEmpty ? [] : [bytes], trailers: trailers))
    }

    /// A body of the chunks of `chunks`, read as the consumer asks. An error the sequence
    /// throws ends the body with `.readFailed` (an ``TransportError`` as is). An end that
    /// comes once the reading task or the body was cancelled — as an `AsyncStream` ends when
    /// its reader is cancelled — is `.cancelled`, never a clean end.
    public static func stream<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) -> ResponseBody where Chunks.Element == [UInt8] {
        ResponseBody(source: SequenceBodySource(chunks))
    }

    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        let source: any ResponseBodySource
        let consumer: ConsumerToken
        /// Another iterator took the body first: this one only reports that.
        let refused: Bool

        public mutating func next() async throws(TransportError) -> [UInt8]? {
            try await self.next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(TransportError) -> [UInt8]? {
            if self.refused { throw TransportError.secondReader }
            let source = self.source
            let result = await withTaskCancellationHandler {
                await source.next()
            } onCancel: {
                source.cancel()
            }
            return try result.get()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(source: self.source, consumer: self.consumer, refused: !self.source.claimReader())
    }

    /// Reads the whole rest of the body, failing past `maxBytes` (`.bodyTooLarge`, and the
    /// request is cancelled).
    public func collect(upTo maxBytes: Int) async throws(TransportError) -> [UInt8] {
        var all: [UInt8] = []
        for try await chunk in self {
            if all.count + chunk.count > maxBytes {
                self.source.cancel()
                throw TransportError(.bodyTooLarge, phase: .readBody, detail: "more than \(maxBytes) bytes")
            }
            if all.isEmpty { all = chunk } else { all.append(contentsOf: chunk) }   // one chunk: no copy
        }
        return all
    }

    /// Reads and drops the rest of the body, up to `maxBytes`: true when it ended within them
    /// (its connection can carry the next request); past them the request is cancelled and the
    /// connection closed, which is cheaper than reading a long body nobody wants.
    public func drain(upTo maxBytes: Int) async -> Bool {
        var dropped = 0
        do {
            for try await chunk in self {
                dropped += chunk.count
                if dropped > maxBytes {
                    self.source.cancel()
                    return false
                }
            }
            return true
        } catch {
            return false
        }
    }

    /// Stops the body: the request is cancelled and its connection closed, unless the body
    /// had already ended.
    public func cancel() {
        self.source.cancel()
    }

    /// Trailer fields, once the body has been read to its end.
    public var trailers: HTTPFields? { self.source.trailers }

    /// The exchange's metrics, complete once the body has been read to its end (nil before,
    /// and from a transport that keeps none).
    public var metrics: TransportMetrics? { self.source.metrics }
}

/// Where a ``ResponseBody`` gets its chunks: the engine's connection buffer, or anything a
/// transport has. Called from any task; must be safe to use concurrently.
public protocol ResponseBodySource: AnyObject, Sendable {
    /// The next chunk, nil at the end, or the error that ended the body. An end reached after
    /// ``cancel()`` or in a cancelled task is `.cancelled`, not nil: readers take nil for a
    /// whole body.
    func next() async -> Result<[UInt8]?, TransportError>
    /// The consumer is gone or was cancelled: stop producing. A body already at its end is
    /// unaffected.
    func cancel()
    /// Takes the body for an iterator; false when an iterator already has it.
    func claimReader() -> Bool
    /// Trailer fields, once the body has ended with some.
    var trailers: HTTPFields? { get }
    /// The exchange's metrics, once the body has ended (optional: nil by default).
    var metrics: TransportMetrics? { get }
}

extension ResponseBodySource {
    public var metrics: TransportMetrics? { nil }
}

extension TransportError {
    /// What a second reader of a body gets.
    package static let secondReader = TransportError(
        .bodyAlreadyIterated, phase: .readBody, detail: "a response body can be iterated once, by one reader at a time")
}

/// Cancels the request when the last copy of the body (and its iterators) goes away early.
final class ConsumerToken: Sendable {
    let source: any ResponseBodySource
    init(source: any ResponseBodySource) { self.source = source }
    deinit { self.source.cancel() }
}

/// A body held in memory.
final class BufferedBodySource: ResponseBodySource {
    private struct State {
        var chunks: [[UInt8]]
        var claimed = false
        var cancelled = false
    }

    private let state: Mutex<State>
    let trailers: HTTPFields?

    init(chunks: [[UInt8]], trailers: HTTPFields?) {
        self.state = Mutex(State(chunks: chunks.reversed()))
        self.trailers = trailers
    }

    func next() async -> Result<[UInt8]?, TransportError> {
        self.state.withLock { state in
            if state.cancelled { return .failure(.cancelled(.caller, phase: .readBody)) }
            return .success(state.chunks.popLast())
        }
    }

    func cancel() {
        self.state.withLock { state in
            if !state.chunks.isEmpty { state.cancelled = true }
        }
    }

    func claimReader() -> Bool {
        self.state.withLock { state in
            defer { state.claimed = true }
            return !state.claimed
        }
    }
}

/// A body read from an async sequence, one reader at a time.
final class SequenceBodySource: ResponseBodySource {
    private struct State {
        var claimed = false
        var cancelled = false
        /// A `next()` is under way: a second one at once (copies of one iterator) is refused.
        var reading = false
        /// The sequence ended before any cancel: a later one changes nothing.
        var ended = false
    }

    private let iterator: IteratorBox
    private let state = Mutex(State())
    var trailers: HTTPFields? { nil }

    init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) where Chunks.Element == [UInt8] {
        self.iterator = IteratorBox(chunks)
    }

    func next() async -> Result<[UInt8]?, TransportError> {
        let refusal: TransportError? = self.state.withLock { state in
            if state.cancelled { return .cancelled(.caller, phase: .readBody) }
            if state.reading { return .secondReader }
            state.reading = true
            return nil
        }
        if let refusal { return .failure(refusal) }
        defer { self.state.withLock { $0.reading = false } }
        do {
            if let chunk = try await self.iterator.next() { return .success(chunk) }
            // An `AsyncStream` ends — returns nil, as at a real end — when the task reading it
            // is cancelled. An end that comes after a cancel (of the task, or of this source)
            // is therefore taken as the cancellation it may be: a consumer must never take a
            // body cut short for a whole one (a download moved into place, say).
            let taskCancelled = Task.isCancelled
            let cut = self.state.withLock { state in
                if state.cancelled || taskCancelled {
                    state.cancelled = true
                    return true
                }
                state.ended = true
                return false
            }
            return cut ? .failure(.cancelled(.caller, phase: .readBody)) : .success(nil)
        } catch let error as TransportError {
            return .failure(error)
        } catch is CancellationError {
            return .failure(.cancelled(.caller, phase: .readBody))
        } catch {
            return .failure(TransportError(.readFailed, phase: .readBody, detail: "\(error)"))
        }
    }

    func cancel() {
        self.state.withLock { state in
            if !state.ended { state.cancelled = true }
        }
    }

    func claimReader() -> Bool {
        self.state.withLock { state in
            defer { state.claimed = true }
            return !state.claimed
        }
    }
}

/// One iterator of a sequence, behind a type-erased `next`.
/// @unchecked Sendable: ``SequenceBodySource`` lets one `next()` run at a time.
private final class IteratorBox: @unchecked Sendable {
    private let advance: () async throws -> [UInt8]?

    init<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) where Chunks.Element == [UInt8] {
        var iterator = chunks.makeAsyncIterator()
        self.advance = { try await iterator.next() }
    }

    func next() async throws -> [UInt8]? { try await self.advance() }
}
