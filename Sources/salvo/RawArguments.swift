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

    /// The bytes of each value given to the option spelled `names` (`["-d", "--data"]`), in
    /// order, where `parsed` holds the values as the parser saw them: a value alone after the
    /// option, or attached (`-dVALUE`, `--data=VALUE`). Values the command line does not show
    /// that way are looked up one by one.
    static func values(of names: [String], parsed: [String]) -> [[UInt8]] {
        guard parsed.contains(where: { $0.unicodeScalars.contains("\u{FFFD}") }) else { return parsed.map { Array($0.utf8) } }
        let prefixes = names.map { $0.hasPrefix("--") ? $0 + "=" : $0 }
        var found: [[UInt8]] = []
        var index = 1
        while index < self.all.count {
            let raw = self.all[index]
            let text = String(decoding: raw, as: UTF8.self)
            if text == "--" { break }
            if names.contains(text), index + 1 < self.all.count {
                found.append(self.all[index + 1])
                index += 2
                continue
            }
            if let prefix = prefixes.first(where: { text.hasPrefix($0) && text.count > $0.count }) {
                found.append(Array(raw.dropFirst(prefix.utf8.count)))
            }
            index += 1
        }
        let matches = found.count == parsed.count
            && zip(found, parsed).allSatisfy { String(decoding: $0, as: UTF8.self) == $1 }
        return matches ? found : parsed.map { self.bytes(of: $0, attached: prefixes) }
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
