#if canImport(Glibc)
import Glibc
#endif

/// What a request sends after its head: bytes in memory, a stream of chunks, or a file.
///
/// ```swift
/// try await client.execute(post, body: .string(#"{"name":"salvo"}"#))
/// try await client.execute(put, body: try .file(path: "/var/backups/db.tar"))   // streamed from disk
/// try await client.execute(post, body: .stream(chunks))   // chunked: length unknown
/// ```
///
/// Streams and files are sent as the socket takes them: a slow server slows the producer
/// down (at most 256 KiB wait in memory), it never fills memory.
public struct HTTPClientRequestBody: Sendable {
    enum Storage: Sendable {
        case bytes([UInt8])
        /// A producer that writes its chunks; `replayable` when it can run more than once.
        case stream(length: Int?, replayable: Bool, produce: @Sendable (RequestBodyWriter) async throws -> Void)
    }

    let storage: Storage
    /// Compressed by ``gzipped(level:)``: the request says so in Content-Encoding.
    var gzip = false

    /// Bytes held in memory, sent with a Content-Length.
    public static func bytes(_ bytes: [UInt8]) -> HTTPClientRequestBody {
        HTTPClientRequestBody(storage: .bytes(bytes))
    }

    /// UTF-8 text, sent with a Content-Length.
    public static func string(_ text: String) -> HTTPClientRequestBody {
        HTTPClientRequestBody(storage: .bytes(Array(text.utf8)))
    }

    /// The chunks of an async sequence, read as the connection can send them. With a
    /// `length` the body goes with a Content-Length, and a sequence that yields another
    /// number of bytes fails the request (`.requestBodyFailed`); without one it is sent
    /// chunked. The sequence is iterated once: the request is not retried and a 307/308
    /// redirect is not followed with it.
    public static func stream<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, length: Int? = nil
    ) -> HTTPClientRequestBody where Chunks.Element == [UInt8] {
        HTTPClientRequestBody(storage: .stream(length: length, replayable: false) { writer in
            for try await chunk in chunks {
                try await writer.write(chunk)
            }
        })
    }

    /// A body written by `produce` through a ``RequestBodyWriter``, which suspends while the
    /// connection is behind. `replayable`: `produce` can run again from the start (for a
    /// retry on a fresh connection or a 307/308 redirect).
    public static func producer(
        length: Int? = nil, replayable: Bool = false,
        _ produce: @escaping @Sendable (RequestBodyWriter) async throws -> Void
    ) -> HTTPClientRequestBody {
        HTTPClientRequestBody(storage: .stream(length: length, replayable: replayable, produce: produce))
    }

    /// A file read from disk as it is sent, never whole into memory.
    ///
    /// A regular file goes with a Content-Length of its size now, and is replayable (each
    /// attempt reads it again); if it grows or shrinks while it is sent, the request fails
    /// (`.requestBodyFailed`) rather than send a body that is not the file. A file whose size
    /// is not known up front — a pipe, a device, the files of /proc and /sys (which say 0) — is
    /// read to its end and sent chunked; only a regular one can be replayed.
    ///
    /// - Throws: `.requestBodyFailed` when the file cannot be opened, or is a directory.
    public static func file(path: String) throws(HTTPClientError) -> HTTPClientRequestBody {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw HTTPClientError(.requestBodyFailed, phase: .request, errno: errno, detail: "cannot read \(path)")
        }
        let type = info.st_mode & S_IFMT
        guard type != S_IFDIR else {
            throw HTTPClientError(.requestBodyFailed, phase: .request, detail: "\(path) is a directory")
        }
        guard access(path, R_OK) == 0 else {
            throw HTTPClientError(.requestBodyFailed, phase: .request, errno: errno, detail: "cannot read \(path)")
        }
        let size = Int(info.st_size)
        if type == S_IFREG && size > 0 {
            return HTTPClientRequestBody(storage: .stream(length: size, replayable: true) { writer in
                try await FileBodyReader.send(path: path, size: size, to: writer)
            })
        }
        return HTTPClientRequestBody(storage: .stream(length: nil, replayable: type == S_IFREG) { writer in
            try await FileBodyReader.send(path: path, size: nil, to: writer)
        })
    }

    /// This body compressed with gzip, sent with `Content-Encoding: gzip` (added to the
    /// request unless it names an encoding itself). Bytes are compressed at once and keep a
    /// Content-Length; streams and files are compressed as they are read and go chunked.
    public func gzipped(level: Int32 = 6) -> HTTPClientRequestBody {
        switch self.storage {
        case .bytes(let bytes):
            return HTTPClientRequestBody(storage: .bytes(GzipEncoder.gzip(bytes, level: level)), gzip: true)
        case .stream(_, let replayable, let produce):
            return HTTPClientRequestBody(storage: .stream(length: nil, replayable: replayable) { writer in
                let encoder = try GzipEncoder(level: level)
                try await produce(RequestBodyWriter(compressingInto: writer, with: encoder))
                var tail: [UInt8] = []
                encoder.finish { tail.append(contentsOf: $0) }
                try await writer.write(tail)
            }, gzip: true)
        }
    }

    /// Whether the body can be sent again (after a redirect, or on a fresh connection).
    var isReplayable: Bool {
        switch self.storage {
        case .bytes: true
        case .stream(_, let replayable, _): replayable
        }
    }

    /// How the head frames it: with a Content-Length, or chunked.
    public var announcedLength: RequestBodyLength { self.framing }

    var framing: RequestBodyLength {
        switch self.storage {
        case .bytes(let bytes): .known(bytes.count)
        case .stream(let length?, _, _): .known(length)
        case .stream(nil, _, _): .unknown
        }
    }
}

/// Reads a file in 64 KiB pieces into a request body.
enum FileBodyReader {
    /// Sends `size` bytes of the file and checks it ends there, or (size nil) all of it.
    static func send(path: String, size: Int?, to writer: RequestBodyWriter) async throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw HTTPClientError(.requestBodyFailed, phase: .write, errno: errno, detail: "cannot open \(path)")
        }
        defer { close(fd) }
        var sent = 0
        while true {
            let piece = size.map { min($0 - sent, 64 * 1024) } ?? 64 * 1024
            // One byte past the announced size: a file that grew must not go out cut short.
            var chunk = [UInt8](repeating: 0, count: max(piece, 1))
            let n = chunk.withUnsafeMutableBytes { buffer -> Int in
                while true {
                    let n = read(fd, buffer.baseAddress, buffer.count)
                    if n >= 0 || errno != EINTR { return n }
                }
            }
            guard n >= 0 else {
                throw HTTPClientError(.requestBodyFailed, phase: .write, errno: errno, detail: "cannot read \(path)")
            }
            if let size, piece == 0 {
                guard n == 0 else {
                    throw HTTPClientError(.requestBodyFailed, phase: .write, detail: "\(path) grew past its \(size) bytes while it was sent")
                }
                return
            }
            if n == 0 {
                guard let size else { return }
                throw HTTPClientError(.requestBodyFailed, phase: .write, detail: "\(path) shrank to \(sent) of its \(size) bytes while it was sent")
            }
            if n < chunk.count { chunk.removeLast(chunk.count - n) }
            sent += n
            try await writer.write(chunk)
        }
    }
}

/// Hands a streamed request body's chunks to the connection that sends it.
public struct RequestBodyWriter: Sendable {
    let body: StreamedBody?
    /// For a gzipped stream: the writer below, and the compressor between.
    private let compressing: (writer: @Sendable ([UInt8]) async throws(HTTPClientError) -> Void, encoder: GzipEncoderBox)?

    init(body: StreamedBody) {
        self.body = body
        self.compressing = nil
    }

    init(compressingInto writer: RequestBodyWriter, with encoder: GzipEncoder) {
        self.body = nil
        self.compressing = ({ (chunk) throws(HTTPClientError) in try await writer.write(chunk) }, GzipEncoderBox(encoder))
    }

    /// Queues `chunk` for sending. Returns at once while little is queued, and suspends
    /// while 256 KiB or more wait for the socket.
    ///
    /// - Throws: ``HTTPClientError`` when the request is over (it failed, was cancelled or
    ///   the server answered early): stop producing then.
    public func write(_ chunk: [UInt8]) async throws(HTTPClientError) {
        guard !chunk.isEmpty else { return }
        if let compressing = self.compressing {
            var compressed: [UInt8] = []
            chunk.withUnsafeBytes { compressing.encoder.encoder.compress($0) { compressed.append(contentsOf: $0) } }
            try await compressing.writer(compressed)
            return
        }
        guard let body = self.body else { return }
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<HTTPClientError?, Never>) in
            if !body.loop.tryExecute({ body.append(chunk, continuation) }) {
                continuation.resume(returning: HTTPClientError(.shutdown, phase: .write))
            }
        }
        if let result { throw result }
    }
}

/// A gzip encoder handed to one producer task.
/// @unchecked Sendable: only the producer that owns the writer uses it, one write at a time.
final class GzipEncoderBox: @unchecked Sendable {
    let encoder: GzipEncoder
    init(_ encoder: GzipEncoder) { self.encoder = encoder }
}
