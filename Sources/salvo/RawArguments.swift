/// The command line's bytes as typed. Swift's `CommandLine.arguments` turns invalid UTF-8
/// into U+FFFD; a header value or a URL must go out with the bytes the user gave, as curl
/// sends them.
enum RawArguments {
    /// The bytes of each argument; for `salvo get`, in the spellings the argument parser reads
    /// (``OptionOrder/normalized(_:)``).
    static let all: [[UInt8]] = {
        let typed = (0..<Int(CommandLine.argc)).map { index -> [UInt8] in
            guard let pointer = CommandLine.unsafeArgv[index] else { return [] }
            var bytes: [UInt8] = []
            var cursor = pointer
            while cursor.pointee != 0 {
                bytes.append(UInt8(bitPattern: cursor.pointee))
                cursor += 1
            }
            return bytes
        }
        guard typed.count > 1, typed[1] == Array("get".utf8) else { return typed }
        return Array(typed.prefix(2)) + OptionOrder.normalized(typed.dropFirst(2))
    }()

    /// What the argument parser reads: the arguments after the program's name, as text.
    static var parsed: [String] {
        self.all.dropFirst().map { String(decoding: $0, as: UTF8.self) }
    }

    /// `bytes` with each byte outside ASCII percent-encoded (`%E4`), the others as they are.
    static func appendPercentEncodingNonASCII(_ bytes: ArraySlice<UInt8>, to output: inout [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in bytes {
            if byte >= 0x80 {
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            } else {
                output.append(byte)
            }
        }
    }

    /// A proxy spelling (`[scheme://][user:password@]host…`) as text that keeps every byte:
    /// the userinfo's bytes outside ASCII percent-encoded (they are percent-decoded into the
    /// credentials); the rest, a host the parser accepts or refuses, as typed.
    static func proxySpelling(_ bytes: [UInt8]) -> String {
        guard bytes.contains(where: { $0 >= 0x80 }), let at = bytes.lastIndex(of: UInt8(ascii: "@")) else {
            return String(decoding: bytes, as: UTF8.self)
        }
        var output: [UInt8] = []
        Self.appendPercentEncodingNonASCII(bytes[..<at], to: &output)
        output += bytes[at...]
        return String(decoding: output, as: UTF8.self)
    }
}
