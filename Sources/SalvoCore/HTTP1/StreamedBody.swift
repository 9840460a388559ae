import SalvoTransport
import DequeModule

/// What a ``StreamedBody`` wakes when its producer queued data, finished or failed (on the loop).
protocol StreamedBodyConsumer: AnyObject {
    func streamedBodyChanged()
}

/// Where a streamed request body's producer (a task anywhere) and the connection sending it
/// (on its loop) meet: a queue of chunks, bounded, so a slow socket slows the producer down.
///
/// @unchecked Sendable: every method runs on `loop`'s thread; the producer reaches it only
/// through `loop.execute` (see ``HTTPBodyWriter``).
final class StreamedBody: @unchecked Sendable {
    /// Why the request stopped wanting the body, once it did.
    private var cancellationReason = TransportError.CancellationReason.requestEnded
    enum State {
        case producing
        /// Every announced byte is queued, and the producer has not ended yet: its end (or a
        /// byte more, or a throw) still decides whether the body was what it promised.
        case complete
        /// The producer ended well and every byte (and the last chunk) is queued.
        case finished
        case failed(TransportError)
        /// The request ended first; nothing more is taken.
        case cancelled
    }

    /// The producer ended well and every byte it gave, framing included, was written.
    var isAllWritten: Bool {
        if case .finished = self.state { return self.chunks.isEmpty }
        return false
    }

    /// The producer waits while this much is queued, and goes on below half of it.
    static let highWater = 256 * 1024

    let loop: EventLoop
    /// nil: chunked framing, added here as chunks arrive.
    private let length: Int?
    private var chunks = Deque<[UInt8]>()
    /// Bytes of the first chunk already written.
    private(set) var frontOffset = 0
    private var queued = 0
    private var produced = 0
    private var waitingProducer: UnsafeContinuation<TransportError?, Never>?
    private(set) var state = State.producing
    private var producer: Task<Void, Never>?
    /// The connection (or HTTP/2 stream) to wake when data arrives; cleared when the request ends.
    weak var connection: (any StreamedBodyConsumer)?
    /// Chunked framing is added when the length is unknown (HTTP/1.1); HTTP/2 frames itself.
    private let chunked: Bool

    init(loop: EventLoop, length: Int?, connection: any StreamedBodyConsumer, chunked: Bool = true) {
        self.loop = loop
        self.length = length
        self.connection = connection
        self.chunked = chunked && length == nil
    }

    /// Runs `produce` in a task of its own.
    func start(_ produce: @escaping @Sendable (HTTPBodyWriter) async throws -> Void) {
        // Chunks reach the loop through its queue; each write returns once there is room.
        let writer = HTTPBodyWriter { [self] (chunk) throws(TransportError) in
            let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<TransportError?, Never>) in
                if !self.loop.tryExecute({ self.append(chunk, continuation) }) {
                    continuation.resume(returning: TransportError(.shutdown, phase: .write))
                }
            }
            threadSanitizerSawResume()
            if let result { throw result }
        }
        let loop = self.loop
        self.producer = Task {
            let failure: TransportError?
            do {
                try await produce(writer)
                failure = nil
            } catch let error as TransportError {
                failure = error.code == .requestBodyFailed ? error
                    : TransportError(.requestBodyFailed, phase: .write, detail: error.description)
            } catch {
                failure = .bodySource(threw: error)
            }
            _ = loop.tryExecute { self.producerEnded(failure) }
        }
    }

    // MARK: Producer side (on the loop)

    func append(_ chunk: [UInt8], _ continuation: UnsafeContinuation<TransportError?, Never>) {
        if case .complete = self.state, let length = self.length {
            self.overrun(length, continuation)
            return
        }
        guard case .producing = self.state else {
            continuation.resume(returning: self.endedError)
            return
        }
        self.produced += chunk.count
        if let length = self.length, self.produced > length {
            self.overrun(length, continuation)
            return
        }
        let framed: [UInt8]
        if self.chunked {
            // chunk-size CRLF chunk-data CRLF
            var bytes = Array(String(chunk.count, radix: 16).utf8)
            bytes.reserveCapacity(bytes.count + chunk.count + 4)
            bytes += [0x0D, 0x0A]
            bytes += chunk
            bytes += [0x0D, 0x0A]
            framed = bytes
        } else {
            framed = chunk
        }
        self.chunks.append(framed)
        self.queued += framed.count
        if let length = self.length, self.produced == length {
            // Complete as announced: these bytes may go out (and the server answer) before the
            // producer's own end is seen here, which still decides how the request ends.
            self.state = .complete
        }
        if self.queued < Self.highWater {
            continuation.resume(returning: nil)
        } else {
            self.waitingProducer = continuation
        }
        self.connection?.streamedBodyChanged()
    }

    /// The producer gave more than it announced: the request fails, whatever went out.
    private func overrun(_ length: Int, _ continuation: UnsafeContinuation<TransportError?, Never>) {
        self.state = .failed(TransportError(.requestBodyFailed, phase: .write,
                                             detail: "the body stream gave more than its announced \(length) bytes"))
        self.chunks.removeAll()
        self.queued = 0
        continuation.resume(returning: self.endedError)
        self.connection?.streamedBodyChanged()
    }

    private func producerEnded(_ failure: TransportError?) {
        if case .complete = self.state {
            self.state = failure.map { .failed($0) } ?? .finished
            self.connection?.streamedBodyChanged()
            return
        }
        guard case .producing = self.state else { return }
        if let failure {
            self.state = .failed(failure)
        } else if let length = self.length, self.produced != length {
            self.state = .failed(TransportError(.requestBodyFailed, phase: .write,
                                                 detail: "the body stream ended after \(self.produced) of its announced \(length) bytes"))
        } else {
            if self.chunked { self.chunks.append(Array("0\r\n\r\n".utf8)) }
            self.state = .finished
        }
        self.connection?.streamedBodyChanged()
    }

    private var endedError: TransportError {
        if case .failed(let error) = self.state { return error }
        return self.cancellationReason == .serverAnsweredEarly
            ? .cancelled(.serverAnsweredEarly, phase: .write, detail: "the server answered before the body was sent")
            : .cancelled(self.cancellationReason, phase: .write, detail: "the request ended before its body was sent")
    }

    // MARK: Socket side (on the loop)

    /// The next bytes to write, valid until `consumed` or the next append.
    var front: [UInt8]? { self.chunks.first }

    var failure: TransportError? {
        if case .failed(let error) = self.state { return error }
        return nil
    }

    /// Every byte is written and the producer ended well.
    var isComplete: Bool {
        if case .finished = self.state { return self.chunks.isEmpty }
        return false
    }

    /// Every announced byte is written, and the producer has yet to end.
    var isSent: Bool {
        if case .complete = self.state { return self.chunks.isEmpty }
        return false
    }

    func consumed(_ count: Int) {
        self.frontOffset += count
        self.queued -= count
        if let first = self.chunks.first, self.frontOffset >= first.count {
            self.chunks.removeFirst()
            self.frontOffset = 0
        }
        if self.queued < Self.highWater / 2, let waiting = self.waitingProducer {
            self.waitingProducer = nil
            waiting.resume(returning: nil)
        }
    }

    /// The request ended (sent, answered early, failed or cancelled): stop the producer.
    func cancel(_ reason: TransportError.CancellationReason) {
        self.cancellationReason = reason
        self.connection = nil
        switch self.state {
        case .producing, .complete: self.state = .cancelled
        case .finished, .failed, .cancelled: break
        }
        self.chunks.removeAll()
        self.queued = 0
        if let waiting = self.waitingProducer {
            self.waitingProducer = nil
            waiting.resume(returning: self.endedError)
        }
        // On the loop's next turn: cancelling a task runs its cancellation handlers at once,
        // and one of them could reach back into the connection that is cancelling it now.
        if let producer = self.producer {
            if !self.loop.tryExecute({ producer.cancel() }) { producer.cancel() }
        }
    }
}
