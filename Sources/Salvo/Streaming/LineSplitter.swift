/// Cuts bytes that arrive in pieces into lines. LF and CRLF end a line; with
/// `acceptsBareCR` (Server-Sent Events) a lone CR does too, and a CRLF split across two
/// pieces still counts once.
struct LineSplitter: Sendable {
    private var partial: [UInt8] = []
    private var lastWasCR = false
    let acceptsBareCR: Bool
    let maxLineLength: Int

    init(acceptsBareCR: Bool, maxLineLength: Int) {
        self.acceptsBareCR = acceptsBareCR
        self.maxLineLength = maxLineLength
    }

    /// The lines `piece` completes, in order.
    ///
    /// - Throws: `.bodyTooLarge` when a line (its ending aside) is longer than
    ///   ``maxLineLength`` bytes, however the bytes were cut into pieces: a line that
    ///   arrives whole in one piece is held to the limit as much as one that grows across
    ///   several.
    mutating func push(_ piece: [UInt8], into lines: inout [[UInt8]]) throws(ClientError) {
        var start = 0
        var index = 0
        while index < piece.count {
            let byte = piece[index]
            if byte == UInt8(ascii: "\n") {
                if self.lastWasCR && index == start && self.partial.isEmpty && self.acceptsBareCR {
                    // The LF of a CRLF whose CR ended the line already.
                    start = index + 1
                } else {
                    var line = self.take(piece[start..<index])
                    if !self.acceptsBareCR, line.last == UInt8(ascii: "\r") { line.removeLast() }
                    try self.check(line.count)
                    lines.append(line)
                    start = index + 1
                }
                self.lastWasCR = false
            } else if byte == UInt8(ascii: "\r") && self.acceptsBareCR {
                let line = self.take(piece[start..<index])
                try self.check(line.count)
                lines.append(line)
                start = index + 1
                self.lastWasCR = true
            } else {
                self.lastWasCR = false
            }
            index += 1
        }
        if start < piece.count {
            self.partial += piece[start...]
        }
        // A CR at the end of an unfinished line may be the first half of its CRLF ending,
        // which is no part of the line: not counted yet.
        let pendingCR = !self.acceptsBareCR && self.partial.last == UInt8(ascii: "\r")
        try self.check(self.partial.count - (pendingCR ? 1 : 0))
    }

    private func check(_ length: Int) throws(ClientError) {
        if length > self.maxLineLength {
            throw ClientError(.bodyTooLarge, detail: "a line longer than \(self.maxLineLength) bytes")
        }
    }

    /// What is left after the last line ending, at the end of the body.
    mutating func finish() -> [UInt8]? {
        guard !self.partial.isEmpty else { return nil }
        defer { self.partial = [] }
        var line = self.partial
        if !self.acceptsBareCR, line.last == UInt8(ascii: "\r") { line.removeLast() }
        return line
    }

    private mutating func take(_ tail: ArraySlice<UInt8>) -> [UInt8] {
        if self.partial.isEmpty { return Array(tail) }
        defer { self.partial = [] }
        return self.partial + tail
    }
}

/// The lines of a response body, as UTF-8 text.
public struct TextLines: AsyncSequence, Sendable {
    public typealias Element = String
    public typealias Failure = ClientError

    let body: ResponseBody
    let maxLineLength: Int

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(reader: LineReader(body: self.body, acceptsBareCR: false, maxLineLength: self.maxLineLength))
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var reader: LineReader

        public mutating func next() async throws(ClientError) -> String? {
            try await self.next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ClientError) -> String? {
            try await self.reader.next(isolation: actor).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}

/// Pulls lines out of a body, one chunk at a time as they are asked for.
struct LineReader {
    private var chunks: ResponseBody.AsyncIterator
    private var splitter: LineSplitter
    private var ready: [[UInt8]] = []
    private var readyIndex = 0
    private var ended = false
    /// A line too long, found in a chunk whose earlier lines are handed out first: a line is
    /// refused in the same place however the body was cut into chunks.
    private var failure: ClientError?
    /// How many lines were handed out (the number of the last one).
    private(set) var lineNumber = 0

    init(body: ResponseBody, acceptsBareCR: Bool, maxLineLength: Int) {
        self.chunks = body.makeAsyncIterator()
        self.splitter = LineSplitter(acceptsBareCR: acceptsBareCR, maxLineLength: maxLineLength)
    }

    /// The next line without its ending; nil after the last. A last line with no ending
    /// counts as a line.
    mutating func next(isolation actor: isolated (any Actor)?) async throws(ClientError) -> [UInt8]? {
        while self.readyIndex == self.ready.count {
            if let failure = self.failure { throw failure }
            if self.ended { return nil }
            self.ready.removeAll(keepingCapacity: true)
            self.readyIndex = 0
            let chunk: [UInt8]?
            do {
                chunk = try await self.chunks.next(isolation: actor)
            } catch {
                throw ClientError.transport(error)
            }
            if let chunk {
                do {
                    try self.splitter.push(chunk, into: &self.ready)
                } catch {
                    self.failure = error
                }
            } else {
                self.ended = true
                if let rest = self.splitter.finish() { self.ready.append(rest) }
            }
        }
        defer { self.readyIndex += 1 }
        self.lineNumber += 1
        return self.ready[self.readyIndex]
    }
}
