import SalvoTransport

/// The engine's own kind of request body: gzip.
extension HTTPBody {
    /// This body compressed with gzip, sent with `Content-Encoding: gzip` (added to the
    /// request unless it names an encoding itself). Bytes are compressed at once and keep a
    /// Content-Length; streams and files are compressed as they are read and go chunked.
    public func gzipped(level: Int32 = 6) -> HTTPBody {
        // A copy, so that what the transport tells the body (its end) still reaches the original.
        var compressed = self
        compressed.contentEncoding = "gzip"
        switch self.content {
        case .bytes(let bytes):
            compressed.content = .bytes(GzipEncoder.gzip(bytes, level: level))
        case .stream(_, let replayable, let produce):
            compressed.content = .stream(length: nil, replayable: replayable) { writer in
                let encoder = GzipEncoderBox(try GzipEncoder(level: level))
                try await produce(HTTPBodyWriter { (chunk) throws(TransportError) in
                    var compressed: [UInt8] = []
                    chunk.withUnsafeBytes { encoder.encoder.compress($0) { compressed.append(contentsOf: $0) } }
                    try await writer.write(compressed)
                })
                var tail: [UInt8] = []
                encoder.encoder.finish { tail.append(contentsOf: $0) }
                try await writer.write(tail)
            }
        }
        return compressed
    }

    /// How the head frames it: with a Content-Length, or chunked.
    public var announcedLength: RequestBodyLength {
        switch self.length {
        case .known(let count): .known(count)
        case .unknown: .unknown
        }
    }
}

/// A gzip encoder handed to one producer task.
/// @unchecked Sendable: only the producer that owns the writer uses it, one write at a time.
final class GzipEncoderBox: @unchecked Sendable {
    let encoder: GzipEncoder
    init(_ encoder: GzipEncoder) { self.encoder = encoder }
}
