import CLLHTTP
import HTTPTypes

/// What a response decoder tells its connection went wrong, and the one framing rule it checks
/// by hand: the errors are built here from what the decoder and llhttp saw.
extension ResponseDecoder {
    /// The error for a connection that ended at this point of the response.
    func endOfStreamError() -> TransportError {
        if self.bytesOfCurrentResponse == 0 || (self.interimBytesPending && !self.sawStatus) {
            return TransportError(.emptyResponse, phase: .readHead)
        }
        if self.inBody {
            return TransportError(.truncatedBody, phase: .readBody, detail: "the connection closed before the end of the body")
        }
        return TransportError(.truncatedHead, phase: .readHead, detail: "the connection closed in the middle of the response head")
    }

    func protocolError(_ detail: String?) -> TransportError {
        let errno = llhttp_get_errno(self.parser)
        if detail == nil && !self.sawStatus
            && (errno == HPE_INVALID_CONSTANT || errno == HPE_INVALID_VERSION || errno == HPE_INVALID_STATUS) {
            let reason = llhttp_get_error_reason(self.parser).map { String(cString: $0) } ?? "bad status line"
            return TransportError(.notHTTPResponse, phase: .readHead, detail: reason)
        }
        var text = detail
        if text == nil {
            let name = llhttp_errno_name(llhttp_get_errno(self.parser)).map { String(cString: $0) } ?? "HPE"
            let reason = llhttp_get_error_reason(self.parser).map { String(cString: $0) } ?? "parse error"
            text = "\(reason) (\(name))"
        }
        return TransportError(.invalidResponse, phase: self.inBody ? .readBody : .readHead, detail: text)
    }

    /// Whether a Transfer-Encoding value is exactly "chunked" (any case, optional spaces);
    /// several Transfer-Encoding fields arrive joined with ", " by HTTPFields.
    static func isChunkedOnly(_ value: String) -> Bool {
        value.split(separator: ",").allSatisfy { coding in
            let trimmed = coding.drop(while: { $0 == " " || $0 == "\t" })
            return trimmed.reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed()
                .map { $0.lowercased() }.joined() == "chunked"
        }
    }
}
