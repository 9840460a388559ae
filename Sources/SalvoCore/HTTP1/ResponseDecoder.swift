import SalvoTransport
import CLLHTTP
import HTTPTypes

/// Receives what a ``ResponseDecoder`` parses. Called synchronously from ``ResponseDecoder/feed(_:)``.
@_spi(Benchmarks) public protocol ResponseDecoderDelegate: AnyObject {
    /// A 1xx response (100 Continue, 103 Early Hints) that precedes the final one.
    func decoderReceivedInformational(_ head: HTTPResponse)
    /// The final response head. Return false to stop parsing (the delegate recorded why).
    func decoderReceivedHead(_ head: HTTPResponse) -> Bool
    /// Body bytes, valid only during the call (they point into the read buffer).
    /// Return false to stop parsing (the delegate recorded why).
    func decoderReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The end of the message, with trailer fields if a chunked body had any.
    func decoderReceivedEnd(trailers: HTTPFields?, keepAlive: Bool)
}

/// Limits on what a server may send in a response head.
public struct ResponseHeadLimits: Sendable, Hashable {
    /// The most bytes of status line and header fields accepted (default 64 KiB).
    public var maxHeaderBytes: Int
    /// The most header fields accepted (default 1000).
    public var maxHeaderCount: Int

    public init(maxHeaderBytes: Int = 64 * 1024, maxHeaderCount: Int = 1000) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
    }
}

/// An HTTP/1.x response parser over llhttp, strict (no lenient flags), one per connection.
///
/// Theory of operation: bytes go in through ``feed(_:)`` and llhttp calls back for each
/// piece of the message; the callbacks reach this object through the parser's `data`
/// pointer without retaining it. Header names and values are gathered into scratch buffers
/// (a field can arrive split over many reads) and turned into `HTTPField`s once complete;
/// body bytes are handed on in place. Interim 1xx responses are reported and skipped.
/// After the final response's end the parser pauses, so ``feed(_:)`` tells the caller how
/// many bytes belonged to this response: anything after it is either the next pipelined
/// response or garbage, which only the connection can tell apart.
///
/// Framing comes from llhttp: Content-Length, chunked (extensions ignored, trailers kept),
/// or read-until-close (finished by ``finish()``); no body for HEAD (``expectNoBody``),
/// 1xx, 204 and 304.
@_spi(Benchmarks) public final class ResponseDecoder {
    public enum FeedResult: Equatable {
        /// Every byte was consumed; the response is not complete yet.
        case needMore
        /// The final response ended after `consumed` bytes of this feed.
        case complete(consumed: Int)
    }

    let limits: ResponseHeadLimits
    public unowned(unsafe) var delegate: (any ResponseDecoderDelegate)?
    /// Set before the response to a HEAD request: its head announces a body that never comes.
    var expectNoBody = false

    private let parser: UnsafeMutablePointer<llhttp_t>

    /// The HTTP version of the response being parsed (valid once its status line is).
    var version: HTTPVersion {
        HTTPVersion(major: Int(self.parser.pointee.http_major), minor: Int(self.parser.pointee.http_minor))
    }
    /// The callbacks are the same for every decoder, so one settings block serves them all.
    /// nonisolated(unsafe): written once, by the lazy initializer, and only read after.
    nonisolated(unsafe) private static let sharedSettings: UnsafeMutablePointer<llhttp_settings_t> = {
        let settings = UnsafeMutablePointer<llhttp_settings_t>.allocate(capacity: 1)
        llhttp_settings_init(settings)
        ResponseDecoder.installCallbacks(settings)
        return settings
    }()

    // Per-message state.
    private var fieldName: [UInt8] = []
    private var fieldValue: [UInt8] = []
    private var fields = HTTPFields()
    private var reason: [UInt8] = []
    private var headerBytes = 0
    private var headerCount = 0
    private var inTrailers = false
    private var trailerFields: HTTPFields? = nil
    private var sawFinalHead = false
    private var failure: HTTPClientError? = nil
    /// Whether the current message got as far as its status line (llhttp calls on_status
    /// only after a valid "HTTP/x.y NNN ").
    private var sawStatus = false
    /// Whether the head has a Transfer-Encoding field (checked once the head is complete).
    private var sawTransferEncoding = false
    /// Set when an interim response just ended: the bytes counted so far were only 1xx.
    private var interimBytesPending = false
    /// Bytes seen since the current response began (0: nothing of it yet).
    private(set) var bytesOfCurrentResponse = 0
    /// True between the final head and the end of its body.
    private(set) var inBody = false

    public init(limits: ResponseHeadLimits = ResponseHeadLimits()) {
        self.limits = limits
        self.parser = .allocate(capacity: 1)
        llhttp_init(self.parser, HTTP_RESPONSE, Self.sharedSettings)
        self.parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        self.parser.deallocate()
    }

    /// Prepares for the next response on the same connection (after `.complete`).
    public func prepareForNextResponse(expectNoBody: Bool) {
        self.expectNoBody = expectNoBody
        self.bytesOfCurrentResponse = 0
        self.sawFinalHead = false
        self.inBody = false
        self.interimBytesPending = false
        if llhttp_get_errno(self.parser) == HPE_PAUSED {
            llhttp_resume(self.parser)
        }
    }

    /// Parses `bytes`. Throws a typed error on anything that is not a valid HTTP/1.x response.
    public func feed(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) -> FeedResult {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .needMore }
        self.bytesOfCurrentResponse &+= bytes.count
        let start = base.assumingMemoryBound(to: CChar.self)
        let rc = llhttp_execute(self.parser, start, bytes.count)
        switch rc {
        case HPE_OK:
            return .needMore
        case HPE_PAUSED:
            let position = llhttp_get_error_pos(self.parser)
            let consumed = position.map { start.distance(to: $0) } ?? bytes.count
            self.bytesOfCurrentResponse -= bytes.count - consumed
            return .complete(consumed: consumed)
        case HPE_PAUSED_UPGRADE:
            throw self.protocolError("unexpected 101 Switching Protocols: no upgrade was requested")
        default:
            if let failure = self.failure { throw failure }
            throw self.protocolError(nil)
        }
    }

    /// Whether the current response's body ends only when the connection does.
    var bodyEndsAtClose: Bool { self.inBody && llhttp_message_needs_eof(self.parser) != 0 }

    /// Tells the parser the connection ended. A close-delimited body ends here; anything else
    /// unfinished is an error saying what was cut short.
    public func finish() throws(HTTPClientError) -> Bool {
        if llhttp_get_errno(self.parser) == HPE_PAUSED { return false }
        let rc = llhttp_finish(self.parser)
        if rc == HPE_OK || rc == HPE_PAUSED {
            // Complete when a close-delimited body just ended (on_message_complete paused).
            return rc == HPE_PAUSED
        }
        throw self.endOfStreamError()
    }

    /// The error for a connection that ended at this point of the response.
    func endOfStreamError() -> HTTPClientError {
        if self.bytesOfCurrentResponse == 0 || (self.interimBytesPending && !self.sawStatus) {
            return HTTPClientError(.emptyResponse, phase: .readHead)
        }
        if self.inBody {
            return HTTPClientError(.truncatedBody, phase: .readBody, detail: "the connection closed before the end of the body")
        }
        return HTTPClientError(.remoteClosed, phase: .readHead, detail: "the connection closed in the middle of the response head")
    }

    private func protocolError(_ detail: String?) -> HTTPClientError {
        let errno = llhttp_get_errno(self.parser)
        if detail == nil && !self.sawStatus
            && (errno == HPE_INVALID_CONSTANT || errno == HPE_INVALID_VERSION || errno == HPE_INVALID_STATUS) {
            let reason = llhttp_get_error_reason(self.parser).map { String(cString: $0) } ?? "bad status line"
            return HTTPClientError(.notHTTPResponse, phase: .readHead, detail: reason)
        }
        var text = detail
        if text == nil {
            let name = llhttp_errno_name(llhttp_get_errno(self.parser)).map { String(cString: $0) } ?? "HPE"
            let reason = llhttp_get_error_reason(self.parser).map { String(cString: $0) } ?? "parse error"
            text = "\(reason) (\(name))"
        }
        return HTTPClientError(.invalidResponse, phase: self.inBody ? .readBody : .readHead, detail: text)
    }

    // MARK: Callbacks

    @inline(__always)
    private static func decoder(_ parser: UnsafeMutablePointer<llhttp_t>?) -> ResponseDecoder {
        Unmanaged<ResponseDecoder>.fromOpaque(parser!.pointee.data).takeUnretainedValue()
    }

    private static func installCallbacks(_ s: UnsafeMutablePointer<llhttp_settings_t>) {
        s.pointee.on_message_begin = { p in ResponseDecoder.decoder(p).messageBegin() }
        s.pointee.on_status = { p, at, length in ResponseDecoder.decoder(p).status(at, length) }
        s.pointee.on_header_field = { p, at, length in ResponseDecoder.decoder(p).headerField(at, length) }
        s.pointee.on_header_value = { p, at, length in ResponseDecoder.decoder(p).headerValue(at, length) }
        s.pointee.on_header_value_complete = { p in ResponseDecoder.decoder(p).headerValueComplete() }
        s.pointee.on_headers_complete = { p in ResponseDecoder.decoder(p).headersComplete() }
        s.pointee.on_body = { p, at, length in ResponseDecoder.decoder(p).body(at, length) }
        s.pointee.on_message_complete = { p in ResponseDecoder.decoder(p).messageComplete() }
    }

    private static let proceed: Int32 = 0
    private static let userError: Int32 = -1

    private func messageBegin() -> Int32 {
        self.fields = HTTPFields()
        // One allocation for a typical head instead of a few as the array grows.
        self.fields.reserveCapacity(12)
        self.reason.removeAll(keepingCapacity: true)
        self.fieldName.removeAll(keepingCapacity: true)
        self.fieldValue.removeAll(keepingCapacity: true)
        self.headerBytes = 0
        self.headerCount = 0
        self.inTrailers = false
        self.trailerFields = nil
        self.sawStatus = false
        self.sawTransferEncoding = false
        return Self.proceed
    }

    private func countHeaderBytes(_ length: Int) -> Bool {
        self.headerBytes += length
        if self.headerBytes > self.limits.maxHeaderBytes {
            self.failure = HTTPClientError(
                .headerTooLarge, phase: self.inTrailers ? .readBody : .readHead,
                detail: "more than \(self.limits.maxHeaderBytes) bytes of header fields")
            return false
        }
        return true
    }

    private func status(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        self.sawStatus = true
        guard self.countHeaderBytes(length), let at else { return Self.userError }
        self.reason.append(contentsOf: UnsafeRawBufferPointer(start: at, count: length))
        return Self.proceed
    }

    private func headerField(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        guard self.countHeaderBytes(length), let at else { return Self.userError }
        self.fieldName.append(contentsOf: UnsafeRawBufferPointer(start: at, count: length))
        return Self.proceed
    }

    private func headerValue(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        guard self.countHeaderBytes(length), let at else { return Self.userError }
        self.fieldValue.append(contentsOf: UnsafeRawBufferPointer(start: at, count: length))
        return Self.proceed
    }

    private func headerValueComplete() -> Int32 {
        defer {
            self.fieldName.removeAll(keepingCapacity: true)
            self.fieldValue.removeAll(keepingCapacity: true)
        }
        self.headerCount += 1
        if self.headerCount > self.limits.maxHeaderCount {
            self.failure = HTTPClientError(
                .tooManyHeaders, phase: self.inTrailers ? .readBody : .readHead,
                detail: "more than \(self.limits.maxHeaderCount) header fields")
            return Self.userError
        }
        // llhttp has checked the name is a token; the name keeps its case as sent.
        guard let name = KnownFieldNames.lookup(self.fieldName) ?? HTTPField.Name(String(decoding: self.fieldName, as: UTF8.self)) else {
            self.failure = HTTPClientError(.invalidResponse, phase: .readHead, detail: "invalid header field name")
            return Self.userError
        }
        // Trailing whitespace is not part of a field value (RFC 9110 §5.5); llhttp strips the leading.
        var end = self.fieldValue.count
        while end > 0, self.fieldValue[end - 1] == 0x20 || self.fieldValue[end - 1] == 0x09 { end -= 1 }
        let value = self.fieldValue[..<end]
        // ASCII values (nearly all) become a String directly; others keep their raw bytes
        // (obs-text need not be UTF-8), cleaned only of what llhttp would not let through.
        let field = value.allSatisfy({ $0 < 0x80 })
            ? HTTPField(name: name, value: String(decoding: value, as: UTF8.self))
            : HTTPField(name: name, lenientValue: value)
        if name == .transferEncoding { self.sawTransferEncoding = true }
        if self.inTrailers {
            if self.trailerFields == nil { self.trailerFields = HTTPFields() }
            self.trailerFields!.append(field)
        } else {
            self.fields.append(field)
        }
        return Self.proceed
    }

    private func headersComplete() -> Int32 {
        let code = Int(self.parser.pointee.status_code)
        let status = HTTPResponse.Status(code: code, reasonPhrase: String(decoding: self.reason, as: UTF8.self))
        let head = HTTPResponse(status: status, headerFields: self.fields)
        self.fields = HTTPFields()
        if (100..<200).contains(code) {
            if code == 101 {
                // A protocol switch this client never asked for; llhttp reports it as an upgrade.
                return Self.proceed
            }
            self.delegate?.decoderReceivedInformational(head)
            // The interim response's fields do not count against the final one's limits.
            self.headerBytes = 0
            self.headerCount = 0
            return Self.proceed
        }
        if self.sawTransferEncoding, let codings = Self.transferCodings(in: head.headerFields), !Self.isChunkedOnly(codings) {
            // RFC 9112 §6.1: only chunked is understood here; decoding gzip or deflate
            // transfer codings is left to the caller no more than it is to curl.
            self.failure = HTTPClientError(.unsupportedEncoding, phase: .readHead,
                                           detail: "Transfer-Encoding: \(codings)")
            return Self.userError
        }
        self.sawFinalHead = true
        self.inBody = true
        self.inTrailers = true
        if let delegate = self.delegate, !delegate.decoderReceivedHead(head) { return Self.userError }
        // 1 tells llhttp that this response has no body whatever its head says: the answer
        // to HEAD, and 204 and 304, which never carry content (RFC 9110 §6.4.1) even when a
        // Content-Length describes the representation.
        return self.expectNoBody || code == 204 || code == 304 ? 1 : Self.proceed
    }

    /// Every Transfer-Encoding value, joined as a list.
    static func transferCodings(in fields: HTTPFields) -> String? {
        let values = fields.lazy.filter { $0.name == .transferEncoding }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
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

    private func body(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        guard let at else { return Self.proceed }
        if let delegate = self.delegate,
           !delegate.decoderReceivedBody(UnsafeRawBufferPointer(start: at, count: length)) {
            return Self.userError
        }
        return Self.proceed
    }

    private func messageComplete() -> Int32 {
        guard self.sawFinalHead else {
            // The end of an interim (1xx) response: the final one follows on the same stream.
            // Until its first byte, a close means "no response" (curl: empty reply).
            self.interimBytesPending = true
            self.sawStatus = false
            return Self.proceed
        }
        self.inBody = false
        let keepAlive = llhttp_should_keep_alive(self.parser) != 0
        self.delegate?.decoderReceivedEnd(trailers: self.trailerFields, keepAlive: keepAlive)
        self.trailerFields = nil
        return Int32(HPE_PAUSED.rawValue)
    }
}
