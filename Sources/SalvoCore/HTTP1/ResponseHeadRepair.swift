/// A response head that llhttp refused, read again line by line to see whether it is one
/// that RFC 9112 lets a recipient accept and every mainstream client does — and if so,
/// rewritten in the canonical form llhttp parses strictly.
///
/// Three things are repaired, nothing else:
/// - a bare LF ending the status line or a field line (RFC 9112 §2.2: "a recipient MAY
///   recognize a single LF as a line terminator"), rewritten as CRLF;
/// - Content-Length repeated with one value, as separate fields or as a list
///   (`6, 6`; RFC 9110 §8.6: the recipient "MAY … replace that invalid field value with a
///   single instance of the decimal value"), rewritten as one field. Different values stay
///   an error: that is how responses are split;
/// - a Content-Length too large for any length (more than 18 digits), dropped as curl
///   ignores it: the body then ends at the close (and the connection with it).
///
/// Anything else llhttp refused stays refused, and what is repaired is then parsed by llhttp
/// as strictly as any other head, so no limit loosens: sizes, counts, field syntax, framing
/// conflicts. Only the final head and interim heads pass through here, never a body.
enum ResponseHeadRepair {
    enum Outcome: Equatable {
        /// No blank line yet: the head may continue in the next read.
        case incomplete
        /// Nothing here is one of the repairable faults: the parser's error stands.
        /// `badLine`: where the line that cannot be read begins, when it is one seen here (a
        /// Content-Length of another value or not a number).
        case unrepairable(badLine: Int?)
        /// The head as CRLF lines with one Content-Length; `length` bytes of the input were
        /// the head (blank line included); `bareLineFeeds` says whether any line ended in a
        /// lone LF (a chunked body from the same server may do the same); `ignoredLength`,
        /// an out-of-range Content-Length value left out of the framing (the parsed head
        /// still shows it, as sent).
        case repaired(head: [UInt8], length: Int, bareLineFeeds: Bool, ignoredLength: String?)
    }

    /// Where a head in `bytes` begins, up to `limit`: after the empty lines (CR and LF)
    /// llhttp skips before a status line.
    static func headStart<Bytes: RandomAccessCollection>(in bytes: Bytes, before limit: Int? = nil) -> Int
        where Bytes.Element == UInt8, Bytes.Index == Int {
        let end = Swift.min(limit ?? bytes.endIndex, bytes.endIndex)
        var index = bytes.startIndex
        while index < end, bytes[index] == 0x0A || bytes[index] == 0x0D { index += 1 }
        return index
    }

    static func repair(_ raw: UnsafeRawBufferPointer) -> Outcome {
        var head: [UInt8] = []
        head.reserveCapacity(raw.count + 32)
        // Empty lines before the status line are skipped, as llhttp skips them.
        var lineStart = Self.headStart(in: raw)
        var isStatusLine = true
        var bareLineFeeds = false
        var contentLength: UInt64?
        var changedContentLength = false
        var ignoredLength: String?
        while let newline = raw[lineStart...].firstIndex(of: 0x0A) {
            var lineEnd = newline
            if lineEnd > lineStart, raw[lineEnd - 1] == 0x0D {
                lineEnd -= 1
            } else {
                bareLineFeeds = true
            }
            let line = UnsafeRawBufferPointer(rebasing: raw[lineStart..<lineEnd])
            let thisLine = lineStart
            lineStart = newline + 1
            if line.isEmpty && !isStatusLine {
                guard bareLineFeeds || changedContentLength else { return .unrepairable(badLine: nil) }
                head.append(contentsOf: [0x0D, 0x0A])
                return .repaired(head: head, length: lineStart, bareLineFeeds: bareLineFeeds, ignoredLength: ignoredLength)
            }
            isStatusLine = false
            if self.isOutOfRangeContentLength(line) {
                // More digits than any length (curl: "overflow content-length"): ignored, so
                // the body ends at the close — or at another Content-Length, if one is given.
                changedContentLength = true
                ignoredLength = String(decoding: Self.trimmed(line[("content-length".utf8.count + 1)...]), as: UTF8.self)
                continue
            }
            switch self.contentLengthValue(of: line) {
            case .none:
                head.append(contentsOf: line)
            case .some(nil):
                return .unrepairable(badLine: thisLine)   // an unreadable or self-contradicting Content-Length
            case .some(let (value, isList)?):
                if let contentLength {
                    guard contentLength == value else { return .unrepairable(badLine: thisLine) }
                    changedContentLength = true
                    continue   // the same length again: dropped
                }
                contentLength = value
                if isList {
                    changedContentLength = true
                    head.append(contentsOf: "Content-Length: \(value)".utf8)
                } else {
                    head.append(contentsOf: line)
                }
            }
            head.append(contentsOf: [0x0D, 0x0A])
        }
        return .incomplete
    }

    /// Whether `line` is a Content-Length of one decimal number too large for any length
    /// (past a signed 64-bit count, curl's limit too).
    static func isOutOfRangeContentLength(_ line: UnsafeRawBufferPointer) -> Bool {
        guard case .some(nil) = self.contentLengthValue(of: line) else { return false }
        let digits = Self.trimmed(line[("content-length".utf8.count + 1)...])
        return !digits.isEmpty && digits.allSatisfy { (0x30...0x39).contains($0) } && Self.decimal(digits) == nil
    }

    /// `bytes` without the spaces and tabs at either end.
    static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return bytes[bytes.startIndex..<bytes.startIndex]
        }
        return bytes[first...last]
    }

    /// Whether a blank line ends a head in `raw` (after the empty lines before its status
    /// line), looking only from `from` on: the bytes before it were searched already.
    static func headEnds(in raw: UnsafeRawBufferPointer, searchingFrom from: Int) -> Bool {
        var index = Swift.max(Self.headStart(in: raw), from - 2)
        while index < raw.count {
            if raw[index] == 0x0A {
                if index + 1 < raw.count, raw[index + 1] == 0x0A { return true }
                if index + 2 < raw.count, raw[index + 1] == 0x0D, raw[index + 2] == 0x0A { return true }
            }
            index += 1
        }
        return false
    }

    /// The value of ASCII digits, nil when they are not all digits or exceed Int64.max.
    static func decimal<Digits: Collection>(_ digits: Digits) -> UInt64? where Digits.Element == UInt8 {
        var value: UInt64 = 0
        for digit in digits {
            guard (0x30...0x39).contains(digit) else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(digit - 0x30))
            guard !overflow, !carry, sum <= UInt64(Int64.max) else { return nil }
            value = sum
        }
        return value
    }

    /// For a Content-Length field line: its one value and whether it came as a list (nil
    /// when the value is not a list of identical decimal numbers). For any other line: `.none`.
    static func contentLengthValue(of line: UnsafeRawBufferPointer) -> (value: UInt64, isList: Bool)?? {
        let name = "content-length".utf8
        guard line.count > name.count, line[name.count] == UInt8(ascii: ":") else { return .none }
        // Letters in either case; the hyphen as it is (a CR or another byte is no hyphen).
        for (index, expected) in name.enumerated() {
            let byte = line[index]
            let matches = expected == UInt8(ascii: "-") ? byte == expected : (byte | 0x20) == expected && byte >= 0x41
            if !matches { return .none }
        }
        var value: UInt64?
        let elements = line[(name.count + 1)...].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        for element in elements {
            let digits = Self.trimmed(line[element.startIndex..<element.endIndex])
            guard !digits.isEmpty, let number = Self.decimal(digits) else { return .some(nil) }
            if let value, value != number { return .some(nil) }
            value = number
        }
        guard let value else { return .some(nil) }
        return .some((value, elements.count > 1))
    }
}
