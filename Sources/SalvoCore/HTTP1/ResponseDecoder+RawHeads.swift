/// Heads as they arrived: the bytes of each head cut from what was read, for tools that
/// show them as the server sent them (`salvo get -i`), line ends and all.
extension ResponseDecoder {
    /// Moves the head at the front of ``captured`` (up to and including its blank line)
    /// into ``lastRawHead``. Empty lines before a status line are not part of it.
    func takeRawHead() {
        let start = ResponseHeadRepair.headStart(in: self.captured)
        var lineStart = start
        var end = self.captured.count
        while let newline = self.captured[lineStart...].firstIndex(of: 0x0A) {
            let line = self.captured[lineStart..<newline]
            if lineStart > start, line.isEmpty || line.elementsEqual([0x0D]) {
                end = newline + 1
                break
            }
            lineStart = newline + 1
        }
        self.lastRawHead = Array(self.captured[start..<end])
        self.captured.removeFirst(end)
    }

    /// Keeps the complete lines of ``captured`` before `index` (where the parser failed).
    func keepPartialHead(endingBefore index: Int) {
        let limit = Swift.max(0, Swift.min(index, self.captured.count))
        guard let lastNewline = self.captured[..<limit].lastIndex(of: 0x0A) else {
            self.partialRawHead = []
            return
        }
        let start = ResponseHeadRepair.headStart(in: self.captured, before: lastNewline)
        self.partialRawHead = Array(self.captured[start...lastNewline])
    }
}
