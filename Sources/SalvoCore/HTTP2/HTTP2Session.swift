internal import CNGHTTP2
import HTTPTypes
@_spi(Benchmarks) import SalvoTransport

/// One HTTP/2 client connection's protocol over nghttp2, without a socket: the connection hands
/// it the bytes it read (``receive(_:)``) and writes what it gives (``output()``); what happened
/// on each stream comes back as ``Event``s. nghttp2 does the framing, HPACK and flow control;
/// this type turns requests into its header lists and its callbacks into events, and keeps the
/// bounds (header list size, streams) the engine promises.
///
/// Loop-confined, as an nghttp2 session must be: one thread at a time, the connection's loop.
final class HTTP2Session {
    /// What the peer did, in the order it did it.
    enum Event: Equatable {
        /// A stream's final response head; `endStream`: no body follows.
        case head(streamID: Int32, Head, endStream: Bool)
        /// A 1xx head before the final one.
        case informational(streamID: Int32, HTTPResponse)
        /// Body bytes of a stream; `endStream` on the last.
        case data(streamID: Int32, [UInt8], endStream: Bool)
        /// Trailer fields, which end the stream.
        case trailers(streamID: Int32, HTTPFields)
        /// A stream is over: `errorCode` 0 when it ended well, else the RST_STREAM code (or the
        /// code the session reset it with).
        case streamClosed(streamID: Int32, errorCode: UInt32)
        /// The peer is going away: streams above `lastStreamID` were never processed.
        case goAway(lastStreamID: Int32, errorCode: UInt32)
        /// The peer's SETTINGS: how many streams it allows at once (nil: no limit said).
        case settings(maxConcurrentStreams: Int?)
        /// The peer answered the PING this session sent (``ping()``).
        case pingAcknowledged
        /// A streamed request body has sent all it was given and waits for more
        /// (``provide(_:to:)``): the producer may go on.
        case bodyWanted(streamID: Int32)
    }

    /// A final response head: its status and its fields as records (no `HTTPFields` built
    /// unless someone asks: see ``ParsedHead``).
    struct Head: Equatable {
        var status: HTTPResponse.Status
        var fields: FieldRecords

        var response: HTTPResponse { HTTPResponse(status: self.status, headerFields: self.fields.makeFields()) }
        /// What the engine hands a request's owner.
        var parsed: ParsedHead { ParsedHead(status: self.status, fields: self.fields) }
        /// The bytes of names and values, plus 32 a field as HTTP/2 counts them.
        var size: Int { self.fields.byteCount - self.fields.count * FieldRecords.recordHeaderSize + self.fields.count * 32 }

        static func == (lhs: Head, rhs: Head) -> Bool { lhs.response == rhs.response }
    }

    /// What a request's body is.
    enum RequestBody {
        /// All of it, now.
        case bytes([UInt8])
        /// Given later, piece by piece (``provide(_:to:)``, ``finishBody(of:)``), sent as the
        /// peer's window allows.
        case streamed
    }

    typealias Settings = HTTP2Settings

    private var session: OpaquePointer?
    private let settings: Settings
    private var events: [Event] = []
    /// Heads being received, by stream: their fields so far and their size.
    private var heads: [Int32: HeadInProgress] = [:]
    /// Request bodies nghttp2 has yet to read, by stream.
    private var bodies: [Int32: BodyInProgress] = [:]
    /// Whether the peer sent GOAWAY.
    private var peerWentAway = false
    /// The error code of a GOAWAY this session sent: the connection is broken.
    private var sentGoAwayError: UInt32?
    /// Bytes made, not yet taken by ``output()``.
    private var pending: [UInt8] = []
    /// nghttp2's last word on an error, for the detail of the one thrown.
    private var lastError: String?

    private struct HeadInProgress {
        var status: Int?
        var fields = FieldRecords()
        var size = 0
        var isTrailer = false
    }

    private struct BodyInProgress {
        var bytes: [UInt8]
        var offset = 0
        /// More may come (a streamed body not yet finished).
        var open: Bool
        /// nghttp2 was told to wait for more (NGHTTP2_ERR_DEFERRED): it must be resumed.
        var deferred = false
    }

    /// A session that has queued the connection preface and its SETTINGS.
    init(settings: Settings = Settings()) throws(TransportError) {
        self.settings = settings
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw TransportError(.invalidRequest, detail: "nghttp2 could not allocate its callbacks")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            return HTTP2Session.from(user).beginHeaders(frame.pointee)
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let name, let value, let user else { return 0 }
            return HTTP2Session.from(user).header(frame.pointee, name: UnsafeBufferPointer(start: name, count: nameLength),
                                                  value: UnsafeBufferPointer(start: value, count: valueLength))
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            return HTTP2Session.from(user).frameReceived(frame.pointee)
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, flags, streamID, data, length, user in
            guard let data, let user else { return 0 }
            return HTTP2Session.from(user).dataReceived(streamID: streamID, UnsafeBufferPointer(start: data, count: length))
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, user in
            guard let user else { return 0 }
            return HTTP2Session.from(user).streamClosed(streamID: streamID, errorCode: errorCode)
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            if frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue), frame.pointee.goaway.error_code != NGHTTP2_NO_ERROR.rawValue {
                HTTP2Session.from(user).sentGoAwayError = frame.pointee.goaway.error_code
            }
            return 0
        }
        nghttp2_session_callbacks_set_error_callback2(callbacks) { _, _, message, length, user in
            guard let message, let user else { return 0 }
            HTTP2Session.from(user).lastError = String(decoding: UnsafeRawBufferPointer(start: message, count: length), as: UTF8.self)
            return 0
        }
        // Window updates only as the caller consumes (``consume(_:of:)``): a slow reader holds
        // the server back instead of filling memory.
        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else {
            throw TransportError(.invalidRequest, detail: "nghttp2 could not allocate its options")
        }
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_auto_window_update(option, 1)
        // Bounds against a hostile server, said here rather than left to the library's
        // defaults: acknowledgements (SETTINGS, PING) waiting to go out, entries in one SETTINGS
        // frame, CONTINUATION frames after a HEADERS frame (CVE-2024-28182's class). Past any
        // of them the connection ends with an error, its memory bounded.
        nghttp2_option_set_max_outbound_ack(option, Self.maxOutboundAcknowledgements)
        nghttp2_option_set_max_settings(option, Self.maxSettingsEntries)
        nghttp2_option_set_max_continuations(option, Self.maxContinuations)
        var session: OpaquePointer?
        let status = nghttp2_session_client_new2(&session, callbacks, Unmanaged.passUnretained(self).toOpaque(), option)
        guard status == 0, let session else {
            throw TransportError(.invalidRequest, detail: "nghttp2 could not make a session (\(status))")
        }
        self.session = session
        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: settings.maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: settings.initialWindowSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                   value: UInt32(clamping: settings.maxHeaderListSize)),
        ]
        let submitted = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        guard submitted == 0 else {
            throw TransportError(.invalidRequest, detail: "nghttp2 refused the client's SETTINGS (\(submitted))")
        }
        // The connection's window as large as a stream's, so that one stream can use its own.
        if settings.initialWindowSize > 65_535 {
            _ = nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(clamping: settings.initialWindowSize))
        }
    }

    deinit {
        if let session = self.session { nghttp2_session_del(session) }
    }

    /// SETTINGS and PING acknowledgements that may wait to be written.
    static let maxOutboundAcknowledgements = 1000
    /// Entries one SETTINGS frame may carry.
    static let maxSettingsEntries = 32
    /// CONTINUATION frames one head may take.
    static let maxContinuations = 8
    /// Empty DATA frames (that do not end their stream) in a row.
    static let maxEmptyDataFrames = 1000
    private var emptyDataFrames = 0

    private static func from(_ user: UnsafeMutableRawPointer) -> HTTP2Session {
        Unmanaged<HTTP2Session>.fromOpaque(user).takeUnretainedValue()
    }

    // MARK: Requests

    /// Queues `request` (its head and, if any, `body`) on a new stream; returns the stream's id.
    /// The head's pseudo-fields come from the request's method, scheme, authority and path;
    /// fields HTTP/2 forbids are left out (see ``HTTP2HeaderBlock``).
    func submit(_ request: HTTPRequest, body: [UInt8]) throws(TransportError) -> Int32 {
        try self.submit(HTTP2HeaderBlock(request), body: .bytes(body))
    }

    func submit(_ request: HTTPRequest, body: RequestBody? = nil) throws(TransportError) -> Int32 {
        try self.submit(HTTP2HeaderBlock(request), body: body)
    }

    /// Queues a request of header list `block` on a new stream with `body` (none: the HEADERS
    /// frame ends the stream); returns the stream's id.
    func submit(_ block: HTTP2HeaderBlock, body: RequestBody? = nil) throws(TransportError) -> Int32 {
        guard let session = self.session else { throw TransportError(.invalidRequest, detail: "the HTTP/2 session is closed") }
        // A request the server can no longer take was never sent: whoever owns it may send it
        // on another connection.
        guard !self.peerWentAway else {
            throw TransportError(.remoteClosed, detail: "the server sent GOAWAY: no new stream on this connection")
        }
        var storage = block.storage
        let streamID: Int32 = storage.withUnsafeMutableBufferPointer { bytes in
            // Never empty: the list always has :method.
            guard let base = bytes.baseAddress else { return Int32(NGHTTP2_ERR_INVALID_ARGUMENT.rawValue) }
            var list = block.spans.map { span in
                nghttp2_nv(name: base + span.name.lowerBound, value: base + span.value.lowerBound,
                           namelen: span.name.count, valuelen: span.value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            guard body != nil else {
                return nghttp2_submit_request(session, nil, &list, list.count, nil, nil)
            }
            var provider = nghttp2_data_provider()
            provider.read_callback = { _, streamID, buffer, length, flags, _, user in
                guard let buffer, let flags, let user else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                return HTTP2Session.from(user).readBody(streamID: streamID, into: buffer, length: length, flags: flags)
            }
            return nghttp2_submit_request(session, nil, &list, list.count, &provider, nil)
        }
        guard streamID > 0 else {
            if streamID == Int32(NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue) {
                // The connection has used up its stream ids: the request can go on another.
                throw TransportError(.remoteClosed, detail: "no stream id left on this HTTP/2 connection")
            }
            throw TransportError(.invalidRequest, detail: "nghttp2 refused the request: \(HTTP2Session.describe(streamID))")
        }
        switch body {
        case .bytes(let bytes): self.bodies[streamID] = BodyInProgress(bytes: bytes, open: false)
        case .streamed: self.bodies[streamID] = BodyInProgress(bytes: [], open: true)
        case nil: break
        }
        return streamID
    }

    /// Sends a PING; ``Event/pingAcknowledged`` comes when the peer answers it.
    func ping() {
        guard let session = self.session else { return }
        _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// Says goodbye: a GOAWAY with NO_ERROR and the last stream the peer opened (none).
    func goAway() {
        guard let session = self.session else { return }
        _ = nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
    }

    /// Whether the peer sent GOAWAY: no new stream may start.
    var isGoingAway: Bool { self.peerWentAway }

    /// The response of `streamID` is complete: if its request is still going out (a body the
    /// server's window holds back, or its producer), the stream is reset with NO_ERROR — the
    /// rest is not needed (RFC 9113 §8.1), and the stream must not hold a place meanwhile.
    func finishEarly(streamID: Int32) {
        guard let session = self.session, nghttp2_session_get_stream_local_close(session, streamID) == 0 else { return }
        self.bodies[streamID] = nil
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_NO_ERROR.rawValue)
    }

    /// More of a streamed body; sent as the peer's window allows. Nothing happens for a
    /// stream that is over.
    func provide(_ bytes: [UInt8], to streamID: Int32) {
        guard var body = self.bodies[streamID], body.open else { return }
        if body.offset == body.bytes.count {
            body.bytes = bytes
            body.offset = 0
        } else {
            body.bytes += bytes
        }
        self.bodies[streamID] = body
        self.resumeIfDeferred(streamID)
    }

    /// The end of a streamed body.
    func finishBody(of streamID: Int32) {
        guard var body = self.bodies[streamID], body.open else { return }
        body.open = false
        self.bodies[streamID] = body
        self.resumeIfDeferred(streamID)
    }

    private func resumeIfDeferred(_ streamID: Int32) {
        guard let session = self.session, var body = self.bodies[streamID], body.deferred else { return }
        body.deferred = false
        self.bodies[streamID] = body
        _ = nghttp2_session_resume_data(session, streamID)
    }

    /// The caller has taken `count` bytes of `streamID`'s body: the stream's window opens by as
    /// much (a WINDOW_UPDATE goes out once enough is consumed). The connection's window opened
    /// for them as they arrived (``dataReceived``): a stream whose reader pauses holds back its
    /// own sender, never the other streams.
    func consume(_ count: Int, of streamID: Int32) {
        guard let session = self.session, count > 0 else { return }
        _ = nghttp2_session_consume_stream(session, streamID, count)
    }

    /// Resets `streamID` with CANCEL (the caller gave up on it).
    func cancel(streamID: Int32) {
        guard let session = self.session else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
    }

    // MARK: Bytes

    /// Feeds what the socket read; returns the events it made (and any made while writing that
    /// ``drainEvents()`` has not taken). A protocol error of the
    /// connection throws (nghttp2 has queued a GOAWAY to send first: write ``output()``).
    func receive(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> [Event] {
        guard let session = self.session else { throw TransportError(.invalidResponse, detail: "the HTTP/2 session is closed") }
        let read = nghttp2_session_mem_recv(session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        guard read >= 0 else {
            self.events.removeAll()
            let reason = self.lastError.map { ": \($0)" } ?? ""
            throw TransportError(.invalidResponse, detail: "HTTP/2 protocol error: \(HTTP2Session.describe(Int32(truncatingIfNeeded: read)))\(reason)")
        }
        // What nghttp2 answers (SETTINGS and PING acknowledgements, a stream reset for a head
        // over the limit, a GOAWAY) is made now, so that its events come with these.
        self.flush()
        let events = self.events
        self.events.removeAll(keepingCapacity: true)
        // nghttp2 ends a session that broke the protocol (a first frame that is not SETTINGS, a
        // HEADERS frame on stream 0…) with a GOAWAY of its own and no error from the call above.
        if let code = self.sentGoAwayError {
            throw TransportError(.invalidResponse, detail: "HTTP/2 protocol error (\(code)): \(self.lastError ?? "the server broke the protocol")")
        }
        return events
    }

    /// Events that came while writing (``output()``): a streamed body asking for more, a stream
    /// closed by a reset this session sent. Take them after each write.
    func drainEvents() -> [Event] {
        defer { self.events.removeAll(keepingCapacity: true) }
        return self.events
    }

    /// What to write to the socket now (empty when nothing is queued).
    func output() -> [UInt8] {
        self.flush()
        defer { self.pending.removeAll(keepingCapacity: true) }
        return self.pending
    }

    /// Bytes made and not yet taken past which nothing more is made: what nghttp2 still has to
    /// send waits in its own queue, which its bounds cover (a peer that floods us with frames
    /// to acknowledge while it reads nothing ends the connection instead of filling memory).
    static let maxPending = 256 << 10

    /// Moves what nghttp2 has to send into ``pending``, up to ``maxPending``.
    private func flush() {
        guard let session = self.session else { return }
        while self.pending.count < Self.maxPending {
            var chunk: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &chunk)
            guard count > 0, let chunk else { break }
            self.pending.append(contentsOf: UnsafeBufferPointer(start: chunk, count: count))
        }
    }

    /// Whether the session still wants to read or write (false once it is done, after a GOAWAY
    /// both ways or a fatal error).
    var isAlive: Bool {
        guard let session = self.session else { return false }
        return nghttp2_session_want_read(session) != 0 || nghttp2_session_want_write(session) != 0
    }

    // MARK: Callbacks

    private func beginHeaders(_ frame: nghttp2_frame) -> Int32 {
        guard frame.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
        var head = HeadInProgress()
        // A HEADERS frame after the final head (not after a 1xx one) carries trailers.
        head.isTrailer = frame.headers.cat == NGHTTP2_HCAT_HEADERS && self.sawFinalHead.contains(frame.hd.stream_id)
        self.heads[frame.hd.stream_id] = head
        return 0
    }

    /// Streams whose final head arrived (a later HEADERS frame is their trailers).
    private var sawFinalHead: Set<Int32> = []

    private func header(_ frame: nghttp2_frame, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 {
        let streamID = frame.hd.stream_id
        guard var head = self.heads[streamID] else { return 0 }
        head.size += name.count + value.count + 32
        guard head.size <= self.settings.maxHeaderListSize else {
            // Resets this stream (nghttp2 sends RST_STREAM INTERNAL_ERROR); the others go on.
            self.heads[streamID] = nil
            return Int32(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let nameText = String(decoding: name, as: UTF8.self)
        let valueText = String(decoding: value, as: UTF8.self)
        if name.first == UInt8(ascii: ":") {
            // nghttp2 lets only :status through in a response.
            if nameText == ":status" { head.status = Int(valueText) }
        } else {
            _ = head.fields.appendField(name: UnsafeRawBufferPointer(name), value: UnsafeRawBufferPointer(value))
        }
        self.heads[streamID] = head
        return 0
    }

    private func frameReceived(_ frame: nghttp2_frame) -> Int32 {
        let streamID = frame.hd.stream_id
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            guard let head = self.heads.removeValue(forKey: streamID) else { return 0 }
            if head.isTrailer {
                self.events.append(.trailers(streamID: streamID, head.fields.makeFields()))
                return 0
            }
            // nghttp2 checked the pseudo-fields (one :status of three digits, no request ones).
            let status = HTTPResponse.Status(code: head.status ?? 0)
            if (100..<200).contains(status.code) {
                self.events.append(.informational(streamID: streamID, HTTPResponse(status: status, headerFields: head.fields.makeFields())))
            } else {
                self.sawFinalHead.insert(streamID)
                self.events.append(.head(streamID: streamID, Head(status: status, fields: head.fields), endStream: endStream))
            }
        case NGHTTP2_DATA.rawValue:
            if endStream { self.events.append(.data(streamID: streamID, [], endStream: true)) }
            if frame.hd.length == 0 && !endStream {
                // Empty DATA frames cost the peer nothing and us a callback each: a run of
                // them is a flood (the "0-length headers/data" class), not a body.
                self.emptyDataFrames += 1
                if self.emptyDataFrames > Self.maxEmptyDataFrames {
                    self.lastError = "more than \(Self.maxEmptyDataFrames) empty DATA frames in a row"
                    return Int32(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
                }
            } else {
                self.emptyDataFrames = 0
            }
        case NGHTTP2_GOAWAY.rawValue:
            self.peerWentAway = true
            self.events.append(.goAway(lastStreamID: frame.goaway.last_stream_id, errorCode: frame.goaway.error_code))
        case NGHTTP2_PING.rawValue:
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { self.events.append(.pingAcknowledged) }
        case NGHTTP2_SETTINGS.rawValue:
            guard frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0, let session = self.session else { return 0 }
            let limit = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
            self.events.append(.settings(maxConcurrentStreams: limit == UInt32.max ? nil : Int(limit)))
        default:
            break
        }
        return 0
    }

    private func dataReceived(streamID: Int32, _ data: UnsafeBufferPointer<UInt8>) -> Int32 {
        if let session = self.session { _ = nghttp2_session_consume_connection(session, data.count) }
        self.events.append(.data(streamID: streamID, Array(data), endStream: false))
        return 0
    }

    private func streamClosed(streamID: Int32, errorCode: UInt32) -> Int32 {
        self.heads[streamID] = nil
        self.bodies[streamID] = nil
        self.sawFinalHead.remove(streamID)
        self.events.append(.streamClosed(streamID: streamID, errorCode: errorCode))
        return 0
    }

    private func readBody(streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int,
                          flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard var body = self.bodies[streamID] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        if body.offset == body.bytes.count, body.open {
            // Nothing given yet: wait, and ask the producer for more.
            body.deferred = true
            self.bodies[streamID] = body
            self.events.append(.bodyWanted(streamID: streamID))
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
        let count = min(length, body.bytes.count - body.offset)
        body.bytes.withUnsafeBufferPointer { bytes in
            if count > 0, let base = bytes.baseAddress { buffer.update(from: base + body.offset, count: count) }
        }
        body.offset += count
        if body.offset == body.bytes.count, !body.open {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            self.bodies[streamID] = nil
        } else {
            self.bodies[streamID] = body
        }
        return count
    }

    static func describe(_ code: Int32) -> String {
        guard let text = nghttp2_strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
