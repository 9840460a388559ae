/// RFC 9110 §5.6.2's token: what a method or a field name is made of. Here, beside
/// ``FieldRecords``, which checks names with it; the engine's encoder uses it too.
package enum HTTPToken {
    /// Whether `byte` is a tchar: ALPHA, DIGIT or one of !#$%&'*+-.^_`|~.
    @inline(__always)
    package static func isTokenByte(_ byte: UInt8) -> Bool {
        Self.tokenBit(byte) == 1
    }

    /// 1 when `byte` is a tchar, else 0: tchar as a 128-bit set, read with plain comparisons
    /// and shifts (a `switch` over ranges compiled to generic range matching, a protocol
    /// witness call per byte).
    @inline(__always)
    static func tokenBit(_ byte: UInt8) -> UInt64 {
        let low: UInt64 = 0x03FF_6CFA_0000_0000    // '!' '#'…'\'' '*' '+' '-' '.' '0'…'9'
        let high: UInt64 = 0x57FF_FFFF_C7FF_FFFE   // 'A'…'Z' '^' '_' '`' 'a'…'z' '|' '~'
        let word = byte < 64 ? low : byte < 128 ? high : 0
        return (word &>> UInt64(byte & 63)) & 1
    }

    /// Whether `bytes` are a token: at least one byte, each a tchar.
    @inline(__always)
    package static func isToken(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !bytes.isEmpty else { return false }
        // No branch per byte: every response's field names go through here.
        var all: UInt64 = 1
        for byte in bytes { all &= Self.tokenBit(byte) }
        return all == 1
    }
}
