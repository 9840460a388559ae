import CLLHTTP
import SalvoCore
import SalvoTransport

/// A connection of a scripted run (``Workload``): one call at a time, each built by the
/// connection's virtual user, its response kept just long enough for the user's checks.
extension LoadConnection {
    /// Sends the user's next call when it is due: at once in a closed run (after the last
    /// call's think time), on the connection's schedule at a constant rate.
    func fillScripted(now: UInt64, script: VirtualUser) {
        // One call at a time, and never over a request still being written.
        guard self.inFlight == 0, !self.waitingForDue, self.writeOffset == self.writeEnd else { return }
        if let http2 = self.http2, !http2.acceptsStreams {
            // The server is going away (GOAWAY): a new connection carries on.
            return self.reconnect()
        }
        let rate = self.worker.rateInterval
        if let interval = rate, self.nextDue == 0 { self.nextDue = now &+ self.worker.initialOffset(interval) }
        // Calls the script fails to build are spent; a few in a row at most before the loop
        // gets its turn back (a schedule far behind would otherwise spend them all here).
        for _ in 0..<Self.failuresInARow {
            if self.nextDue > now {
                self.waitingForDue = true
                self.worker.loop.scheduleTimer(at: Deadline(nanoseconds: self.nextDue), target: self, token: self.nextDue)
                return
            }
            guard self.worker.takeBudget(1) == 1 else { return }
            // At a constant rate, latency counts from when the call was due, however late it goes.
            let sentAt = rate == nil ? now : self.nextDue
            if let interval = rate { self.nextDue &+= interval }
            // A call the server refused unprocessed goes again as it was built.
            let resends = self.resendsCall && self.http2 != nil
            self.resendsCall = false
            if let request = resends ? script.lastRequest : script.nextRequest(), let base = request.baseAddress {
                return self.send(request, from: base, sentAt: sentAt, script: script)
            }
            // Nothing to send (the script failed, and counted it): in a closed loop the next
            // call goes after a pause, so that a script failing every time cannot spin the loop.
            if rate == nil { self.nextDue = now &+ 1_000_000 }
            self.worker.scriptCallFailed()
        }
        self.waitingForDue = true
        self.nextDue = max(self.nextDue, now &+ 1_000_000)
        self.worker.loop.scheduleTimer(at: Deadline(nanoseconds: self.nextDue), target: self, token: self.nextDue)
    }

    static let failuresInARow = 16

    private func send(_ request: UnsafeRawBufferPointer, from base: UnsafeRawPointer, sentAt: UInt64, script: VirtualUser) {
        self.requestIsHead = script.isHead
        self.keepsResponseBody = script.keepsBody
        self.fieldSelection = script.fields
        self.sendTimes[self.ringStart] = sentAt
        self.inFlight = 1
        if let http2 = self.http2 { return self.send(request, over: http2, sentAt: sentAt, script: script) }
        if self.carriedRequest { self.worker.statistics.connectionsReused += 1 } else { self.carriedRequest = true }
        self.writeBase = base
        self.writeOffset = 0
        self.writeEnd = request.count
        self.flush()
    }

    /// HTTP/2: the call, as its user encoded it (a header list, then the body), on a new stream.
    private func send(_ request: UnsafeRawBufferPointer, over http2: LoadHTTP2Session, sentAt: UInt64, script: VirtualUser) {
        guard let list = script.http2Request else {
            // An HTTP/1.1 encoding on an HTTP/2 connection: a failure of ours, not the script's.
            self.worker.statistics.errors.protocol += 1
            return self.reconnect()
        }
        self.lastProgress = LoadClock.now()
        let body = UnsafeRawBufferPointer(rebasing: request[list.bodyStart...])
        guard http2.submit(list.spans, over: request, body: body, sentAt: sentAt) else {
            // The session takes no new stream (the server is going away): a new connection
            // carries on, and the call is not counted as made.
            self.inFlight = 0
            self.worker.returnBudget(1)
            self.resendsCall = true
            return self.reconnect()
        }
        if self.carriedRequest { self.worker.statistics.connectionsReused += 1 } else { self.carriedRequest = true }
        self.flush()
    }

    // MARK: HTTP/2 responses, kept for the checks

    /// A response begins (interim or final): what the last one kept is dropped.
    func forgetResponse() {
        self.responseFields.pointee.removeAll()
        self.responseBody?.count = 0
        self.responseBodyCount = 0
    }

    /// A field of the head being read, kept when the call's user reads it.
    func recordField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard self.fieldSelection.wants(name), self.responseFields.pointee.byteCount <= Self.longestHead else { return }
        self.responseFields.pointee.appendParsedField(name: name, value: value)
    }

    /// A piece of the body (HTTP/1.1 or HTTP/2): counted, and kept up to the run's limit when
    /// the call keeps it.
    func keepBody(_ piece: UnsafeRawBufferPointer) {
        self.responseBodyCount += piece.count
        guard self.keepsResponseBody, let body = self.responseBody else { return }
        let room = self.worker.bodyLimit - body.count
        if room > 0 { body.append(UnsafeRawBufferPointer(rebasing: piece.prefix(room))) }
    }

    /// Lends the response that just ended to the user, and notes how long it thinks.
    @inline(__always)
    func deliver(to script: VirtualUser, sentAt: UInt64) {
        let kept = (self.keepsResponseBody ? self.responseBody?.bytes : nil) ?? UnsafeRawBufferPointer(start: nil, count: 0)
        let think = script.responded(ScriptedResponse(
            statusCode: self.status, latency: .nanoseconds(Int64(clamping: self.readTime &- sentAt)),
            fields: UnsafePointer(self.responseFields), body: kept, bodyCount: self.responseBodyCount))
        if think > 0, self.worker.rateInterval == nil { self.nextDue = self.readTime &+ think }
        // A server may answer before it has read the whole request (a 413 for a large body):
        // the rest cannot go out on this connection any more, and the next call must not be
        // written over it. A new connection carries on.
        if self.writeOffset < self.writeEnd { self.mustReconnect = true }
    }

    // MARK: Keeping the response for the checks

    /// Adds to a scripted run's `settings` the callbacks that keep a response's body (up to
    /// the run's limit), and returns the same settings with callbacks for a head's fields
    /// piece by piece.
    ///
    /// A head is read in one pass once llhttp has accepted it (``HeadWalk``), from the bytes
    /// of the read it began with — nearly always the response's first byte is a read's first
    /// byte, as a user has one call in flight. A head that began after another message in
    /// the same read (an interim 100 or 103, then the answer) has its fields handed over by
    /// llhttp's callbacks instead: the connection switches its parser to the returned
    /// settings for that head. Fields of a chunked body's trailer are not kept.
    static func keepResponses(in settings: UnsafeMutablePointer<llhttp_settings_t>) -> UnsafeMutablePointer<llhttp_settings_t> {
        settings.pointee.on_message_begin = { parser in
            LoadConnection.borrowed(parser) { $0.messageBegan() }
        }
        settings.pointee.on_body = { parser, at, length in
            LoadConnection.borrowed(parser) { connection in
                connection.keepBody(UnsafeRawBufferPointer(start: at, count: length))
                return 0
            }
        }
        let pieces = UnsafeMutablePointer<llhttp_settings_t>.allocate(capacity: 1)
        pieces.initialize(to: settings.pointee)
        // A head handed over in pieces is bounded as a carried one is.
        pieces.pointee.on_header_field = { parser, at, length in
            LoadConnection.borrowed(parser) {
                $0.responseFields.pointee.appendNamePiece(UnsafeRawBufferPointer(start: at, count: length))
                return $0.responseFields.pointee.byteCount > LoadConnection.longestHead ? -1 : 0
            }
        }
        pieces.pointee.on_header_value = { parser, at, length in
            LoadConnection.borrowed(parser) {
                $0.responseFields.pointee.appendValuePiece(UnsafeRawBufferPointer(start: at, count: length))
                return $0.responseFields.pointee.byteCount > LoadConnection.longestHead ? -1 : 0
            }
        }
        pieces.pointee.on_header_value_complete = { parser in
            LoadConnection.borrowed(parser) {
                $0.responseFields.pointee.closeParsedField()
                return 0
            }
        }
        return pieces
    }

    /// A message began: what the last one kept is dropped, and its head will be walked if it
    /// began with this read, or handed over in pieces if not — or neither, when its user
    /// reads none of its fields.
    private func messageBegan() -> Int32 {
        self.forgetResponse()
        self.headCarry?.count = 0
        var readsFields = true
        if case .none = self.fieldSelection { readsFields = false }
        self.walkingHead = readsFields && self.messagesThisRead == 0
        let inPieces = readsFields && !self.walkingHead
        let settings = inPieces ? self.fieldSettings ?? self.parserSettings : self.parserSettings
        self.parser.pointee.settings = UnsafeMutableRawPointer(settings)
        return 0
    }

    /// The head is complete: its fields are recorded, if they are to be walked. Returns
    /// false when the head is not what llhttp should have accepted.
    func scriptedHeadCompleted() -> Bool {
        // What follows the head — a body, a chunked body's trailer — brings no fields.
        self.parser.pointee.settings = UnsafeMutableRawPointer(self.parserSettings)
        guard self.walkingHead else { return true }
        self.walkingHead = false
        guard let start = self.readStart, let end = self.readEnd, let carry = self.headCarry else { return false }
        let read = UnsafeRawBufferPointer(start: start, count: start.distance(to: end))
        guard carry.count > 0 else { return self.record(read) }
        carry.append(read)
        defer { carry.count = 0 }
        return self.record(carry.bytes)
    }

    /// Records the fields of a head llhttp has accepted that its user reads — until each
    /// has come, when only their first values are read. (A field folded over several lines,
    /// obsolete and rare, is recorded whatever its name.)
    private func record(_ head: UnsafeRawBufferPointer) -> Bool {
        var walk = HeadWalk(head)
        var names: UnsafeBufferPointer<UnsafeRawBufferPointer>?
        var allSeen: UInt64 = 0
        if case .named(let wanted, let firstValuesOnly) = self.fieldSelection {
            names = wanted
            if firstValuesOnly { allSeen = wanted.count == 64 ? ~0 : (1 << UInt64(wanted.count)) - 1 }
        }
        var seen: UInt64 = 0
        while true {
            switch walk.next() {
            case .field(let name, let value):
                guard let names else {
                    self.responseFields.pointee.appendParsedField(name: name, value: value)
                    continue
                }
                guard let index = FieldSelection.index(of: name, in: names) else { continue }
                self.responseFields.pointee.appendParsedField(name: name, value: value)
                seen |= 1 << UInt64(index)
                if seen == allSeen { return true }
            case .fieldName(let name): self.responseFields.pointee.appendNamePiece(name)
            case .fieldValue(let piece): self.responseFields.pointee.appendValuePiece(piece)
            case .fieldComplete: self.responseFields.pointee.closeParsedField()
            case .end: return true
            case .malformed: return false
            }
        }
    }

    /// A read ended inside a head to be walked: its bytes wait for the rest. False when the
    /// head has grown past what any server sends.
    func carryHead() -> Bool {
        guard let start = self.readStart, let end = self.readEnd, let carry = self.headCarry else { return false }
        carry.append(UnsafeRawBufferPointer(start: start, count: start.distance(to: end)))
        return carry.count <= Self.longestHead
    }

    /// The longest head a scripted run reads (a megabyte; llhttp itself sets no bound).
    static let longestHead = 1 << 20
}
