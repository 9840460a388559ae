import DequeModule
import HTTPTypes
import SalvoTransport
import Synchronization

/// The buffer between a connection (producer, on its loop) and a body consumer (any task).
/// This is the one place a lock sits between loop and caller: streamed bodies only.
final class BodyStream: ResponseBodySource {
    struct State {
        var chunks = Deque<[UInt8]>()
        var buffered = 0
        var end: Result<HTTPFields?, TransportError>? = nil
        var waiter: UnsafeContinuation<Result<[UInt8]?, TransportError>, Never>? = nil
        var producerPaused = false
        var cancelled = false
        var trailers: HTTPFields? = nil
        var metrics: TransportMetrics? = nil
        /// An iterator was made: the body has its one reader.
        var claimed = false
    }

    static let secondReader = TransportError(
        .bodyAlreadyIterated, phase: .readBody, detail: "a response body can be iterated once, by one reader at a time")

    /// Takes the body for an iterator; false when one already has it.
    func claimReader() -> Bool {
        self.state.withLock { state in
            if state.claimed { return false }
            state.claimed = true
            return true
        }
    }

    let highWatermark: Int
    let lowWatermark: Int
    private let state = Mutex(State())
    /// Asks the producer's loop to read again, or to cancel; set once, before any consumer runs.
    private let onResume: @Sendable () -> Void
    private let onCancel: @Sendable () -> Void

    init(highWatermark: Int = 256 * 1024, onResume: @escaping @Sendable () -> Void, onCancel: @escaping @Sendable () -> Void) {
        self.highWatermark = highWatermark
        self.lowWatermark = highWatermark / 4
        self.onResume = onResume
        self.onCancel = onCancel
    }

    var trailers: HTTPFields? { self.state.withLock { $0.trailers } }

    /// The exchange's metrics, set by the loop just before the body ends.
    var metrics: TransportMetrics? {
        get { self.state.withLock { $0.metrics } }
        set { self.state.withLock { $0.metrics = newValue } }
    }

    // MARK: Producer (loop thread)

    /// Adds bytes; returns false when the producer should stop reading.
    func yield(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let chunk = [UInt8](bytes)
        let (waiter, keepReading): (UnsafeContinuation<Result<[UInt8]?, TransportError>, Never>?, Bool) = self.state.withLock { state in
            if state.cancelled { return (nil, true) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (waiter, true)
            }
            state.chunks.append(chunk)
            state.buffered += chunk.count
            if state.buffered > self.highWatermark {
                state.producerPaused = true
                return (nil, false)
            }
            return (nil, true)
        }
        waiter?.resume(returning: .success(chunk))
        return keepReading
    }

    func finish(_ end: Result<HTTPFields?, TransportError>) {
        let waiter = self.state.withLock { state -> UnsafeContinuation<Result<[UInt8]?, TransportError>, Never>? in
            guard state.end == nil else { return nil }
            state.end = end
            if case .success(let trailers) = end { state.trailers = trailers }
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        guard let waiter else { return }
        switch end {
        case .success: waiter.resume(returning: .success(nil))
        case .failure(let error): waiter.resume(returning: .failure(error))
        }
    }

    // MARK: Consumer (any task)

    func next() async -> Result<[UInt8]?, TransportError> {
        defer { threadSanitizerSawResume() }
        return await withUnsafeContinuation { continuation in
            enum Step { case value(Result<[UInt8]?, TransportError>), resumeProducer([UInt8]), wait }
            let step: Step = self.state.withLock { state in
                if let chunk = state.chunks.popFirst() {
                    state.buffered -= chunk.count
                    if state.producerPaused && state.buffered <= self.lowWatermark {
                        state.producerPaused = false
                        return .resumeProducer(chunk)
                    }
                    return .value(.success(chunk))
                }
                if state.cancelled { return .value(.failure(.cancelled(.caller, phase: .readBody))) }
                switch state.end {
                case .success?: return .value(.success(nil))
                case .failure(let error)?: return .value(.failure(error))
                case nil:
                    // Copies of one iterator read at once: the first keeps waiting, the
                    // second is told, rather than one of them never being resumed.
                    if state.waiter != nil { return .value(.failure(BodyStream.secondReader)) }
                    state.waiter = continuation
                    return .wait
                }
            }
            switch step {
            case .value(let result):
                continuation.resume(returning: result)
            case .resumeProducer(let chunk):
                self.onResume()
                continuation.resume(returning: .success(chunk))
            case .wait:
                break
            }
        }
    }

    /// The consumer went away or was cancelled: stop the request.
    func cancel() {
        let waiter = self.state.withLock { state -> UnsafeContinuation<Result<[UInt8]?, TransportError>, Never>? in
            let finished = state.end != nil && state.chunks.isEmpty
            if state.cancelled || finished { return nil }
            state.cancelled = true
            state.chunks.removeAll()
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        if self.state.withLock({ $0.end == nil }) { self.onCancel() }
        waiter?.resume(returning: .failure(.cancelled(.caller, phase: .readBody)))
    }
}
