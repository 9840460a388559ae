/// A JSON Lines body decoded element by element (see ``StreamingResponse/jsonLines(of:decoder:maxLineLength:)``).
public struct JSONLines<Element: Decodable & Sendable>: AsyncSequence, Sendable {
    public typealias Failure = ClientError

    let lines: TextLines
    let coders: Coders

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(reader: LineReader(body: self.lines.body, acceptsBareCR: false, maxLineLength: self.lines.maxLineLength),
                      coders: self.coders)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var reader: LineReader
        let coders: Coders

        public mutating func next() async throws(ClientError) -> Element? {
            try await self.next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ClientError) -> Element? {
            while let line = try await self.reader.next(isolation: actor) {
                guard line.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") && $0 != UInt8(ascii: "\r") }) else {
                    continue
                }
                do {
                    return try self.coders.decodeJSON(Element.self, from: line)
                } catch {
                    var error = error
                    error.detail = "line \(self.reader.lineNumber): " + (error.detail ?? "")
                    throw error
                }
            }
            return nil
        }
    }
}
