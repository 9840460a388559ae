import HTTPTypes
import SalvoTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A stored body read from its entry file, a chunk (64 KiB at most) per `next()`, its
/// checksum computed as it goes.
///
/// The last chunk is handed out only once the whole body's checksum has matched: a reader
/// never sees a clean end of a body that differs from the one stored. A mismatch, or a file
/// shorter than its header said, fails the body with `.readFailed` and removes the entry.
///
/// Each `next()` is one `pread(2)` of a bounded chunk from a local file, done on the
/// caller's thread: short enough for the cooperative pool, and no larger in memory than
/// one chunk.
final class DiskBodySource: ResponseBodySource {
    static let chunkSize = 64 * 1024

    private struct State {
        /// -1 once the body has ended, failed or been cancelled.
        var fd: Int32
        var position: Int
        var remaining: Int
        var crc: UInt32 = 0
        var claimed = false
        var cancelled = false
        var ended = false
    }

    private let state: Mutex<State>
    private let expectedCRC: UInt32
    private let path: String
    private let identity: FileIdentity
    private let key: String

    init(_ entry: OpenedEntry, path: String) {
        self.state = Mutex(State(fd: entry.fd, position: EntryFormat.headerSize, remaining: Int(entry.header.bodyLength)))
        self.expectedCRC = entry.header.bodyCRC
        self.path = path
        self.identity = entry.identity
        self.key = entry.response.key
    }

    deinit {
        self.state.withLock { state in
            if state.fd >= 0 { close(state.fd) }
            state.fd = -1
        }
    }

    var trailers: HTTPFields? { nil }

    func next() async -> Result<[UInt8]?, TransportError> {
        let taskCancelled = Task.isCancelled
        return self.state.withLock { state in
            if state.ended { return .success(nil) }
            if state.cancelled || taskCancelled {
                self.finish(&state)
                state.cancelled = true
                return .failure(.cancelled(.caller, phase: .readBody))
            }
            guard state.fd >= 0 else { return .failure(.cancelled(.caller, phase: .readBody)) }
            let count = min(Self.chunkSize, state.remaining)
            let chunk: [UInt8]
            switch Files.read(state.fd, count: count, at: state.position) {
            case .success(let bytes): chunk = bytes
            case .failure(let error):
                self.finish(&state)
                return .failure(TransportError(.readFailed, phase: .readBody, errno: error.code,
                                               detail: "cannot read the cached body of \(self.key)"))
            }
            guard chunk.count == count else {
                return self.fail(&state, "the cached body of \(self.key) is shorter than stored; entry removed")
            }
            state.position += count
            state.remaining -= count
            state.crc = chunk.withUnsafeBytes { CRC32.update(state.crc, $0) }
            if state.remaining == 0 {
                guard state.crc == self.expectedCRC else {
                    return self.fail(&state, "the cached body of \(self.key) does not match its checksum; entry removed")
                }
                self.finish(&state)
                state.ended = true
                if chunk.isEmpty { return .success(nil) }
            }
            return .success(chunk)
        }
    }

    func cancel() {
        self.state.withLock { state in
            guard !state.ended else { return }
            state.cancelled = true
            self.finish(&state)
        }
    }

    func claimReader() -> Bool {
        self.state.withLock { state in
            defer { state.claimed = true }
            return !state.claimed
        }
    }

    private func finish(_ state: inout State) {
        if state.fd >= 0 { close(state.fd) }
        state.fd = -1
    }

    private func fail(_ state: inout State, _ detail: String) -> Result<[UInt8]?, TransportError> {
        self.finish(&state)
        Files.remove(self.path, ifStill: self.identity)
        return .failure(TransportError(.readFailed, phase: .readBody, detail: detail))
    }
}
