import SalvoTransport
import CLLHTTP

/// The repair path of ``ResponseDecoder``: a head llhttp refused is collected to its end and,
/// when it is one ``ResponseHeadRepair`` may accept, parsed again from a fresh llhttp state
/// in canonical form; and the bound on every buffer that holds a head.
extension ResponseDecoder {
    /// Bytes kept for one head — carried over reads, captured, collected for repair — are
    /// bounded like the head itself, whatever llhttp skips without counting (CR LF before a
    /// status line, spaces after a colon).
    func checkHeadBuffer(_ count: Int) throws(TransportError) {
        guard count > self.limits.maxHeaderBytes + Self.headSlack else { return }
        throw TransportError(.headerTooLarge, phase: .readHead, detail: "more than \(self.limits.maxHeaderBytes) bytes of header fields")
    }

    /// Room beyond the fields' bytes for the status line and the line ends.
    static let headSlack = 8 * 1024

    /// The errors llhttp gives for a bare LF or a repeated Content-Length.
    static func mayBeRepairable(_ errno: llhttp_errno_t) -> Bool {
        errno == HPE_INVALID_HEADER_TOKEN || errno == HPE_LF_EXPECTED || errno == HPE_CR_EXPECTED
            || errno == HPE_UNEXPECTED_CONTENT_LENGTH || errno == HPE_INVALID_CONTENT_LENGTH
    }

    /// Collects a refused head until its end, then parses it again as ``ResponseHeadRepair``
    /// rewrote it — or throws the parser's error when it is not one of the repairable faults.
    /// `newBytesFrom`: where this read's bytes not yet collected begin (nil: all are);
    /// `searchedUpTo`: how much of the collected bytes is known to hold no end of head.
    func continueRepair(_ bytes: UnsafeRawBufferPointer, newBytesFrom: Int?, searchedUpTo: Int? = nil) throws(TransportError) -> Step {
        guard let error = self.repairing?.error else { return .done(.needMore) }
        // Taken out first, so that appending does not copy what was collected.
        var collected = self.repairing?.bytes ?? []
        self.repairing = nil
        let searched = searchedUpTo ?? collected.count
        if let newBytesFrom {
            collected.append(contentsOf: bytes[newBytesFrom...])
            if self.capturesHeads { self.captured.append(contentsOf: bytes[newBytesFrom...]) }
        }
        // Only the new bytes are searched for the end of the head: a head trickled in byte
        // by byte costs one scan, not one per read.
        guard collected.withUnsafeBytes({ ResponseHeadRepair.headEnds(in: $0, searchingFrom: searched) }) else {
            try self.checkHeadBuffer(collected.count)
            self.repairing = (collected, error)
            return .done(.needMore)
        }
        let outcome = collected.withUnsafeBytes { ResponseHeadRepair.repair($0) }
        switch outcome {
        case .unrepairable(let badLine):
            if self.capturesHeads, let badLine {
                // The lines before the one that cannot be read, as curl shows them.
                let start = ResponseHeadRepair.headStart(in: collected, before: badLine)
                self.partialRawHead = Array(collected[start..<badLine])
            }
            throw error
        case .incomplete:
            try self.checkHeadBuffer(collected.count)
            self.repairing = (collected, error)
            return .done(.needMore)
        case .repaired(let head, let length, _, let ignoredLength):
            self.ignoredContentLength = ignoredLength
            // What follows the head is the end of this read: earlier reads held head only.
            let tail = collected.count - length
            guard tail <= bytes.count else { throw error }
            let resumeAt = bytes.count - tail
            // The head is whole now: what the first refusal kept of it is no longer a failed head.
            self.partialRawHead = nil
            self.restartParser()
            self.headCarry.removeAll(keepingCapacity: true)
            let rc = head.withUnsafeBytes { whole in
                self.headInput = HeadInput(start: whole.baseAddress!, end: whole.baseAddress! + whole.count)
                defer { self.headInput = nil }
                return llhttp_execute(self.parser, whole.baseAddress!.assumingMemoryBound(to: CChar.self), whole.count)
            }
            switch rc {
            case HPE_OK:
                break
            case HPE_PAUSED where self.pausedAfterInterim:
                self.pausedAfterInterim = false
                llhttp_resume(self.parser)
            case HPE_PAUSED:
                // A response without a body (HEAD, 204, 304, Content-Length: 0) ends with its head.
                self.bytesOfCurrentResponse -= tail
                return .done(.complete(consumed: resumeAt))
            default:
                if let failure = self.failure { throw failure }
                throw self.protocolError(nil)
            }
            return resumeAt == bytes.count ? .done(.needMore) : .resume(at: resumeAt)
        }
    }
}
