import Synchronization

/// How far an upload or a download has come.
public struct TransferProgress: Sendable, Hashable {
    /// Bytes handed to the connection (upload) or written to the file (download) so far.
    public var completedBytes: Int
    /// The whole size, when it is known (a Content-Length, a file's size).
    public var totalBytes: Int?

    public init(completedBytes: Int, totalBytes: Int?) {
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
    }

    /// From 0 to 1, when the whole size is known.
    public var fractionCompleted: Double? {
        guard let total = self.totalBytes else { return nil }
        return total == 0 ? 1 : Double(self.completedBytes) / Double(total)
    }
}

/// Called with the progress of a transfer, on the task that moves its bytes, after each
/// piece. Keep it quick; hop to your own actor for UI work.
public typealias ProgressHandler = @Sendable (TransferProgress) -> Void

extension HTTPBody {
    /// The same body, reporting to `progress` as its bytes are taken by the connection. Bytes
    /// in memory go in 64 KiB pieces so that the reports are regular; a body sent again (a
    /// retry, a redirect) starts again from zero.
    public func reportingProgress(_ progress: @escaping ProgressHandler) -> HTTPBody {
        // A copy, so that what the transport tells the body (its end) still reaches the original.
        var reporting = self
        let total: Int? = switch self.length {
        case .known(let count): count
        case .unknown: nil
        }
        switch self.content {
        case .bytes(let bytes):
            reporting.content = .stream(length: bytes.count, replayable: true) { writer in
                progress(TransferProgress(completedBytes: 0, totalBytes: total))
                var offset = 0
                while offset < bytes.count {
                    let end = min(offset + 64 * 1024, bytes.count)
                    try await writer.write(Array(bytes[offset..<end]))
                    offset = end
                    progress(TransferProgress(completedBytes: offset, totalBytes: total))
                }
            }
        case .stream(let length, let replayable, let produce):
            reporting.content = .stream(length: length, replayable: replayable) { writer in
                let counter = ByteCounter()
                progress(TransferProgress(completedBytes: 0, totalBytes: total))
                try await produce(HTTPBodyWriter { (chunk) throws(TransportError) in
                    try await writer.write(chunk)
                    progress(TransferProgress(completedBytes: counter.add(chunk.count), totalBytes: total))
                })
            }
        }
        return reporting
    }
}

/// A running count shared by the writes of one body.
final class ByteCounter: Sendable {
    private let count = Atomic<Int>(0)

    func add(_ bytes: Int) -> Int {
        self.count.add(bytes, ordering: .relaxed).newValue
    }
}
