import FuzzSupport
@_spi(Benchmarks) @testable import SalvoCore
@_spi(Benchmarks) import SalvoTransport

/// Content decoding (gzip, deflate — zlib-wrapped or raw —, chains of two) over streams the
/// fuzzer writes, streams made by compressing its bytes, cut short, and bombs.
///
/// Input: a mode byte, a limits byte, the cut points, a pause byte, then the payload.
/// Invariants:
/// - garbage gives a thrown `TransportError`, never a crash or a hang;
/// - the sink never gets more than `maxDecodedSize` bytes, and a body that decodes past the
///   ratio limit is refused (a bomb ends in `.decodedBodyTooLarge` or
///   `.compressionRatioExceeded`, never in memory exhaustion);
/// - fed in pieces with the sink pausing, a stream decodes to what it decodes to whole, or
///   both fail;
/// - a stream compressed here decodes back to its bytes; cut short, it is an error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContentDecoding(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    let limitsByte = input.byte()
    let splits = Splits(from: &input)
    let pauseEvery = Int(input.byte() % 4)
    let payload = input.rest()

    switch mode % 4 {
    case 0:
        // The payload is the encoded body, under a coding the next byte chose.
        let coding = DecodingRun.codings[Int(mode / 4) % DecodingRun.codings.count]
        checkArbitrary(payload, coding: coding, limits: DecodingRun.limits(limitsByte), splits: splits, pauseEvery: pauseEvery)
    case 1:
        // The payload compressed here: it must come back, and cut short it must not.
        checkRoundTrip(payload, format: Int(mode / 4), cut: Int(limitsByte), splits: splits, pauseEvery: pauseEvery)
    case 2:
        // A bomb, fed in the payload's pieces: it must hit a limit.
        checkBomb(Int(mode / 4) % Bombs.all.count, splits: splits, pauseEvery: pauseEvery)
    default:
        // A Content-Encoding value: parsed or refused, never a crash.
        let value = String(decoding: payload, as: UTF8.self)
        if let codings = try? ContentCoding.parse(value) {
            fuzzCheck(codings.count <= 2, "\(codings.count) codings accepted from \"\(value)\"")
        }
    }
    return 0
}

func checkArbitrary(_ payload: [UInt8], coding: String, limits: ContentDecoder.Limits, splits: Splits, pauseEvery: Int) {
    let whole = DecodingRun.decode(coding, [payload], limits: limits, pauseEvery: 0)
    let pieces = splits.pieces(of: payload)
    let split = DecodingRun.decode(coding, pieces, limits: limits, pauseEvery: pauseEvery)
    for run in [whole, split] {
        fuzzCheck(run.delivered <= limits.maxDecodedSize, "\(run.delivered) bytes delivered past the limit of \(limits.maxDecodedSize)")
        if run.delivered > limits.ratioFloor {
            fuzzCheck(run.delivered <= limits.maxRatio * max(payload.count, 1) + Inflater.outputSize,
                      "\(payload.count) bytes decoded to \(run.delivered), past the ratio \(limits.maxRatio)")
        }
    }
    switch (whole.result, split.result) {
    case (.success(let a), .success(let b)):
        fuzzCheck(a == b, "\(coding): whole gave \(a.count) bytes, pieces \(pieces.map(\.count)) gave \(b.count)")
    case (.failure, .failure):
        break   // where the error shows depends on the pieces; that it shows does not
    default:
        fuzzCheck(false, "\(coding): whole \(whole.result.summary), in pieces \(pieces.map(\.count)) with pauses every \(pauseEvery): \(split.result.summary)")
    }
}

func checkRoundTrip(_ payload: [UInt8], format: Int, cut: Int, splits: Splits, pauseEvery: Int) {
    let (coding, encoded) = Compressed.make(payload, format: format)
    let unlimited = ContentDecoder.Limits(maxDecodedSize: .max, maxRatio: .max, ratioFloor: .max)
    let run = DecodingRun.decode(coding, splits.pieces(of: encoded), limits: unlimited, pauseEvery: pauseEvery)
    guard case .success(let decoded) = run.result else {
        fuzzCheck(false, "\(coding) of \(payload.count) bytes did not decode: \(run.result.summary)")
        return
    }
    fuzzCheck(decoded == payload, "\(coding) of \(payload.count) bytes decoded to \(decoded.count) other bytes")

    // Cut short (anywhere but at 0, which is an empty body): never taken for the whole.
    let length = 1 + cut * (encoded.count - 1) / 256
    guard length < encoded.count else { return }
    let truncated = Array(encoded[..<length])
    let cutRun = DecodingRun.decode(coding, splits.pieces(of: truncated), limits: unlimited, pauseEvery: pauseEvery)
    if case .success = cutRun.result {
        fuzzCheck(false, "\(coding) cut to \(length) of \(encoded.count) bytes was accepted")
    }
}

func checkBomb(_ index: Int, splits: Splits, pauseEvery: Int) {
    let bomb = Bombs.all[index]
    let pieces = splits.pieces(of: bomb.encoded)
    // A size limit.
    let sized = ContentDecoder.Limits(maxDecodedSize: 256 * 1024, maxRatio: .max, ratioFloor: .max)
    let bySize = DecodingRun.decode(bomb.coding, pieces, limits: sized, pauseEvery: pauseEvery)
    fuzzCheck(bySize.failure == .decodedBodyTooLarge, "bomb \(index) under a size limit: \(bySize.result.summary)")
    fuzzCheck(bySize.delivered <= sized.maxDecodedSize, "bomb \(index) delivered \(bySize.delivered) bytes")
    // The default ratio limit alone.
    let ratio = DecodingRun.decode(bomb.coding, pieces, limits: ContentDecoder.Limits(), pauseEvery: pauseEvery)
    fuzzCheck(ratio.failure == .compressionRatioExceeded, "bomb \(index) under the ratio limit: \(ratio.result.summary)")
}
