internal import CNGHTTP2
import SalvoCore

/// One load connection's HTTP/2 session: nghttp2 with callbacks that only count, as h2load's
/// are. A request is a `nghttp2_submit_request` of the header list built once for the run
/// (its send time kept as the stream's user data, so nothing is allocated to remember it); a
/// response is its `:status` and the stream's close, when its latency is recorded. What
/// nghttp2 has to send goes straight from its buffer to the socket; only what the socket did
/// not take is copied, to wait for writability.
///
/// Loop-confined, as its ``LoadConnection`` is.
final class LoadHTTP2Session {
    private let session: OpaquePointer
    unowned let connection: LoadConnection
    /// The header list, as nghttp2 reads it (names and values point into `storage`).
    private let headers: UnsafeMutablePointer<nghttp2_nv>
    private let headerCount: Int
    private let storage: UnsafeMutableRawPointer
    /// The request body, when the run sends one, and how far each stream got through it.
    private let body: [UInt8]
    private var bodyOffsets: [Int32: Int] = [:]
    /// The `:status` of each stream whose head came, until it closes.
    private var statuses: [Int32: Int] = [:]
    /// A scripted run: whether response fields are kept, whether a response head (not a
    /// trailer) is being read, and the body of the call in flight, which its user's buffer
    /// holds until its next call (one call at a time: one stream).
    private let recordsFields: Bool
    private var headOpen = false
    private var callBody = UnsafeRawBufferPointer(start: nil, count: 0)
    private var callBodyOffset = 0
    /// The stream that reads `callBody` (0: none): no other stream reads it, and none after
    /// the call has ended (its user's buffer then holds the next call).
    private var callStream: Int32 = 0
    /// The call's header list as nghttp2 reads it, made again for each call in one reused array.
    private var callHeaders: UnsafeMutablePointer<nghttp2_nv>
    private var callHeaderCapacity = 16
    /// Bytes nghttp2 made that the socket has not taken yet, from `pendingOffset`.
    private var pending: [UInt8] = []
    private var pendingOffset = 0

    enum Flush { case done, blocked(wantsRead: Bool), failed }

    init(connection: LoadConnection, block: HTTP2HeaderBlock, body: [UInt8], maxStreams: Int) throws(TransportError) {
        // The session first: until it exists nothing is allocated that a failure must free.
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw TransportError(.invalidConfiguration, detail: "nghttp2 could not allocate its callbacks")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let name, let value, let user else { return 0 }
            let this = Unmanaged<LoadHTTP2Session>.fromOpaque(user).takeUnretainedValue()
            guard nameLength == 7, name[0] == UInt8(ascii: ":"), name[1] == UInt8(ascii: "s"), valueLength == 3 else {
                if this.recordsFields, this.headOpen, nameLength > 0, name[0] != UInt8(ascii: ":") {
                    this.connection.recordField(name: UnsafeRawBufferPointer(start: name, count: nameLength),
                                                value: UnsafeRawBufferPointer(start: value, count: valueLength))
                }
                return 0
            }
            let status = Int(value[0] &- 48) * 100 + Int(value[1] &- 48) * 10 + Int(value[2] &- 48)
            // A 1xx head is followed by the final one, which overwrites it.
            this.statuses[frame.pointee.hd.stream_id] = status
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { session, frame, user in
            guard let session, let frame, let user, frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
                  frame.pointee.hd.type == UInt8(NGHTTP2_DATA.rawValue) || frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue)
            else { return 0 }
            Unmanaged<LoadHTTP2Session>.fromOpaque(user).takeUnretainedValue().responseEnded(session, frame.pointee.hd.stream_id)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { session, streamID, errorCode, user in
            guard let session, let user else { return 0 }
            let this = Unmanaged<LoadHTTP2Session>.fromOpaque(user).takeUnretainedValue()
            this.statuses[streamID] = nil
            if !this.body.isEmpty { this.bodyOffsets[streamID] = nil }
            if streamID == this.callStream { this.endCallBody() }
            // Still carrying its send time: closed before its response ended.
            if let sent = nghttp2_session_get_stream_user_data(session, streamID) {
                if errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
                    // Never processed (a GOAWAY below it, or refused): it goes again elsewhere.
                    this.connection.http2StreamRefused()
                } else {
                    this.connection.http2StreamClosed(status: nil, sentAt: UInt64(UInt(bitPattern: sent)))
                }
            }
            return 0
        }
        if connection.script != nil {
            // A scripted run keeps what its user reads of each response: the fields of its
            // heads (an interim head's are dropped for the final one's; trailers bring none),
            // and its body up to the run's limit.
            nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
                guard let frame, let user else { return 0 }
                let this = Unmanaged<LoadHTTP2Session>.fromOpaque(user).takeUnretainedValue()
                let status = this.statuses[frame.pointee.hd.stream_id] ?? 0
                this.headOpen = status < 200
                if this.headOpen { this.connection.forgetResponse() }
                return 0
            }
            nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, _, data, length, user in
                guard let user else { return 0 }
                Unmanaged<LoadHTTP2Session>.fromOpaque(user).takeUnretainedValue().connection
                    .keepBody(UnsafeRawBufferPointer(start: data, count: length))
                return 0
            }
        }
        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else {
            throw TransportError(.invalidConfiguration, detail: "nghttp2 could not allocate its options")
        }
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_max_outbound_ack(option, 1000)
        var session: OpaquePointer?
        let made = nghttp2_session_client_new2(&session, callbacks, nil, option)
        guard made == 0, let session else {
            throw TransportError(.invalidConfiguration, detail: "nghttp2 could not make a session (\(made))")
        }
        self.session = session
        self.callHeaders = .allocate(capacity: self.callHeaderCapacity)
        self.connection = connection
        self.recordsFields = connection.script != nil
        self.body = body
        let bytes = block.storage
        let storage = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
        bytes.withUnsafeBytes { if let base = $0.baseAddress { storage.copyMemory(from: base, byteCount: $0.count) } }
        self.storage = storage
        self.headerCount = block.spans.count
        self.headers = .allocate(capacity: block.spans.count)
        let base = storage.assumingMemoryBound(to: UInt8.self)
        for (index, span) in block.spans.enumerated() {
            self.headers[index] = nghttp2_nv(name: base + span.name.lowerBound, value: base + span.value.lowerBound,
                                             namelen: span.name.count, valuelen: span.value.count,
                                             flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
        }

        nghttp2_session_set_user_data(session, Unmanaged.passUnretained(self).toOpaque())
        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: UInt32(maxStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        _ = nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
    }

    deinit {
        self.callHeaders.deallocate()
        nghttp2_session_del(self.session)
        self.headers.deallocate()
        self.storage.deallocate()
    }

    /// The server ended its side of `streamID`: the response is whole and timed now. A request
    /// body still going out (the server answered before taking it) is not needed: the stream
    /// is reset with NO_ERROR rather than left holding a place.
    private func responseEnded(_ session: OpaquePointer, _ streamID: Int32) {
        guard let sent = nghttp2_session_get_stream_user_data(session, streamID) else { return }
        _ = nghttp2_session_set_stream_user_data(session, streamID, nil)
        let status = self.statuses.removeValue(forKey: streamID) ?? 0
        if streamID == self.callStream { self.endCallBody() }
        self.connection.http2StreamClosed(status: status, sentAt: UInt64(UInt(bitPattern: sent)))
        if nghttp2_session_get_stream_local_close(session, streamID) == 0 {
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_NO_ERROR.rawValue)
        }
    }

    /// Starts a request on a new stream, sent at `sentAt` (ns; never 0). False when the
    /// session takes no more (the server went away).
    func submit(sentAt: UInt64) -> Bool {
        let user = UnsafeMutableRawPointer(bitPattern: UInt(sentAt))
        let stream: Int32
        if self.body.isEmpty {
            stream = nghttp2_submit_request(self.session, nil, self.headers, self.headerCount, nil, user)
        } else {
            var provider = nghttp2_data_provider()
            provider.read_callback = { _, streamID, buffer, length, flags, _, user in
                guard let buffer, let flags, let user else {
                    return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
                }
                return Unmanaged<LoadHTTP2Session>.fromOpaque(user).takeUnretainedValue()
                    .readBody(streamID, into: buffer, length: length, flags: flags)
            }
            stream = nghttp2_submit_request(self.session, nil, self.headers, self.headerCount, &provider, user)
            if stream > 0 { self.bodyOffsets[stream] = 0 }
        }
        return stream > 0
    }

    /// A scripted run: starts the user's call — its header list, `spans` over `storage`, and
    /// `body` (both valid until the call ends) — sent at `sentAt`. False when the session
    /// takes no more.
    func submit(_ spans: [(name: Range<Int>, value: Range<Int>)], over storage: UnsafeRawBufferPointer,
                body: UnsafeRawBufferPointer, sentAt: UInt64) -> Bool {
        guard let start = storage.baseAddress else { return false }
        if spans.count > self.callHeaderCapacity {
            self.callHeaders.deallocate()
            self.callHeaderCapacity = max(spans.count, self.callHeaderCapacity * 2)
            self.callHeaders = .allocate(capacity: self.callHeaderCapacity)
        }
        let base = UnsafeMutablePointer(mutating: start.assumingMemoryBound(to: UInt8.self))
        for (index, span) in spans.enumerated() {
            self.callHeaders[index] = nghttp2_nv(name: base + span.name.lowerBound, value: base + span.value.lowerBound,
                                                 namelen: span.name.count, valuelen: span.value.count,
                                                 flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
        }
        let user = UnsafeMutableRawPointer(bitPattern: UInt(sentAt))
        // nghttp2 copies the header list before it returns; the body it reads later.
        guard !body.isEmpty else {
            return nghttp2_submit_request(self.session, nil, self.callHeaders, spans.count, nil, user) > 0
        }
        self.callBody = body
        self.callBodyOffset = 0
        var provider = nghttp2_data_provider()
        provider.read_callback = { _, streamID, buffer, length, flags, _, user in
            guard let buffer, let flags, let user else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            return Unmanaged<LoadHTTP2Session>.fromOpaque(user).takeUnretainedValue()
                .readCallBody(streamID, into: buffer, length: length, flags: flags)
        }
        let stream = nghttp2_submit_request(self.session, nil, self.callHeaders, spans.count, &provider, user)
        guard stream > 0 else {
            self.endCallBody()
            return false
        }
        self.callStream = stream
        return true
    }

    private func endCallBody() {
        self.callBody = UnsafeRawBufferPointer(start: nil, count: 0)
        self.callBodyOffset = 0
        self.callStream = 0
    }

    private func readCallBody(_ streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int,
                              flags: UnsafeMutablePointer<UInt32>) -> Int {
        // A stream whose call has ended reads nothing more (nghttp2 resets it first).
        guard streamID == self.callStream else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let count = Self.copy(self.callBody, from: self.callBodyOffset, into: buffer, length: length, flags: flags)
        self.callBodyOffset += count
        return count
    }

    /// Copies what fits of `body` from `offset` into nghttp2's `buffer`, marking the end.
    private static func copy(_ body: UnsafeRawBufferPointer, from offset: Int, into buffer: UnsafeMutablePointer<UInt8>,
                             length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        let count = min(length, body.count - offset)
        if count > 0, let base = body.baseAddress {
            UnsafeMutableRawPointer(buffer).copyMemory(from: base + offset, byteCount: count)
        }
        if offset + count == body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }

    private func readBody(_ streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int,
                          flags: UnsafeMutablePointer<UInt32>) -> Int {
        let offset = self.bodyOffsets[streamID] ?? self.body.count
        let count = self.body.withUnsafeBytes { Self.copy($0, from: offset, into: buffer, length: length, flags: flags) }
        self.bodyOffsets[streamID] = offset + count
        return count
    }

    /// Whether a new stream may start (not after the server's GOAWAY).
    var acceptsStreams: Bool { nghttp2_session_check_request_allowed(self.session) != 0 }

    /// Feeds bytes read; false when the session broke (a protocol error).
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        nghttp2_session_mem_recv(self.session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count) >= 0
    }

    /// Whether the session still wants the connection (false after GOAWAY both ways, or an error).
    var isAlive: Bool {
        nghttp2_session_want_read(self.session) != 0 || nghttp2_session_want_write(self.session) != 0
    }

    /// Writes what is pending, then what nghttp2 has to send, while the socket takes it.
    /// nghttp2 hands out a frame or two at a time; they are gathered up to a TLS record's
    /// worth (16 KiB) and written together — one `send`, or one record, for many requests,
    /// as h2load's write buffer does — instead of one small write per frame.
    func flush(to socket: Socket) -> Flush {
        while true {
            while self.pendingOffset < self.pending.count {
                let result = self.pending.withUnsafeBytes { socket.write(UnsafeRawBufferPointer(rebasing: $0[self.pendingOffset...])) }
                switch result {
                case .wrote(let count): self.pendingOffset += count
                case .wouldBlock(let wantsRead): return .blocked(wantsRead: wantsRead)
                case .failed: return .failed
                }
            }
            self.pending.removeAll(keepingCapacity: true)
            self.pendingOffset = 0
            while self.pending.count < Self.batch {
                var chunk: UnsafePointer<UInt8>?
                let count = nghttp2_session_mem_send(self.session, &chunk)
                if count < 0 { return .failed }
                guard count > 0, let chunk else { break }
                self.pending.append(contentsOf: UnsafeBufferPointer(start: chunk, count: count))
            }
            if self.pending.isEmpty { return .done }
        }
    }

    /// Bytes gathered before a write: one TLS record's plaintext.
    static let batch = 16 * 1024
}
