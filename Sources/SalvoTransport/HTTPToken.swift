/// RFC 9110 §5.6.2's token: what a method or a field name is made of.
package enum HTTPToken {
    /// Whether `byte` is a tchar: ALPHA, DIGIT or one of !#$%&'*+-.^_`|~.
    @inline(__always)
    package static func isTokenByte(_ byte: UInt8) -> Bool {
        // tchar as a 128-bit set.
        let low: UInt64 = 0x03FF_6CFA_0000_0000    // '!' '#'…'\'' '*' '+' '-' '.' '0'…'9'
        let high: UInt64 = 0x57FF_FFFF_C7FF_FFFE   // 'A'…'Z' '^' '_' '`' 'a'…'z' '|' '~'
        switch byte {
        case 0..<64: return (low >> UInt64(byte)) & 1 == 1
        case 64..<128: return (high >> UInt64(byte - 64)) & 1 == 1
        default: return false
        }
    }

    /// Whether `bytes` are a token: at least one byte, each a tchar.
    @inline(__always)
    package static func isToken(_ bytes: UnsafeRawBufferPointer) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy(Self.isTokenByte)
    }
}
