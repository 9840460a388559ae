/// The command line's bytes as typed. Swift's `CommandLine.arguments` turns invalid UTF-8
/// into U+FFFD; a header value or a URL must go out with the bytes the user gave, as curl
/// sends them.
enum RawArguments {
    static let all: [[UInt8]] = (0..<Int(CommandLine.argc)).map { index in
        guard let pointer = CommandLine.unsafeArgv[index] else { return [] }
        var bytes: [UInt8] = []
        var cursor = pointer
        while cursor.pointee != 0 {
            bytes.append(UInt8(bitPattern: cursor.pointee))
            cursor += 1
        }
        return bytes
    }

    /// The bytes behind `value`, an argument as the parser saw it, written on its own, after
    /// one of the `attached` prefixes (`-H`, `--header=`), or as is when no argument matches.
    static func bytes(of value: String, attached prefixes: [String] = []) -> [UInt8] {
        // Valid UTF-8 arrives unchanged: only a repaired value needs looking up.
        guard value.unicodeScalars.contains("\u{FFFD}") else { return Array(value.utf8) }
        for raw in self.all.dropFirst() {
            let text = String(decoding: raw, as: UTF8.self)
            if text == value { return raw }
            for prefix in prefixes where text.hasPrefix(prefix) && String(text.dropFirst(prefix.count)) == value {
                return Array(raw.dropFirst(prefix.utf8.count))
            }
        }
        return Array(value.utf8)
    }
}
