import Synchronization

/// Hands a streamed request body's chunks to whatever sends it.
///
/// A producer (``HTTPBody/producer(length:replayable:contentType:_:)``) gets one from the
/// transport; ``HTTPBody/makeWritable(length:contentType:)`` gives one to code that writes from
/// elsewhere, which then ends the body with ``finish()``.
public struct HTTPBodyWriter: Sendable {
    private enum Target: Sendable {
        case sink(@Sendable ([UInt8]) async throws(TransportError) -> Void)
        case channel(WritableBodyChannel)
    }

    private let target: Target

    /// A writer that hands each chunk to `sink`, which returns once the chunk is taken (and
    /// throws when the request is over). For transports.
    public init(_ sink: @escaping @Sendable ([UInt8]) async throws(TransportError) -> Void) {
        self.target = .sink(sink)
    }

    init(channel: WritableBodyChannel) {
        self.target = .channel(channel)
    }

    /// Queues `chunk` for sending. Returns once there is room for more, and suspends while
    /// the connection is behind.
    ///
    /// - Throws: ``TransportError`` when the request is over (it failed, was cancelled or
    ///   the server answered early): stop producing then.
    public func write(_ chunk: [UInt8]) async throws(TransportError) {
        guard !chunk.isEmpty else { return }
        switch self.target {
        case .sink(let sink): try await sink(chunk)
        case .channel(let channel): try await channel.write(chunk)
        }
    }

    /// Ends a body made by ``HTTPBody/makeWritable(length:contentType:)``: every byte is
    /// written. (A producer's body ends when the producer returns.)
    public func finish() {
        if case .channel(let channel) = self.target { channel.end(nil) }
    }

    /// Ends a body made by ``HTTPBody/makeWritable(length:contentType:)`` with an error: the
    /// request fails with `.requestBodyFailed`.
    public func fail(_ error: any Error) {
        if case .channel(let channel) = self.target { channel.end(error) }
    }
}

/// The meeting point of a writable body's writer (any task) and the transport sending it:
/// one chunk at a time, each write resumed once the transport took it.
final class WritableBodyChannel: Sendable {
    private struct State {
        var pending: (chunk: [UInt8], taken: CheckedContinuation<Void, any Error>)?
        /// The transport waits for the next chunk or the end.
        var reader: CheckedContinuation<[UInt8]?, any Error>?
        var ended = false
        var failure: (any Error)?
        /// The request is over: writes fail with this.
        var closed: TransportError?
    }

    private let state = Mutex(State())

    /// Writer side.
    func write(_ chunk: [UInt8]) async throws(TransportError) {
        defer { threadSanitizerSawResume() }
        do {
            try await withCheckedThrowingContinuation { (taken: CheckedContinuation<Void, any Error>) in
                enum Step { case hand(CheckedContinuation<[UInt8]?, any Error>), wait, fail(TransportError) }
                let step: Step = self.state.withLock { state in
                    if let closed = state.closed { return .fail(closed) }
                    if state.ended || state.pending != nil {
                        return .fail(TransportError(.requestBodyFailed, phase: .write,
                                                     detail: state.ended ? "write after finish()" : "two writes at once"))
                    }
                    if let reader = state.reader {
                        state.reader = nil
                        return .hand(reader)
                    }
                    state.pending = (chunk, taken)
                    return .wait
                }
                switch step {
                case .hand(let reader):
                    reader.resume(returning: chunk)
                    taken.resume()
                case .wait:
                    break
                case .fail(let error):
                    taken.resume(throwing: error)
                }
            }
        } catch let error as TransportError {
            throw error
        } catch {
            throw TransportError.bodySource(threw: error)
        }
    }

    /// Writer side: no more chunks (`failure` nil), or the body failed.
    func end(_ failure: (any Error)?) {
        let reader = self.state.withLock { state -> CheckedContinuation<[UInt8]?, any Error>? in
            guard !state.ended else { return nil }
            state.ended = true
            state.failure = failure
            let reader = state.reader
            state.reader = nil
            return reader
        }
        if let failure { reader?.resume(throwing: failure) } else { reader?.resume(returning: nil) }
    }

    /// Transport side: copies every chunk into `connection` until the writer finishes.
    func drain(into connection: HTTPBodyWriter) async throws {
        do {
            while let chunk = try await self.nextChunk() {
                try await connection.write(chunk)
            }
        } catch let error as TransportError {
            self.close(error)
            throw error
        } catch {
            self.close(.bodySource(threw: error))
            throw error
        }
        self.close(.cancelled(.requestEnded, phase: .write, detail: "the body was already sent"))
    }

    private func nextChunk() async throws -> [UInt8]? {
        defer { threadSanitizerSawResume() }
        return try await withCheckedThrowingContinuation { (reader: CheckedContinuation<[UInt8]?, any Error>) in
            enum Step { case chunk([UInt8], CheckedContinuation<Void, any Error>), end((any Error)?), wait }
            let step: Step = self.state.withLock { state in
                if let pending = state.pending {
                    state.pending = nil
                    return .chunk(pending.chunk, pending.taken)
                }
                if state.ended { return .end(state.failure) }
                state.reader = reader
                return .wait
            }
            switch step {
            case .chunk(let chunk, let taken):
                reader.resume(returning: chunk)
                taken.resume()
            case .end(let failure?):
                reader.resume(throwing: failure)
            case .end(nil):
                reader.resume(returning: nil)
            case .wait:
                break
            }
        }
    }

    /// The request is over: a waiting or later write fails (the first reason stays).
    func close(_ error: TransportError) {
        let pending = self.state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if state.closed == nil { state.closed = error }
            let pending = state.pending?.taken
            state.pending = nil
            return pending
        }
        pending?.resume(throwing: error)
    }
}
