import FuzzSupport
@testable import Salvo
@testable import SalvoTransport

/// The line splitters of streamed bodies: plain lines, JSON Lines and Server-Sent Events,
/// read through the public sequences from a body that arrives in chunks.
///
/// Input: a mode byte, a limit byte, the cut points, then the body.
/// Invariants:
/// - no crash or hang, whatever the bytes; a line or event over the limit is a thrown
///   `.bodyTooLarge`, a bad JSON line a thrown `.decodingFailed`;
/// - cut into chunks anywhere, a body gives the same lines, values or events, and the same
///   error at the same place (JSON Lines errors name the same line), as the body in one chunk.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEventStreams(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let mode = input.byte()
    // Small limits reach the over-long paths; large ones let long inputs through.
    let limit = 1 + Int(input.byte()) * (mode & 0x80 != 0 ? 64 : 1)
    let splits = Splits(from: &input)
    let body = input.rest()
    let pieces = splits.pieces(of: body)
    let whole = StreamReading.read(chunks: body.isEmpty ? [] : [body], mode: mode, limit: limit)
    let chunked = StreamReading.read(chunks: pieces, mode: mode, limit: limit)
    fuzzCheck(whole == chunked, "whole: \(whole)\nin chunks \(pieces.map(\.count)): \(chunked)")
    return 0
}

/// Everything a reader of one kind got from a body, as a comparable value.
struct StreamReading: Equatable, Sendable {
    var items: [String] = []
    var failure: String?

    static func read(chunks: [[UInt8]], mode: UInt8, limit: Int) -> StreamReading {
        runBlocking {
            let body = ResponseBody(source: BufferedBodySource(chunks: chunks, trailers: nil))
            var reading = StreamReading()
            do throws(ClientError) {
                switch mode % 3 {
                case 0:
                    for try await line in TextLines(body: body, maxLineLength: limit) {
                        reading.items.append(line)
                    }
                case 1:
                    let lines = JSONLines<JSONValue>(lines: TextLines(body: body, maxLineLength: limit), coders: Coders())
                    for try await value in lines {
                        reading.items.append(value.description)
                    }
                default:
                    for try await event in ServerSentEvents(body: body, maxEventSize: limit) {
                        reading.items.append("id \(String(describing: event.id)) event \(event.event) data \(event.data.debugDescription) retry \(String(describing: event.retry))")
                    }
                }
            } catch {
                reading.failure = "\(error.code): \(error.detail ?? "")"
            }
            return reading
        }
    }
}
