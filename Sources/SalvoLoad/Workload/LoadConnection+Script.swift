import CLLHTTP
import SalvoCore

/// A connection of a scripted run (``Workload``): one call at a time, each built by the
/// connection's virtual user, its response kept just long enough for the user's checks.
extension LoadConnection {
    /// Sends the user's next call when it is due: at once in a closed run (after the last
    /// call's think time), on the connection's schedule at a constant rate.
    func fillScripted(now: UInt64, script: any ScriptDriver) {
        // One call at a time, and never over a request still being written.
        guard self.inFlight == 0, !self.waitingForDue, self.writeOffset == self.writeEnd else { return }
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
            if let request = script.nextRequest(), let base = request.baseAddress {
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

    private func send(_ request: UnsafeRawBufferPointer, from base: UnsafeRawPointer, sentAt: UInt64, script: any ScriptDriver) {
        self.requestIsHead = script.isHead
        self.keepsResponseBody = script.keepsBody
        self.sendTimes[self.ringStart] = sentAt
        self.inFlight = 1
        if self.carriedRequest { self.worker.statistics.connectionsReused += 1 } else { self.carriedRequest = true }
        self.writeBase = base
        self.writeOffset = 0
        self.writeEnd = request.count
        self.flush()
    }

    /// Lends the response that just ended to the user, and notes how long it thinks.
    @inline(__always)
    func deliver(to script: any ScriptDriver, sentAt: UInt64) {
        let kept = self.keepsResponseBody ? self.responseBody?.bytes ?? UnsafeRawBufferPointer(start: nil, count: 0)
            : UnsafeRawBufferPointer(start: nil, count: 0)
        let think = script.responded(ScriptedResponse(
            statusCode: self.status, latency: .nanoseconds(Int64(clamping: self.readTime &- sentAt)),
            fields: UnsafePointer(self.responseFields), body: kept, bodyCount: self.responseBodyCount))
        if think > 0, self.worker.rateInterval == nil { self.nextDue = self.readTime &+ think }
        // A server may answer before it has read the whole request (a 413 for a large body):
        // the rest cannot go out on this connection any more, and the next call must not be
        // written over it. A new connection carries on.
        if self.writeOffset < self.writeEnd { self.mustReconnect = true }
    }

    /// The parser's callbacks that keep a response's fields and body for the checks, added
    /// to a scripted run's settings (the plain run's count only). llhttp, strict, has checked
    /// each field's name.
    static func keepResponses(in settings: UnsafeMutablePointer<llhttp_settings_t>) {
        settings.pointee.on_message_begin = { parser in
            LoadConnection.with(parser) { connection in
                connection.responseFields.pointee.removeAll()
                connection.responseBody?.count = 0
                connection.responseBodyCount = 0
            }
        }
        settings.pointee.on_header_field = { parser, at, length in
            LoadConnection.with(parser) { $0.responseFields.pointee.appendNamePiece(UnsafeRawBufferPointer(start: at, count: length)) }
        }
        settings.pointee.on_header_value = { parser, at, length in
            LoadConnection.with(parser) { $0.responseFields.pointee.appendValuePiece(UnsafeRawBufferPointer(start: at, count: length)) }
        }
        settings.pointee.on_header_value_complete = { parser in
            LoadConnection.with(parser) { $0.responseFields.pointee.closeParsedField() }
        }
        settings.pointee.on_body = { parser, at, length in
            LoadConnection.with(parser) { connection in
                connection.responseBodyCount += length
                if connection.keepsResponseBody, let body = connection.responseBody {
                    let room = connection.worker.bodyLimit - body.count
                    if room > 0 { body.append(UnsafeRawBufferPointer(start: at, count: min(room, length))) }
                }
            }
        }
    }

    /// Runs `body` with the connection a parser callback is for (borrowed: no count taken),
    /// and returns 0, which tells llhttp to go on.
    @inline(__always)
    static func with(_ parser: UnsafeMutablePointer<llhttp_t>?, _ body: (LoadConnection) -> Void) -> Int32 {
        Unmanaged<LoadConnection>.fromOpaque(parser!.pointee.data)._withUnsafeGuaranteedRef(body)
        return 0
    }
}
