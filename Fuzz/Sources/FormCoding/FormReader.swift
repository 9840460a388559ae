/// Reads `application/x-www-form-urlencoded` text back into fields, as a server would: `&`
/// between fields, the first `=` between name and value, `+` for a space, `%XX` for a byte.
enum FormReader {
    static func fields(of text: String) -> [(String, String)] {
        guard !text.isEmpty else { return [] }
        return text.split(separator: "&", omittingEmptySubsequences: false).map { field in
            let parts = field.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (self.decode(parts[0]), parts.count > 1 ? self.decode(parts[1]) : "")
        }
    }

    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(0x20)
            case UInt8(ascii: "%"):
                let high = iterator.next().flatMap { UInt8(String(UnicodeScalar($0)), radix: 16) }
                let low = iterator.next().flatMap { UInt8(String(UnicodeScalar($0)), radix: 16) }
                bytes.append((high ?? 0) << 4 | (low ?? 0))
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
