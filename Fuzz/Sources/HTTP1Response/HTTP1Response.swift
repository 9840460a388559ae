import FuzzSupport
import HTTPTypes
@_spi(Benchmarks) @testable import SalvoCore
@_spi(Benchmarks) @testable import SalvoTransport

/// The HTTP/1 response decoder (llhttp, the head's field records, header limits, the
/// keep-alive decision, chunked bodies, head repair) fed a byte stream of one or more
/// pipelined responses.
///
/// Input: an options byte, the cut points (see ``Splits``), then the bytes a server sent.
/// Invariants:
/// - no crash, hang or unbounded growth, whatever the bytes (a bad response is a thrown
///   `TransportError`);
/// - fed in pieces, the stream gives exactly what it gives fed whole: the same heads, body
///   bytes, trailers, keep-alive decisions and ends, and the same error code;
/// - each head's field records answer lookups as the `HTTPFields` built from them do;
/// - the decoder never reports more bytes consumed than it was given.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP1Response(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let options = ResponseStreamOptions(input.byte())
    let splits = Splits(from: &input)
    let stream = input.rest()

    let whole = ResponseStreamRun.run(pieces: stream.isEmpty ? [] : [stream], options: options)
    let pieces = splits.pieces(of: stream)
    let split = ResponseStreamRun.run(pieces: pieces, options: options)
    showIfAsked("whole: \(whole)\nin pieces \(pieces.map(\.count)): \(split)")
    fuzzCheck(whole == split, "fed whole: \(whole)\nfed in \(pieces.count) pieces \(pieces.map(\.count)): \(split)")
    return 0
}
