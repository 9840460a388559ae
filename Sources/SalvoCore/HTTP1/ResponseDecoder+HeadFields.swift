import Glibc

/// Header fields: each counted against the limits, its name checked, and written into the
/// records — from a head's bytes once llhttp has accepted the whole head, from llhttp's
/// callbacks for trailers.
///
/// llhttp calls back for every piece of every field — four calls from C into Swift per
/// field. It is given no field callbacks for a head (it still checks every byte); when the
/// head is complete, its bytes are walked once here, and each field goes through the same
/// steps the callbacks take — the same records, the same limits, checked in the same
/// order. Trailers, rare, still come through the callbacks.
///
/// What is walked is what llhttp accepted, so its grammar is known: CRLF line ends (a bare
/// LF was repaired before llhttp saw it), every field line has a colon, a line that begins
/// with a space or a tab continues the value before it (obs-fold). llhttp's way with
/// whitespace is kept: none before a value (nor before a continuation, while the value is
/// still empty), a continuation taken whole, its line end dropped.
extension ResponseDecoder {
    /// Where the head being parsed is: the bytes carried over from earlier reads
    /// (``headCarry``), then this input from where the head began to its end. Set before
    /// each `llhttp_execute`; valid only during it.
    struct HeadInput {
        var start: UnsafeRawPointer
        var end: UnsafeRawPointer
    }

    // MARK: Each field: counted, checked, recorded

    func countHeaderBytes(_ length: Int) -> Bool {
        self.headerBytes += length
        // Past 4 GiB a field's length would not fit its record (``FieldRecords``), whatever
        // limit the caller set.
        if self.headerBytes > self.limits.maxHeaderBytes || self.headerBytes > Self.maxRecordableHeaderBytes {
            self.failure = TransportError(
                .headerTooLarge, phase: self.inTrailers ? .readBody : .readHead,
                detail: "more than \(self.limits.maxHeaderBytes) bytes of header fields")
            return false
        }
        return true
    }

    /// Bytes of the current field's name (llhttp's `on_header_field`, or a walked head's line).
    func headerField(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        guard self.countHeaderBytes(length), let at else { return Self.userError }
        self.records.appendNamePiece(UnsafeRawBufferPointer(start: at, count: length))
        return Self.proceed
    }

    /// Bytes of the current field's value.
    func headerValue(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        guard self.countHeaderBytes(length), let at else { return Self.userError }
        self.records.appendValuePiece(UnsafeRawBufferPointer(start: at, count: length))
        return Self.proceed
    }

    /// The end of the current field. Closing its record drops the value's trailing
    /// whitespace (RFC 9110 §5.5; llhttp strips the leading).
    func headerValueComplete() -> Int32 {
        guard self.countField() else { return Self.userError }
        return self.accept(self.records.closeField())
    }

    /// A whole field, as the three calls above would have taken it.
    func recordField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Int32 {
        guard self.countHeaderBytes(name.count + value.count), self.countField() else { return Self.userError }
        return self.accept(self.records.appendField(name: name, value: value))
    }

    private func countField() -> Bool {
        self.headerCount += 1
        guard self.headerCount > self.limits.maxHeaderCount else { return true }
        self.failure = TransportError(
            .tooManyHeaders, phase: self.inTrailers ? .readBody : .readHead,
            detail: "more than \(self.limits.maxHeaderCount) header fields")
        return false
    }

    /// A closed field's name, kept in its case as sent, must be a token (RFC 9110 §5.1):
    /// llhttp lets a response's names hold spaces ("Bad Name", "X-A ").
    private func accept(_ closed: FieldRecords.ClosedName) -> Int32 {
        guard closed.isToken else {
            self.failure = TransportError(.invalidResponse, phase: .readHead, detail: "invalid header field name")
            return Self.userError
        }
        if !self.inTrailers, closed.tracked == .transferEncoding { self.sawTransferEncoding = true }
        return Self.proceed
    }

    // MARK: Reading a head's bytes

    /// Records the fields of the head llhttp just accepted (from `on_headers_complete`).
    /// Returns what a callback would: 0, or an error with ``failure`` set.
    func recordHeadFields() -> Int32 {
        guard let input = self.headInput else { return Self.proceed }
        let rest = UnsafeRawBufferPointer(start: input.start, count: input.start.distance(to: input.end))
        guard !self.headCarry.isEmpty else { return self.recordFields(of: rest) }
        // A head spread over reads (rare): whole in one buffer, once, let go of after.
        var carried = self.headCarry
        self.headCarry = []
        carried.append(contentsOf: rest)
        return carried.withUnsafeBytes { self.recordFields(of: $0) }
    }

    private func recordFields(of head: UnsafeRawBufferPointer) -> Int32 {
        guard let base = head.baseAddress else { return Self.proceed }
        let end = head.count
        var index = 0
        // Empty lines llhttp skips before a status line, then the status line.
        while index < end, head[index] == 0x0D || head[index] == 0x0A { index += 1 }
        guard let statusEnd = Self.lineFeed(in: head, from: index) else { return self.refuse("no end to the status line", at: index, of: head) }
        guard Self.endsWithoutBareCR(head, line: index, lineFeed: statusEnd) else { return self.refuseBareCR(at: index, of: head) }
        index = statusEnd + 1
        var open = false
        var valueIsEmpty = true
        while true {
            guard let lineFeed = Self.lineFeed(in: head, from: index) else { return self.refuse("no end to the head", at: index, of: head) }
            guard Self.endsWithoutBareCR(head, line: index, lineFeed: lineFeed) else { return self.refuseBareCR(at: index, of: head) }
            var lineEnd = lineFeed
            if lineEnd > index, head[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            if lineEnd == index { break }   // the blank line: the end of the head
            var valueStart: Int
            if head[index] == 0x20 || head[index] == 0x09 {
                // obs-fold: the line continues the value before it.
                guard open else { return self.refuse("a continuation line with no field before it", at: index, of: head) }
                valueStart = index
            } else {
                if open {
                    let rc = self.headerValueComplete()
                    guard rc == Self.proceed else { return self.failed(rc, at: index, of: head) }
                }
                guard let colon = memchr(base + index, 0x3A, lineEnd - index) else {
                    return self.refuse("a field line without a colon", at: index, of: head)
                }
                let nameEnd = base.distance(to: UnsafeRawPointer(colon))
                valueStart = nameEnd + 1
                while valueStart < lineEnd, head[valueStart] == 0x20 || head[valueStart] == 0x09 { valueStart += 1 }
                if lineFeed + 1 < end, head[lineFeed + 1] != 0x20, head[lineFeed + 1] != 0x09 {
                    // The common case, a field on one line: written whole, at once.
                    let rc = self.recordField(name: UnsafeRawBufferPointer(rebasing: head[index..<nameEnd]),
                                              value: UnsafeRawBufferPointer(rebasing: head[valueStart..<lineEnd]))
                    guard rc == Self.proceed else { return self.failed(rc, at: index, of: head) }
                    open = false
                    index = lineFeed + 1
                    continue
                }
                let rc = self.headerField(self.chars(base + index), nameEnd - index)
                guard rc == Self.proceed else { return self.failed(rc, at: index, of: head) }
                open = true
                valueIsEmpty = true
            }
            if valueIsEmpty {
                // Before a value's first byte, whitespace is not part of it (nor, while the
                // value is still empty, at the start of a continuation line).
                while valueStart < lineEnd, head[valueStart] == 0x20 || head[valueStart] == 0x09 { valueStart += 1 }
            }
            if valueStart < lineEnd {
                valueIsEmpty = false
                let rc = self.headerValue(self.chars(base + valueStart), lineEnd - valueStart)
                guard rc == Self.proceed else { return self.failed(rc, at: index, of: head) }
            }
            index = lineFeed + 1
        }
        guard open else { return Self.proceed }
        let rc = self.headerValueComplete()
        return rc == Self.proceed ? rc : self.failed(rc, at: index, of: head)
    }

    /// Whether the line from `line` to its LF has no CR but, at most, the one right before
    /// the LF. Some llhttp builds take a CR followed by any byte at a few places (the end
    /// of the status line, right after a colon, the blank line) and swallow that byte; a
    /// head read so would not be the head llhttp framed the body by, and RFC 9112 §2.2 lets
    /// a recipient refuse a bare CR — so it is refused.
    @inline(__always)
    private static func endsWithoutBareCR(_ head: UnsafeRawBufferPointer, line: Int, lineFeed: Int) -> Bool {
        guard let base = head.baseAddress, let found = memchr(base + line, 0x0D, lineFeed - line) else { return true }
        return base.distance(to: UnsafeRawPointer(found)) == lineFeed - 1
    }

    private func refuseBareCR(at line: Int, of head: UnsafeRawBufferPointer) -> Int32 {
        self.refuse("a CR not followed by LF", at: line, of: head)
    }

    /// Fails the head at the line that begins at `line` (for what a tool shows of it).
    private func refuse(_ detail: String, at line: Int, of head: UnsafeRawBufferPointer) -> Int32 {
        self.failure = TransportError(.invalidResponse, phase: .readHead, detail: detail)
        return self.failed(Self.userError, at: line, of: head)
    }

    /// Notes where the line that failed begins, as the bytes from it to the end of the input
    /// (the walked buffer ends where the input does), so that the lines kept of a failed head
    /// end before it, as when llhttp fails a line.
    private func failed(_ rc: Int32, at line: Int, of head: UnsafeRawBufferPointer) -> Int32 {
        self.failedLineDistance = head.count - line
        return rc
    }

    private func chars(_ pointer: UnsafeRawPointer) -> UnsafePointer<CChar> {
        pointer.assumingMemoryBound(to: CChar.self)
    }

    /// The index of the next LF at or after `start`, if there is one.
    @inline(__always)
    private static func lineFeed(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard start < bytes.count, let base = bytes.baseAddress,
              let found = memchr(base + start, 0x0A, bytes.count - start) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }
}
