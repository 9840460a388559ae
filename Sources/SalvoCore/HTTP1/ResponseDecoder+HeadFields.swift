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
        if !self.inTrailers, closed.tracked.isTransferEncoding { self.sawTransferEncoding = true }
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
        var walk = HeadWalk(head)
        while true {
            let rc: Int32
            switch walk.next() {
            case .field(let name, let value): rc = self.recordField(name: name, value: value)
            case .fieldName(let name): rc = self.headerField(name.baseAddress?.assumingMemoryBound(to: CChar.self), name.count)
            case .fieldValue(let piece): rc = self.headerValue(piece.baseAddress?.assumingMemoryBound(to: CChar.self), piece.count)
            case .fieldComplete: rc = self.headerValueComplete()
            case .end: return Self.proceed
            case .malformed(let detail): return self.refuse(detail.description, at: walk.line, of: head)
            }
            guard rc == Self.proceed else { return self.failed(rc, at: walk.line, of: head) }
        }
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
}
