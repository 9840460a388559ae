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
        let count = bytes.count
        guard count > 0 else { return false }
        // Every response's field names go through here. Eight bytes at a time while they are
        // letters, digits and '-' (as nearly every name's are) — the last eight overlapping
        // the ones before — and byte by byte, without a branch per byte, from where a word
        // holds anything else (or for a name shorter than a word).
        var start = 0
        if count >= 8 {
            while start + 8 <= count, Self.lettersDigitsOrDash(bytes.loadUnaligned(fromByteOffset: start, as: UInt64.self)) {
                start += 8
            }
            if start == count || (start + 8 > count && Self.lettersDigitsOrDash(bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))) {
                return true
            }
        }
        var all: UInt64 = 1
        for index in start..<count { all &= Self.tokenBit(bytes[index]) }
        return all == 1
    }

    /// Whether each of the eight bytes of `word` is an ASCII letter, a digit or '-' (all
    /// tchars). Each test sets a byte's high bit when the byte lies in a range — adding to a
    /// byte below 0x80 never carries into the next — and a letter is tested with its case
    /// bit set, after the bytes below 0x20 (which that would turn into digits or '-') are
    /// ruled out.
    @inline(__always)
    static func lettersDigitsOrDash(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func atLeast(_ bound: UInt64, _ value: UInt64) -> UInt64 { (value &+ (0x80 &- bound) &* ones) & high }
        guard word & high == 0, atLeast(0x20, word) == high else { return false }
        let folded = word | 0x2020_2020_2020_2020
        let letter = atLeast(0x61, folded) & ~atLeast(0x7B, folded)
        let digit = atLeast(0x30, word) & ~atLeast(0x3A, word)
        let dash = atLeast(0x2D, word) & ~atLeast(0x2E, word)
        return letter | digit | dash == high
    }
}
