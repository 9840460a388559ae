import FuzzSupport
@_spi(Benchmarks) @testable import SalvoCore
@_spi(Benchmarks) import SalvoTransport

/// One body decoded through a ``ContentDecoder`` as a connection drives it: pieces in,
/// a sink that may pause, `resume` until the held input is gone, `finish` at the end.
struct DecodingRun {
    var result: Result<[UInt8], TransportError>
    /// Bytes the sink was handed, kept or not.
    var delivered: Int

    var failure: TransportError.Code? {
        if case .failure(let error) = self.result { return error.code }
        return nil
    }

    /// Content-Encoding values the fuzzer picks from for an arbitrary body.
    static let codings = ["gzip", "deflate", "x-gzip, identity", "deflate, gzip", "gzip, gzip", "gzip, deflate"]

    /// Limits small enough to reach: 1–256 KiB decoded, ratio 2–65×, checked past 4–64 KiB.
    static func limits(_ byte: UInt8) -> ContentDecoder.Limits {
        ContentDecoder.Limits(maxDecodedSize: 1024 * (1 + Int(byte & 0xFF) % 256),
                              maxRatio: 2 + Int(byte >> 2),
                              ratioFloor: 4096 * (1 + Int(byte & 0x0F)))
    }

    /// Bytes kept at most; a body may be decoded (and counted) past it.
    static let kept = 4 << 20

    static func decode(_ coding: String, _ pieces: [[UInt8]], limits: ContentDecoder.Limits, pauseEvery: Int) -> DecodingRun {
        var output: [UInt8] = []
        var delivered = 0
        var calls = 0
        let sink: ContentDecoder.Sink = { piece in
            delivered += piece.count
            if output.count < Self.kept { output.append(contentsOf: piece) }
            calls += 1
            return pauseEvery == 0 || calls % pauseEvery != 0
        }
        do throws(TransportError) {
            guard let decoder = try ContentDecoder.make(contentEncoding: coding, limits: limits) else {
                return DecodingRun(result: .success(pieces.flatMap { $0 }), delivered: 0)
            }
            for piece in pieces {
                let done = try piece.withBytes { (bytes) throws(TransportError) -> Bool in try decoder.decode(bytes, into: sink) }
                if !done {
                    var resumes = 0
                    while try !decoder.resume(into: sink) {
                        resumes += 1
                        // Each resume hands on at least one buffer of output or takes input;
                        // this many without an end is a decoder that stopped moving.
                        fuzzCheck(resumes < 1 << 16, "resume never ends")
                    }
                }
            }
            try decoder.finish(into: sink)
            return DecodingRun(result: .success(output), delivered: delivered)
        } catch {
            return DecodingRun(result: .failure(error), delivered: delivered)
        }
    }
}

extension Result<[UInt8], TransportError> {
    var summary: String {
        switch self {
        case .success(let bytes): "\(bytes.count) bytes"
        case .failure(let error): "\(error.code) (\(error.detail ?? ""))"
        }
    }
}
