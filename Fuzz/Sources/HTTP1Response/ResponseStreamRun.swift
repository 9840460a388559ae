import FuzzSupport
import HTTPTypes
@_spi(Benchmarks) @testable import SalvoCore
@_spi(Benchmarks) @testable import SalvoTransport

/// How a stream is read: drawn from one byte of the input.
struct ResponseStreamOptions {
    /// The first response answers a HEAD request (no body whatever its head says).
    var firstIsHead: Bool
    /// Heads are kept as they arrived (the path tools that print heads take).
    var capturingHeads: Bool
    /// Small limits, so that the fuzzer reaches them: 512 bytes and 8 fields of head.
    var limits: ResponseHeadLimits
    /// The connection closes after the last byte (`finish()`), as opposed to staying open.
    var closes: Bool

    init(_ byte: UInt8) {
        self.firstIsHead = byte & 1 != 0
        self.capturingHeads = byte & 2 != 0
        self.limits = byte & 4 != 0 ? ResponseHeadLimits(maxHeaderBytes: 512, maxHeaderCount: 8) : ResponseHeadLimits()
        self.closes = byte & 8 != 0
    }
}

/// What a decoder reported over a whole stream, as a comparable value.
struct ResponseStreamRun: Equatable, CustomStringConvertible {
    enum Event: Equatable {
        case informational(Int)
        case head(Int, [String])
        case body([UInt8])
        case end(trailers: [String]?, keepAlive: Bool)
        case complete
    }

    var events: [Event] = []
    /// The error that ended the stream, if one did.
    var failure: TransportError.Code?
    /// Whether the close finished a response (a close-delimited body).
    var closeCompleted = false

    var description: String { "\(self.events) failure: \(String(describing: self.failure)) closeCompleted: \(self.closeCompleted)" }

    /// Pipelined responses at most: a stream of many tiny ones says nothing more.
    static let maxResponses = 64

    static func run(pieces: [[UInt8]], options: ResponseStreamOptions) -> ResponseStreamRun {
        let decoder = ResponseDecoder(limits: options.limits)
        let recorder = Recorder()
        decoder.delegate = recorder
        decoder.prepareForNextResponse(expectNoBody: options.firstIsHead, capturingHeads: options.capturingHeads)
        var responses = 0
        do throws(TransportError) {
            pieceLoop: for piece in pieces {
                var offset = 0
                while offset < piece.count {
                    let result = try piece.withBytes { (bytes) throws(TransportError) -> ResponseDecoder.FeedResult in
                        try decoder.feed(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                    }
                    guard case .complete(let consumed) = result else { break }
                    fuzzCheck(consumed >= 0 && consumed <= piece.count - offset,
                              "consumed \(consumed) of \(piece.count - offset) bytes")
                    recorder.run.events.append(.complete)
                    offset += consumed
                    responses += 1
                    if responses >= Self.maxResponses { break pieceLoop }
                    decoder.prepareForNextResponse(expectNoBody: false, capturingHeads: options.capturingHeads)
                }
            }
            if options.closes && responses < Self.maxResponses {
                recorder.run.closeCompleted = try decoder.finish()
            }
        } catch {
            recorder.run.failure = error.code
        }
        return recorder.run
    }
}

/// Records what the decoder reports, checking each head's records against its fields.
final class Recorder: ResponseDecoderDelegate {
    var run = ResponseStreamRun()

    func decoderReceivedInformational(_ head: HTTPResponse) {
        self.run.events.append(.informational(head.status.code))
    }

    func decoderReceivedHead(_ head: ParsedHead) -> Bool {
        let built = head.response.headerFields
        for name in Set(built.map(\.name)) {
            let values = built[values: name]
            fuzzCheck(head.fields.contains(name), "records lack \(name)")
            fuzzCheck(head.fields.firstValue(for: name) == values.first,
                      "first \(name): records \(String(describing: head.fields.firstValue(for: name))), fields \(values)")
            fuzzCheck(head.fields.joinedValues(for: name) == values.joined(separator: ", "),
                      "joined \(name): records \(String(describing: head.fields.joinedValues(for: name))), fields \(values)")
        }
        self.run.events.append(.head(head.status.code, built.map { "\($0.name.rawName): \($0.value)" }))
        return true
    }

    func decoderReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // Adjacent pieces merged: where a body was cut says nothing.
        if case .body(let previous)? = self.run.events.last {
            self.run.events[self.run.events.count - 1] = .body(previous + Array(bytes))
        } else {
            self.run.events.append(.body(Array(bytes)))
        }
        return true
    }

    func decoderReceivedEnd(trailers: HTTPFields?, keepAlive: Bool) {
        self.run.events.append(.end(trailers: trailers.map { $0.map { "\($0.name.rawName): \($0.value)" } }, keepAlive: keepAlive))
    }
}
