import HTTPTypes
import SalvoCore

/// How a body goes on the wire when the command line says so, as curl honours it: framing
/// fields given with -H, and the `Expect: 100-continue` curl adds before an upload.
enum UploadFraming {
    /// curl 7.88 asks before a POST body over 1 MiB (and before any PUT upload with content).
    static let expectThreshold = 1 << 20

    /// `body` shaped by the -H framing in `fields` (which loses those fields: the engine
    /// writes the framing itself), and whether to ask before sending it, as curl would
    /// (`expectContinue`: the engine writes the Expect after the framing, where curl does).
    /// - `Transfer-Encoding: chunked` sends the body chunked, whatever its length;
    /// - `Content-Length: N` with `-H "Transfer-Encoding:"` gives a streamed body (stdin) that
    ///   length; otherwise a body's own length stands (a stated one that differs is not sent:
    ///   two framings would be a smuggling shape).
    static func shape(_ body: HTTPBody?, fields: inout HTTPFields, removed: Set<String>,
                      isUpload: Bool) -> (body: HTTPBody?, expectContinue: Bool) {
        let wantsChunked = fields[.transferEncoding].map { $0.lowercased().contains("chunked") } ?? false
        let stated = fields[.contentLength].flatMap { Int($0[...].trimmingOWS) }
        fields[.transferEncoding] = nil
        fields[.contentLength] = nil
        guard var body else { return (nil, false) }
        if wantsChunked, case .known = body.length {
            body = Self.withLength(nil, of: body)
        } else if let stated, stated >= 0, removed.contains("transfer-encoding"), case .unknown = body.length {
            body = Self.withLength(stated, of: body)
        }
        let asks: Bool
        switch body.length {
        case .known(let count): asks = isUpload ? count > 0 : count > Self.expectThreshold
        case .unknown: asks = isUpload
        }
        return (body, asks && fields[.expect] == nil && !removed.contains("expect"))
    }

    /// The same bytes with another framing: `length` nil sends them chunked.
    private static func withLength(_ length: Int?, of body: HTTPBody) -> HTTPBody {
        var shaped: HTTPBody
        switch body.content {
        case .bytes(let bytes):
            shaped = .producer(length: length, replayable: true) { writer in
                if !bytes.isEmpty { try await writer.write(bytes) }
            }
        case .stream(_, let replayable, let produce):
            shaped = .producer(length: length, replayable: replayable, produce)
        }
        shaped.contentType = body.contentType
        return shaped
    }
}

