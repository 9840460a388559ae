/// A response head made safe to show on a terminal.
enum ShownHead {
    /// `raw` with the control characters of its first line (the status line: its reason
    /// phrase is the only place a parsed head can carry them) written as `\xHH`: ESC and
    /// the rest of C0 but tab, and DEL. A server's escape sequences would otherwise drive
    /// the terminal that shows `-i` or `-v`. The line's end (CRLF or LF) and every other
    /// line stay as they came; a head without controls comes back unchanged.
    static func escapingStatusLine(_ raw: [UInt8]) -> [UInt8] {
        let lineEnd = raw.firstIndex(of: 0x0A) ?? raw.endIndex
        // A CR right before the LF ends the line; one anywhere else is shown escaped.
        let textEnd = lineEnd > raw.startIndex && lineEnd < raw.endIndex && raw[lineEnd - 1] == 0x0D ? lineEnd - 1 : lineEnd
        guard raw[..<textEnd].contains(where: Self.isControl) else { return raw }
        var shown: [UInt8] = []
        shown.reserveCapacity(raw.count + 16)
        for byte in raw[..<textEnd] {
            if Self.isControl(byte) {
                shown += Array("\\x".utf8) + Self.hex(byte)
            } else {
                shown.append(byte)
            }
        }
        shown += raw[textEnd...]
        return shown
    }

    static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    private static func hex(_ byte: UInt8) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        return [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
    }
}
