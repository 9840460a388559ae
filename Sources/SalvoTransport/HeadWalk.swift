#if canImport(Glibc)
import Glibc
#endif

/// The field lines of a response head that llhttp has accepted whole, read in one pass —
/// instead of the four calls from C into Swift that llhttp makes for every field. Both the
/// engine's decoder and the load generator's scripted runs read heads so: each asks for the
/// next step (``next()``) until the head ends, and records the fields as it keeps them.
///
/// What is walked is what llhttp accepted, so its grammar is known: lines end in LF (after a
/// CR, or bare where the caller repaired it), every field line has a colon, a line that
/// begins with a space or a tab continues the value before it. llhttp's way with whitespace
/// is kept: none before a value (nor before a continuation, while the value is still empty),
/// a continuation taken whole, its line end dropped.
package struct HeadWalk {
    /// One step of the walk.
    package enum Step {
        /// A field on one line, given whole: its name, and its value without the whitespace
        /// before it.
        case field(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
        /// The name of a field whose value goes on over continuation lines (obs-fold).
        case fieldName(UnsafeRawBufferPointer)
        /// A piece of that field's value.
        case fieldValue(UnsafeRawBufferPointer)
        /// The end of that field.
        case fieldComplete
        /// The blank line: the head is over.
        case end
        /// The head does not have the grammar above. (A static text: with a `String` here,
        /// every step would be a value to destroy — each field's among them.)
        case malformed(StaticString)
    }

    private let head: UnsafeRawBufferPointer
    private var index = 0
    private var started = false
    /// A field is open: its value may go on over continuation lines.
    private var open = false
    private var valueIsEmpty = true
    /// A continuation line's value, waiting for the step after the name that opened it.
    private var pendingValue: UnsafeRawBufferPointer?
    /// After the blank line, the open field's end is due, then the end.
    private var ending = false
    /// Where the line the last step came from begins (for a caller's report of a failure).
    package private(set) var line = 0

    package init(_ head: UnsafeRawBufferPointer) {
        self.head = head
    }

    /// The next step. After `.end` the walk is over (and says `.end` again); after
    /// `.malformed` it is not to be asked again.
    package mutating func next() -> Step {
        if let value = self.pendingValue {
            self.pendingValue = nil
            return .fieldValue(value)
        }
        if self.ending {
            if self.open {
                self.open = false
                return .fieldComplete
            }
            return .end
        }
        guard let base = self.head.baseAddress else { return .malformed("an empty head") }
        let head = self.head
        let end = head.count
        if !self.started {
            self.started = true
            // Empty lines llhttp skips before a status line, then the status line.
            while self.index < end, head[self.index] == 0x0D || head[self.index] == 0x0A { self.index += 1 }
            self.line = self.index
            guard let statusEnd = Self.lineFeed(in: head, from: self.index) else { return self.fail("no end to the status line") }
            guard Self.endsWithoutBareCR(head, line: self.index, lineFeed: statusEnd) else { return self.fail(Self.bareCR) }
            self.index = statusEnd + 1
        }
        while true {
            let index = self.index
            self.line = index
            guard let lineFeed = Self.lineFeed(in: head, from: index) else { return self.fail("no end to the head") }
            guard Self.endsWithoutBareCR(head, line: index, lineFeed: lineFeed) else { return self.fail(Self.bareCR) }
            var lineEnd = lineFeed
            if lineEnd > index, head[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            if lineEnd == index {   // the blank line: the end of the head
                self.ending = true
                return self.next()
            }
            var valueStart: Int
            var step: Step?
            if head[index] == 0x20 || head[index] == 0x09 {
                // obs-fold: the line continues the value before it.
                guard self.open else { return self.fail("a continuation line with no field before it") }
                valueStart = index
            } else {
                if self.open {
                    // This line begins another field: the open one ends first, and this line
                    // is read again at the next step.
                    self.open = false
                    return .fieldComplete
                }
                guard let colon = memchr(base + index, 0x3A, lineEnd - index) else { return self.fail("a field line without a colon") }
                let nameEnd = base.distance(to: UnsafeRawPointer(colon))
                valueStart = nameEnd + 1
                while valueStart < lineEnd, head[valueStart] == 0x20 || head[valueStart] == 0x09 { valueStart += 1 }
                let name = UnsafeRawBufferPointer(rebasing: head[index..<nameEnd])
                if lineFeed + 1 < end, head[lineFeed + 1] != 0x20, head[lineFeed + 1] != 0x09 {
                    // The common case, a field on one line: handed over whole, at once.
                    self.index = lineFeed + 1
                    return .field(name: name, value: UnsafeRawBufferPointer(rebasing: head[valueStart..<lineEnd]))
                }
                self.open = true
                self.valueIsEmpty = true
                step = .fieldName(name)
            }
            if self.valueIsEmpty {
                // Before a value's first byte, whitespace is not part of it (nor, while the
                // value is still empty, at the start of a continuation line).
                while valueStart < lineEnd, head[valueStart] == 0x20 || head[valueStart] == 0x09 { valueStart += 1 }
            }
            self.index = lineFeed + 1
            var value: UnsafeRawBufferPointer?
            if valueStart < lineEnd {
                self.valueIsEmpty = false
                value = UnsafeRawBufferPointer(rebasing: head[valueStart..<lineEnd])
            }
            if let step {
                self.pendingValue = value
                return step
            }
            if let value { return .fieldValue(value) }
            // An empty continuation line: nothing to hand over.
        }
    }

    private mutating func fail(_ reason: StaticString) -> Step {
        self.index = self.head.count
        self.ending = false
        self.pendingValue = nil
        return .malformed(reason)
    }

    static let bareCR: StaticString = "a CR not followed by LF"

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

    /// The index of the next LF at or after `start`, if there is one.
    @inline(__always)
    private static func lineFeed(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard start < bytes.count, let base = bytes.baseAddress,
              let found = memchr(base + start, 0x0A, bytes.count - start) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }
}
