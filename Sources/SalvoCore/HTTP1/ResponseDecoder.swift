@_spi(Benchmarks) import SalvoTransport
import CLLHTTP
import HTTPTypes

/// Receives what a ``ResponseDecoder`` parses. Called synchronously from ``ResponseDecoder/feed(_:)``.
@_spi(Benchmarks) public protocol ResponseDecoderDelegate: AnyObject {
    /// A 1xx response (100 Continue, 103 Early Hints) that precedes the final one.
    func decoderReceivedInformational(_ head: HTTPResponse)
    /// The final response head, its fields still as bytes (``ParsedHead/response`` builds
    /// them). Return false to stop parsing (the delegate recorded why).
    func decoderReceivedHead(_ head: ParsedHead) -> Bool
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
/// pointer without retaining it. A head's fields are read from its bytes once llhttp has
/// accepted it whole (ResponseDecoder+HeadFields.swift; trailers come through llhttp's
/// field callbacks) and written into one buffer of records (``FieldRecords``), and a final
/// head is handed on with its fields still as bytes (``ParsedHead``): `HTTPFields` are
/// built only if someone reads them. Body bytes are handed on in place. Interim 1xx responses
/// are reported and skipped.
/// After the final response's end the parser pauses, so ``feed(_:)`` tells the caller how
/// many bytes belonged to this response: anything after it is either the next pipelined
/// response or garbage, which only the connection can tell apart.
///
/// A head llhttp refuses for a fault a recipient may accept is repaired
/// (ResponseDecoder+Repair.swift, ResponseHeadRepair.swift); heads can be kept as they
/// arrived for tools that show them (ResponseDecoder+RawHeads.swift).
///
/// Framing comes from llhttp: Content-Length, chunked (extensions ignored, trailers kept),
/// or read-until-close (finished by ``finish()``); no body for HEAD (``expectNoBody``),
/// 1xx, 204 and 304.
/// Stored properties are `@exclusivity(unchecked)`: the object is touched by its loop's thread
/// only, and no access to a property spans a call that could reach it again, so Swift's
/// dynamic exclusivity checks (12% of the API path's user CPU) buy nothing here.
@_spi(Benchmarks) public final class ResponseDecoder {
    public enum FeedResult: Equatable {
        /// Every byte was consumed; the response is not complete yet.
        case needMore
        /// The final response ended after `consumed` bytes of this feed.
        case complete(consumed: Int)
    }

    let limits: ResponseHeadLimits
    @exclusivity(unchecked) public unowned(unsafe) var delegate: (any ResponseDecoderDelegate)?
    /// Set before the response to a HEAD request: its head announces a body that never comes.
    @exclusivity(unchecked) var expectNoBody = false

    let parser: UnsafeMutablePointer<llhttp_t>

    /// The HTTP version of the response being parsed (valid once its status line is).
    var version: HTTPVersion {
        HTTPVersion(major: Int(self.parser.pointee.http_major), minor: Int(self.parser.pointee.http_minor))
    }
    /// The callbacks are the same for every decoder, so one settings block serves them all —
    /// two: a head's fields are read from its bytes once it is complete (no callback per
    /// field), a chunked body's trailers through the field callbacks. A parser switches to
    /// the second after each final head, and back at each message's start.
    /// nonisolated(unsafe): written once, by the lazy initializer, and only read after.
    nonisolated(unsafe) private static let headSettings: UnsafeMutablePointer<llhttp_settings_t> = {
        let settings = UnsafeMutablePointer<llhttp_settings_t>.allocate(capacity: 1)
        llhttp_settings_init(settings)
        ResponseDecoder.installCallbacks(settings)
        settings.pointee.on_header_field = nil
        settings.pointee.on_header_value = nil
        settings.pointee.on_header_value_complete = nil
        return settings
    }()
    nonisolated(unsafe) private static let trailerSettings: UnsafeMutablePointer<llhttp_settings_t> = {
        let settings = UnsafeMutablePointer<llhttp_settings_t>.allocate(capacity: 1)
        llhttp_settings_init(settings)
        ResponseDecoder.installCallbacks(settings)
        return settings
    }()

    // Per-message state.
    /// The fields of the head (then of the trailers) being parsed.
    @exclusivity(unchecked) var records = FieldRecords()
    /// The records last handed out with a head, taken back at the next head: once the
    /// response has let go of them (a caller that reads a response and drops it), their
    /// buffer is written again in place — no allocation per response.
    @exclusivity(unchecked) private var handedRecords: FieldRecords?
    /// Heads still to go out in buffers of their own size: set when a response was still held
    /// when the next head came (a caller that keeps its responses should not keep a whole
    /// parser buffer with each), counted down by each head that goes out so, after which
    /// heads share the buffer again and the next one tells whether the caller still keeps them.
    @exclusivity(unchecked) private var headsToCompact = 0
    static let compactedAfterAKeptHead = 4
    /// Records in a buffer larger than this get one of their own, their size, when they go
    /// out with a head (after a huge head, every later response would hold a huge buffer).
    static let maxHandedCapacity = 2048
    /// What the records' buffer is made for: a head of a dozen fields.
    static let recordsCapacity = 512
    @exclusivity(unchecked) private var reason: [UInt8] = []
    /// The status line's reason is exactly "OK" (most are): noted, not copied into ``reason``.
    @exclusivity(unchecked) private var reasonIsOK = false
    /// The two settings blocks, read at each message: instance constants, where the statics
    /// behind them are lazy (a check that they are made, at every read).
    private let headSettingsBlock = ResponseDecoder.headSettings
    private let trailerSettingsBlock = ResponseDecoder.trailerSettings
    @exclusivity(unchecked) var headerBytes = 0
    @exclusivity(unchecked) var headerCount = 0
    @exclusivity(unchecked) var inTrailers = false
    @exclusivity(unchecked) private var sawFinalHead = false
    @exclusivity(unchecked) var failure: TransportError? = nil
    /// Whether the current message got as far as its status line (llhttp calls on_status
    /// only after a valid "HTTP/x.y NNN ").
    @exclusivity(unchecked) private(set) var sawStatus = false
    /// Whether the head has a Transfer-Encoding field (checked once the head is complete).
    @exclusivity(unchecked) var sawTransferEncoding = false
    /// Set when an interim response just ended: the bytes counted so far were only 1xx.
    @exclusivity(unchecked) private(set) var interimBytesPending = false
    /// Bytes of the current head that came in earlier reads, kept only while a head spans
    /// reads, so that a head llhttp refuses can be read again whole (``ResponseHeadRepair``).
    @exclusivity(unchecked) var headCarry: [UInt8] = []
    /// Where the current head's bytes in this input are (see ResponseDecoder+HeadFields.swift).
    @exclusivity(unchecked) var headInput: HeadInput?
    /// When reading a head's fields failed: how far from the end of the input the line that
    /// failed begins (see ResponseDecoder+HeadFields.swift).
    @exclusivity(unchecked) var failedLineDistance: Int?
    /// While a refused head is collected to be repaired: its bytes so far, and the error that
    /// stands if it cannot be.
    @exclusivity(unchecked) var repairing: (bytes: [UInt8], error: TransportError)?
    /// The parser paused at the end of an interim response, so that the next head's start is
    /// known; it resumes at once.
    @exclusivity(unchecked) var pausedAfterInterim = false
    /// The head had Transfer-Encoding and Content-Length both: the body is read as chunked
    /// (RFC 9112 §6.3) and the connection is not reused after it.
    @exclusivity(unchecked) private var closeAfterResponse = false
    /// A Content-Length too large for any length, left out of the framing by the repair:
    /// added back to the parsed head, which shows what the server sent.
    @exclusivity(unchecked) var ignoredContentLength: String?
    /// The body's Content-Length is past any count: it ends at the close instead.
    @exclusivity(unchecked) private var lengthPastAnyCount = false
    /// Interim (1xx) responses of this request so far, and their bytes: bounded, as an
    /// endless run of them would hold the request forever.
    @exclusivity(unchecked) private var interimCount = 0
    @exclusivity(unchecked) private var interimBytes = 0
    static let maxInterimResponses = 32
    /// Bytes of extensions on the current chunk-size line.
    @exclusivity(unchecked) private var chunkExtensionBytes = 0
    static let maxChunkExtensionBytes = 16 * 1024
    /// Of a chunked body: the data bytes so far, and every other byte (sizes, extensions,
    /// line ends, trailers). Framing may outgrow the data only so far: a size line of
    /// endless leading zeros passes no callback, but it is framing.
    @exclusivity(unchecked) private var chunkDataBytes = 0
    @exclusivity(unchecked) private var chunkFramingBytes = 0
    /// Whether this response's heads are kept as they arrived (``lastRawHead``), for tools
    /// that show them byte for byte. Off by default: it costs a copy of every read of a head.
    @exclusivity(unchecked) private(set) var capturesHeads = false
    /// While capturing: bytes of this response not yet handed out as a head.
    @exclusivity(unchecked) var captured: [UInt8] = []
    /// The bytes of the head just completed — status line, fields, blank line, as sent —
    /// valid during the delegate's head callbacks (capturing only).
    @exclusivity(unchecked) public internal(set) var lastRawHead: [UInt8] = []
    /// The complete lines of a head that failed, before the line that failed (capturing only).
    @exclusivity(unchecked) public internal(set) var partialRawHead: [UInt8]?
    /// Bytes seen since the current response began (0: nothing of it yet).
    @exclusivity(unchecked) var bytesOfCurrentResponse = 0
    /// True between the final head and the end of its body.
    @exclusivity(unchecked) private(set) var inBody = false

    public init(limits: ResponseHeadLimits = ResponseHeadLimits()) {
        self.limits = limits
        self.parser = .allocate(capacity: 1)
        self.records.reserveCapacity(Self.recordsCapacity)
        self.restartParser()
    }

    /// A fresh llhttp state, as for a new connection.
    func restartParser() {
        llhttp_init(self.parser, HTTP_RESPONSE, Self.headSettings)
        self.parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        // The one leniency llhttp's flags give: Transfer-Encoding with Content-Length is read
        // as chunked (the length ignored) instead of refused, as curl and browsers do.
        llhttp_set_lenient_chunked_length(self.parser, 1)
    }

    deinit {
        self.parser.deallocate()
    }

    /// Prepares for the next response on the same connection (after `.complete`).
    public func prepareForNextResponse(expectNoBody: Bool, capturingHeads: Bool = false) {
        self.expectNoBody = expectNoBody
        self.capturesHeads = capturingHeads
        // Only what is set is cleared: storing an empty value over an empty one still
        // destroys the old one (a call per field, per response).
        if !self.captured.isEmpty { self.captured.removeAll() }
        if !self.lastRawHead.isEmpty { self.lastRawHead = [] }
        if self.partialRawHead != nil { self.partialRawHead = nil }
        self.bytesOfCurrentResponse = 0
        self.sawFinalHead = false
        self.inBody = false
        self.interimBytesPending = false
        if !self.headCarry.isEmpty { self.headCarry.removeAll(keepingCapacity: true) }
        self.failedLineDistance = nil
        if self.repairing != nil { self.repairing = nil }
        self.pausedAfterInterim = false
        self.closeAfterResponse = false
        if self.ignoredContentLength != nil { self.ignoredContentLength = nil }
        self.lengthPastAnyCount = false
        self.interimCount = 0
        self.interimBytes = 0
        self.chunkExtensionBytes = 0
        self.chunkDataBytes = 0
        self.chunkFramingBytes = 0
        if llhttp_get_errno(self.parser) == HPE_PAUSED {
            llhttp_resume(self.parser)
        }
    }

    /// Parses `bytes`. Throws a typed error on anything that is not a valid HTTP/1.x response.
    public func feed(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> FeedResult {
        guard bytes.baseAddress != nil, bytes.count > 0 else { return .needMore }
        self.bytesOfCurrentResponse &+= bytes.count
        var step = self.repairing != nil ? try self.continueRepair(bytes, newBytesFrom: 0) : try self.parse(bytes, from: 0)
        // A repaired head hands the rest of the read back here: a loop, not a recursion, however
        // many heads the read holds.
        while case .resume(let offset) = step {
            step = try self.parse(bytes, from: offset, capture: false)
        }
        guard case .done(let result) = step else { return .needMore }
        return result
    }

    /// What one pass over a read came to: a result, or the rest of the read to parse after a
    /// repaired head.
    enum Step {
        case done(FeedResult)
        case resume(at: Int)
    }

    /// Runs llhttp over `bytes[offset...]`: one call, unless an interim response ends inside.
    private func parse(_ bytes: UnsafeRawBufferPointer, from offset: Int, capture: Bool = true) throws(TransportError) -> Step {
        if capture && self.capturesHeads && !self.sawFinalHead {
            self.captured.append(contentsOf: bytes[offset...])
            try self.checkHeadBuffer(self.captured.count)
        }
        let start = bytes.baseAddress!.assumingMemoryBound(to: CChar.self)
        var offset = offset
        var headStart = offset
        while true {
            let countsFraming = self.inBody && self.parser.pointee.flags & UInt16(F_CHUNKED.rawValue) != 0
            let dataBefore = self.chunkDataBytes
            self.headInput = HeadInput(start: UnsafeRawPointer(start + headStart), end: UnsafeRawPointer(start + bytes.count))
            let rc = llhttp_execute(self.parser, start + offset, bytes.count - offset)
            self.headInput = nil
            switch rc {
            case HPE_OK:
                if countsFraming {
                    try self.countChunkFraming(bytes.count - offset - (self.chunkDataBytes - dataBefore))
                }
                if !self.sawFinalHead {
                    // A head spread over reads (rare: heads are small): kept until it ends.
                    self.headCarry.append(contentsOf: bytes[headStart...])
                    try self.checkHeadBuffer(self.headCarry.count)
                }
                return .done(.needMore)
            case HPE_PAUSED:
                let position = llhttp_get_error_pos(self.parser).map { start.distance(to: $0) } ?? bytes.count
                self.headCarry.removeAll(keepingCapacity: true)
                if self.pausedAfterInterim {
                    self.pausedAfterInterim = false
                    llhttp_resume(self.parser)
                    if position == bytes.count { return .done(.needMore) }
                    offset = position
                    headStart = position
                    continue
                }
                self.bytesOfCurrentResponse -= bytes.count - position
                return .done(.complete(consumed: position))
            case HPE_PAUSED_UPGRADE:
                throw self.protocolError("unexpected 101 Switching Protocols: no upgrade was requested")
            default:
                if self.capturesHeads && !self.sawFinalHead {
                    let position = self.failedLineDistance.map { bytes.count - $0 }
                        ?? llhttp_get_error_pos(self.parser).map { start.distance(to: $0) } ?? bytes.count
                    self.keepPartialHead(endingBefore: self.captured.count - (bytes.count - position))
                }
                if let failure = self.failure { throw failure }
                let error = self.protocolError(nil)
                guard !self.sawFinalHead, Self.mayBeRepairable(llhttp_get_errno(self.parser)) else { throw error }
                var collected = self.headCarry
                self.headCarry = []
                collected.append(contentsOf: bytes[headStart...])
                self.repairing = (collected, error)
                return try self.continueRepair(bytes, newBytesFrom: nil, searchedUpTo: 0)
            }
        }
    }

    /// Whether the current response's body ends only when the connection does.
    var bodyEndsAtClose: Bool { self.inBody && (self.lengthPastAnyCount || llhttp_message_needs_eof(self.parser) != 0) }

    /// Tells the parser the connection ended. A close-delimited body ends here; anything else
    /// unfinished is an error saying what was cut short.
    public func finish() throws(TransportError) -> Bool {
        if let repairing = self.repairing {
            // The connection ended inside a head being repaired: cut short if what came is a
            // well-formed start, else the parser's error.
            self.repairing = nil
            let closed = repairing.bytes + [0x0A, 0x0A]
            guard case .repaired = closed.withUnsafeBytes({ ResponseHeadRepair.repair($0) }) else { throw repairing.error }
            throw self.endOfStreamError()
        }
        if llhttp_get_errno(self.parser) == HPE_PAUSED { return false }
        if self.lengthPastAnyCount && self.inBody {
            // The close ends a body whose length could not be counted.
            self.inBody = false
            self.delegate?.decoderReceivedEnd(trailers: nil, keepAlive: false)
            return true
        }
        let rc = llhttp_finish(self.parser)
        if rc == HPE_OK || rc == HPE_PAUSED {
            // Complete when a close-delimited body just ended (on_message_complete paused).
            return rc == HPE_PAUSED
        }
        throw self.endOfStreamError()
    }

    // MARK: Callbacks

    /// Runs `body` on the decoder a parser belongs to, without retaining it: the decoder is
    /// alive for the whole `llhttp_execute` that calls back (the caller of `feed` holds it).
    @inline(__always)
    private static func with(_ parser: UnsafeMutablePointer<llhttp_t>?, _ body: (ResponseDecoder) -> Int32) -> Int32 {
        Unmanaged<ResponseDecoder>.fromOpaque(parser!.pointee.data)._withUnsafeGuaranteedRef(body)
    }

    private static func installCallbacks(_ s: UnsafeMutablePointer<llhttp_settings_t>) {
        s.pointee.on_message_begin = { p in ResponseDecoder.with(p) { $0.messageBegin() } }
        s.pointee.on_status = { p, at, length in ResponseDecoder.with(p) { $0.status(at, length) } }
        s.pointee.on_header_field = { p, at, length in ResponseDecoder.with(p) { $0.headerField(at, length) } }
        s.pointee.on_header_value = { p, at, length in ResponseDecoder.with(p) { $0.headerValue(at, length) } }
        s.pointee.on_header_value_complete = { p in ResponseDecoder.with(p) { $0.headerValueComplete() } }
        s.pointee.on_headers_complete = { p in ResponseDecoder.with(p) { $0.headersComplete() } }
        s.pointee.on_body = { p, at, length in ResponseDecoder.with(p) { $0.body(at, length) } }
        s.pointee.on_message_complete = { p in ResponseDecoder.with(p) { $0.messageComplete() } }
        s.pointee.on_chunk_extension_name = { p, _, length in ResponseDecoder.with(p) { $0.chunkExtension(length) } }
        s.pointee.on_chunk_extension_value = { p, _, length in ResponseDecoder.with(p) { $0.chunkExtension(length) } }
        s.pointee.on_chunk_header = { p in ResponseDecoder.with(p) { $0.chunkHeader() } }
    }

    static let maxRecordableHeaderBytes = Int(UInt32.max) - 1
    static let proceed: Int32 = 0
    static let userError: Int32 = -1

    private func messageBegin() -> Int32 {
        // A head's fields are read whole when it ends (after trailers, the callbacks were on).
        self.parser.pointee.settings = UnsafeMutableRawPointer(self.headSettingsBlock)
        if var handed = self.handedRecords.take() {
            // Emptied in place if the last response let go of it; else a buffer like it.
            let buffer = handed.bufferAddress
            handed.removeAll()
            if handed.bufferAddress != buffer {
                self.headsToCompact = Self.compactedAfterAKeptHead
            }
            self.records = handed
        } else {
            self.records.removeAll()
        }
        if !self.reason.isEmpty { self.reason.removeAll(keepingCapacity: true) }
        self.reasonIsOK = false
        self.headerBytes = 0
        self.headerCount = 0
        self.inTrailers = false
        self.sawStatus = false
        self.sawTransferEncoding = false
        return Self.proceed
    }

    private func status(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        self.sawStatus = true
        guard self.countHeaderBytes(length), let at else { return Self.userError }
        if length == 2, self.reason.isEmpty, !self.reasonIsOK, at[0] == 0x4F, at[1] == 0x4B {
            self.reasonIsOK = true
            return Self.proceed
        }
        if self.reasonIsOK {
            // "OK" was only the first piece of a longer reason.
            self.reasonIsOK = false
            self.reason.append(contentsOf: "OK".utf8)
        }
        self.reason.append(contentsOf: UnsafeRawBufferPointer(start: at, count: length))
        return Self.proceed
    }

    private func headersComplete() -> Int32 {
        let recorded = self.recordHeadFields()
        guard recorded == Self.proceed else { return recorded }
        if let ignored = self.ignoredContentLength {
            // As curl: the response is read, then its connection closed ("overflow content-length").
            self.ignoredContentLength = nil
            self.closeAfterResponse = true
            self.records.append(name: "Content-Length", value: ignored)
        }
        let code = Int(self.parser.pointee.status_code)
        let status: HTTPResponse.Status
        if code == 200, self.reasonIsOK {
            status = .ok   // most responses: no string to make and check
        } else {
            let reason = self.reasonIsOK ? "OK" : String(decoding: self.reason, as: UTF8.self)
            status = HTTPResponse.Status(code: code, reasonPhrase: reason)
        }
        if code < 100 {
            // llhttp takes any number below 1000; a status code has three digits (RFC 9110 §15).
            self.failure = TransportError(.notHTTPResponse, phase: .readHead, detail: "status code \(code) is not three digits")
            return Self.userError
        }
        if (100..<200).contains(code) {
            if code == 101 {
                // A protocol switch this client never asked for: refused here, not left to
                // llhttp's upgrade pause, which a head parsed on its own (repaired) ends before.
                self.failure = self.protocolError("unexpected 101 Switching Protocols: no upgrade was requested")
                return Self.userError
            }
            self.interimCount += 1
            self.interimBytes += self.headerBytes
            guard self.interimCount <= Self.maxInterimResponses, self.interimBytes <= self.limits.maxHeaderBytes else {
                // An endless run of 1xx heads would hold the request forever.
                self.failure = TransportError(.headerTooLarge, phase: .readHead,
                                               detail: "more than \(Self.maxInterimResponses) interim responses or \(self.limits.maxHeaderBytes) bytes of them")
                return Self.userError
            }
            if self.capturesHeads { self.takeRawHead() }
            // Rare, and built at once: no parsed head kept for it.
            let head = HTTPResponse(status: status, headerFields: self.records.makeFields())
            self.records.removeAll()
            self.delegate?.decoderReceivedInformational(head)
            // The interim response's fields do not count against the final one's limits.
            self.headerBytes = 0
            self.headerCount = 0
            // 1: no body, whatever its head says (RFC 9112 §6.3: a 1xx ends with its head).
            // llhttp would read one for a 1xx code it does not know, or a chunked 100, and
            // hand it on as if it were the final response's.
            return 1
        }
        let head: ParsedHead
        if self.headsToCompact == 0, self.records.capacity <= Self.maxHandedCapacity {
            // Moved out (trailers, if any come, start in a buffer of their own), then shared
            // by the head and the decoder, which takes the buffer back once the head lets go.
            var handed = FieldRecords()
            swap(&handed, &self.records)
            head = ParsedHead(status: status, fields: handed)
            self.handedRecords = consume handed
        } else {
            head = ParsedHead(status: status, fields: self.records.compacted())
            self.headsToCompact = max(0, self.headsToCompact - 1)
            if self.records.capacity > Self.maxHandedCapacity {
                // Back to the usual size: heads that large are rare.
                self.records = FieldRecords()
                self.records.reserveCapacity(Self.recordsCapacity)
            } else {
                self.records.removeAll()
            }
        }
        if self.sawTransferEncoding, let codings = head.fields.joinedValues(for: .transferEncoding), !Self.isChunkedOnly(codings) {
            // RFC 9112 §6.1: only chunked is understood here; decoding gzip or deflate
            // transfer codings is left to the caller no more than it is to curl.
            self.failure = TransportError(.unsupportedEncoding, phase: .readHead,
                                           detail: "Transfer-Encoding: \(codings)")
            return Self.userError
        }
        if self.sawTransferEncoding, head.fields.contains(.contentLength) {
            // llhttp reads it as chunked (RFC 9112 §6.3: Transfer-Encoding overrides); such a
            // response may be an attempt at splitting, so its connection is not kept.
            self.closeAfterResponse = true
        }
        if self.parser.pointee.flags & UInt16(F_CONTENT_LENGTH.rawValue) != 0, self.parser.pointee.flags & UInt16(F_CHUNKED.rawValue) == 0,
           self.parser.pointee.content_length > UInt64(Int64.max) {
            // Past any count (llhttp takes up to 2^64 − 1): as one past 2^64, the body ends
            // at the close, and nothing follows it on this connection.
            self.lengthPastAnyCount = true
            self.closeAfterResponse = true
        }
        self.sawFinalHead = true
        self.inBody = true
        self.inTrailers = true
        self.parser.pointee.settings = UnsafeMutableRawPointer(self.trailerSettingsBlock)
        if self.capturesHeads {
            self.takeRawHead()
            self.captured = []
        }
        if let delegate = self.delegate, !delegate.decoderReceivedHead(head) { return Self.userError }
        // 1 tells llhttp that this response has no body whatever its head says: the answer
        // to HEAD, and 204 and 304, which never carry content (RFC 9110 §6.4.1) even when a
        // Content-Length describes the representation.
        return self.expectNoBody || code == 204 || code == 304 ? 1 : Self.proceed
    }


    private func body(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        guard let at else { return Self.proceed }
        self.chunkDataBytes &+= length
        if let delegate = self.delegate,
           !delegate.decoderReceivedBody(UnsafeRawBufferPointer(start: at, count: length)) {
            return Self.userError
        }
        return Self.proceed
    }

    /// Extensions of the chunk-size line being read: ignored, but bounded (Node.js bounded
    /// them after CVE-2024-22019: a server could send megabytes on one line).
    private func chunkExtension(_ length: Int) -> Int32 {
        // At least a byte per piece: each ';' or '=' ends one, even an empty one.
        self.chunkExtensionBytes += Swift.max(length, 1)
        guard self.chunkExtensionBytes <= Self.maxChunkExtensionBytes else {
            self.failure = TransportError(.chunkLineTooLong, phase: .readBody,
                                           detail: "more than \(Self.maxChunkExtensionBytes) bytes of chunk extensions on one line")
            return Self.userError
        }
        return Self.proceed
    }

    /// Adds `count` bytes of chunk framing; fails when framing outgrows the data past what
    /// any real stream of small chunks needs (a 1-byte chunk takes 5 bytes of framing).
    private func countChunkFraming(_ count: Int) throws(TransportError) {
        self.chunkFramingBytes &+= count
        let allowed = self.limits.maxHeaderBytes + Self.maxChunkExtensionBytes + 8 * self.chunkDataBytes
        guard self.chunkFramingBytes > allowed else { return }
        throw TransportError(.chunkLineTooLong, phase: .readBody,
                              detail: "\(self.chunkFramingBytes) bytes of chunk framing around \(self.chunkDataBytes) bytes of data")
    }

    /// llhttp has read a whole chunk-size line; the size is in `content_length`, and none of
    /// the chunk's data has been handed on yet.
    private func chunkHeader() -> Int32 {
        self.chunkExtensionBytes = 0
        let size = self.parser.pointee.content_length
        if size > UInt64(Int64.max) {
            // llhttp takes any size that fits 64 unsigned bits, and would then hand on the
            // framing that follows as data. No count of bytes here (nor curl's, whose offsets
            // are signed 64-bit) reaches such a size: refused before a byte of it goes out.
            self.failure = TransportError(.invalidResponse, phase: .readBody,
                                           detail: "chunk size \(String(size, radix: 16)) (hex) is larger than \(String(Int64.max, radix: 16)), the largest this client counts")
            return Self.userError
        }
        return Self.proceed
    }

    private func messageComplete() -> Int32 {
        // A 101: llhttp reports the protocol switch, refused in feed().
        if !self.sawFinalHead && self.parser.pointee.status_code == 101 { return Self.proceed }
        guard self.sawFinalHead else {
            // The end of an interim (1xx) response: the final one follows on the same stream.
            // Until its first byte, a close means "no response" (curl: empty reply).
            self.interimBytesPending = true
            self.sawStatus = false
            // Paused so that feed() learns where the next head starts (see parse).
            self.pausedAfterInterim = true
            return Int32(HPE_PAUSED.rawValue)
        }
        self.inBody = false
        let keepAlive = llhttp_should_keep_alive(self.parser) != 0 && !self.closeAfterResponse
        var trailers: HTTPFields? = nil
        if !self.records.isEmpty {
            trailers = self.records.makeFields()
            self.records.removeAll()
        }
        self.delegate?.decoderReceivedEnd(trailers: trailers, keepAlive: keepAlive)
        return Int32(HPE_PAUSED.rawValue)
    }
}
