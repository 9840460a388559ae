/// A response head that llhttp refused, read again line by line to see whether it is one
/// that RFC 9112 lets a recipient accept and every mainstream client does — and if so,
/// rewritten in the canonical form llhttp parses strictly.
///
/// Two things are repaired, nothing else:
/// - a bare LF ending the status line or a field line (RFC 9112 §2.2: "a recipient MAY
///   recognize a single LF as a line terminator"), rewritten as CRLF;
/// - Content-Length repeated with one value, as separate fields or as a list
///   (`6, 6`; RFC 9110 §8.6: the recipient "MAY … replace that invalid field value with a
///   single instance of the decimal value"), rewritten as one field. Different values stay
///   an error: that is how responses are split.
///
/// Anything else llhttp refused stays refused, and what is repaired is then parsed by llhttp
/// as strictly as any other head, so no limit loosens: sizes, counts, field syntax, framing
/// conflicts. Only the final head and interim heads pass through here, never a body.
enum ResponseHeadRepair {
    enum Outcome: Equatable {
        /// No blank line yet: the head may continue in the next read.
        case incomplete
        /// Nothing here is one of the two repairable faults: the parser's error stands.
        /// `badLine`: where the line that cannot be read begins, when it is one seen here (a
        /// Content-Length of another value or not a number).
        case unrepairable(badLine: Int?)
        /// The head as CRLF lines with one Content-Length; `length` bytes of the input were
        /// the head (blank line included); `bareLineFeeds` says whether any line ended in a
        /// lone LF (a chunked body from the same server may do the same).
        case repaired(head: [UInt8], length: Int, bareLineFeeds: Bool)
    }

    static func repair(_ raw: UnsafeRawBufferPointer) -> Outcome {
        var head: [UInt8] = []
        head.reserveCapacity(raw.count + 32)
        var lineStart = 0
        var isStatusLine = true
        var bareLineFeeds = false
        var contentLength: UInt64?
        var changedContentLength = false
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
                return .repaired(head: head, length: lineStart, bareLineFeeds: bareLineFeeds)
            }
            isStatusLine = false
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

    /// For a Content-Length field line: its one value and whether it came as a list (nil
    /// when the value is not a list of identical decimal numbers). For any other line: `.none`.
    static func contentLengthValue(of line: UnsafeRawBufferPointer) -> (value: UInt64, isList: Bool)?? {
        let name = "content-length".utf8
        guard line.count > name.count, line[name.count] == UInt8(ascii: ":") else { return .none }
        for (index, expected) in name.enumerated() where line[index] | 0x20 != expected {
            return .none
        }
        var value: UInt64?
        let elements = line[(name.count + 1)...].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        for element in elements {
            let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
            guard let first = element.firstIndex(where: { !isSpace($0) }),
                  let last = element.lastIndex(where: { !isSpace($0) }) else { return .some(nil) }
            let digits = element[first...last]
            guard digits.count <= 18, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return .some(nil) }
            let number = digits.reduce(UInt64(0)) { $0 * 10 + UInt64($1 - 0x30) }
            if let value, value != number { return .some(nil) }
            value = number
        }
        guard let value else { return .some(nil) }
        return .some((value, elements.count > 1))
    }
}
