import SalvoTransport
import CZlib

/// Streaming gzip compression, for request bodies (`HTTPBody.gzipped()`).
/// Not thread-safe: one producer uses it.
@_spi(Benchmarks) public final class GzipEncoder {
    private var stream = z_stream()
    private let output: UnsafeMutableRawBufferPointer

    public init(level: Int32 = 6) throws(TransportError) {
        self.output = .allocate(byteCount: 64 * 1024, alignment: 16)
        guard salvo_deflateInit2(&self.stream, level, 16 + 15) == Z_OK else {
            self.output.deallocate()
            throw TransportError(.requestBodyFailed, phase: .request, detail: "zlib cannot start compressing")
        }
    }

    deinit {
        deflateEnd(&self.stream)
        self.output.deallocate()
    }

    /// Compresses `input`, handing compressed pieces to `sink` as they come.
    public func compress(_ input: UnsafeRawBufferPointer, into sink: (UnsafeRawBufferPointer) -> Void) {
        guard let base = input.baseAddress, !input.isEmpty else { return }
        self.run(UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self)), input.count, flush: Z_NO_FLUSH, sink)
    }

    /// Ends the gzip stream (trailer included).
    public func finish(into sink: (UnsafeRawBufferPointer) -> Void) {
        self.run(nil, 0, flush: Z_FINISH, sink)
    }

    private func run(_ input: UnsafeMutablePointer<Bytef>?, _ count: Int, flush: Int32, _ sink: (UnsafeRawBufferPointer) -> Void) {
        self.stream.next_in = input
        self.stream.avail_in = uInt(count)
        while true {
            self.stream.next_out = self.output.baseAddress!.assumingMemoryBound(to: Bytef.self)
            self.stream.avail_out = uInt(self.output.count)
            let status = deflate(&self.stream, flush)
            let produced = self.output.count - Int(self.stream.avail_out)
            if produced > 0 { sink(UnsafeRawBufferPointer(start: self.output.baseAddress, count: produced)) }
            if status == Z_STREAM_END { return }
            // Done with this input once zlib had room to spare.
            if flush == Z_NO_FLUSH && self.stream.avail_in == 0 && self.stream.avail_out > 0 { return }
            if status != Z_OK && status != Z_BUF_ERROR { return }
        }
    }

    /// `bytes` as one gzip member.
    public static func gzip(_ bytes: [UInt8], level: Int32 = 6) -> [UInt8] {
        guard let encoder = try? GzipEncoder(level: level) else { return [] }
        var out: [UInt8] = []
        bytes.withUnsafeBytes { encoder.compress($0) { out.append(contentsOf: $0) } }
        encoder.finish { out.append(contentsOf: $0) }
        return out
    }
}
