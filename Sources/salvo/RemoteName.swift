import HTTPTypes

/// File names taken from the transfer itself: -O names the file after the URL, -J after the
/// server's Content-Disposition. Neither may lead out of the directory it is saved in.
enum RemoteName {
    /// The last segment of a request target's path (query and fragment dropped), kept as it
    /// is written (percent-encoding and all), as curl keeps it; nil when it is empty or a
    /// dot segment.
    static func fromPath(_ target: String) -> String? {
        let path = target.prefix { $0 != "?" && $0 != "#" }
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        return self.acceptable(name) ? name : nil
    }

    /// The base name in a Content-Disposition value's `filename*` parameter (RFC 6266's
    /// encoded form, UTF-8 or ISO-8859-1), else in its `filename` parameter; any directory
    /// part dropped, as curl does; nil when there is none or nothing usable is left. (curl
    /// 7.88 reads `filename` only.)
    static func fromContentDisposition(_ value: String) -> String? {
        let bytes = Array(value.utf8)
        if let encoded = Self.parameter("filename*", in: bytes), let name = Self.decodedExtendedValue(encoded) {
            return self.baseName(Array(name.utf8))
        }
        return Self.parameter("filename", in: bytes).flatMap(Self.baseName)
    }

    /// The last path segment of `name`, when it is acceptable.
    private static func baseName(_ name: [UInt8]) -> String? {
        let base = name.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).last ?? []
        let text = String(decoding: base, as: UTF8.self)
        return self.acceptable(text) ? text : nil
    }

    /// The value of the parameter `name` (case-insensitive), the first time it appears.
    private static func parameter(_ name: String, in bytes: [UInt8]) -> [UInt8]? {
        let key = Array(name.utf8) + [UInt8(ascii: "=")]
        var index = 0
        while index + key.count <= bytes.count {
            // The parameter itself, not the tail of another name (no "xfilename=").
            let startsParameter = index == 0 || [UInt8(ascii: ";"), UInt8(ascii: " "), UInt8(ascii: "\t")].contains(bytes[index - 1])
            if startsParameter, bytes[index..<index + key.count].map(Self.lowercased) == key {
                return Self.parameterValue(bytes[(index + key.count)...])
            }
            index += 1
        }
        return nil
    }

    /// RFC 8187's `charset'language'percent-encoded` as text; nil for another charset, bytes
    /// that are not of it, or a broken escape.
    static func decodedExtendedValue(_ value: [UInt8]) -> String? {
        let parts = value.split(separator: UInt8(ascii: "'"), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var decoded: [UInt8] = []
        var index = parts[2].startIndex
        while index < parts[2].endIndex {
            let byte = parts[2][index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < parts[2].endIndex,
                      let high = Self.hexValue(parts[2][index + 1]), let low = Self.hexValue(parts[2][index + 2]) else { return nil }
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(byte)
                index += 1
            }
        }
        switch String(decoding: parts[0], as: UTF8.self).lowercased() {
        case "utf-8": return String(validating: decoded, as: UTF8.self)
        case "iso-8859-1": return String(String.UnicodeScalarView(decoded.map { UnicodeScalar($0) }))
        default: return nil
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// A quoted string (backslash escapes resolved) or a token up to `;` or white space.
    private static func parameterValue(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var value: [UInt8] = []
        if bytes.first == UInt8(ascii: "\"") {
            var escaped = false
            for byte in bytes.dropFirst() {
                if escaped {
                    value.append(byte)
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    break
                } else {
                    value.append(byte)
                }
            }
            return value
        }
        return Array(bytes.prefix { ![UInt8(ascii: ";"), UInt8(ascii: " "), UInt8(ascii: "\t")].contains($0) })
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }

    /// A name that stays a file in the directory it is saved in: not empty, no dot segment,
    /// no separator, no control character.
    static func acceptable(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.utf8.contains { $0 == UInt8(ascii: "/") || $0 < 0x20 || $0 == 0x7F }
    }

    /// `name` under --output-dir, unless it is absolute (or stdout's "-").
    static func placed(_ name: String, in directory: String?) -> String {
        guard let directory, !directory.isEmpty, !name.hasPrefix("/"), name != "-" else { return name }
        return directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}

extension Get {
    /// Whether -O can name a file after `url` (a URL that cannot be read is left to its
    /// transfer to report).
    static func hasRemoteName(_ url: [UInt8]) -> Bool {
        guard let text = try? CommandLineURL.normalize(url), let scheme = text.range(of: "://") else { return true }
        let afterScheme = text[scheme.upperBound...]
        let target = afterScheme.firstIndex(of: "/").map { String(afterScheme[$0...]) } ?? "/"
        return RemoteName.fromPath(target) != nil
    }

    /// Where the body goes before the response is known: stdout, -o's file, or -O's name from
    /// the URL (left to the response's head with -J), under --output-dir.
    func bodySink(_ destination: TransferPlan.Destination, target: String) throws(UsageError) -> Output.Sink {
        switch destination {
        case .standardOutput:
            return Output.Sink(path: nil)
        case .file(let path):
            return Output.Sink(path: RemoteName.placed(path, in: self.outputDir), createsDirectories: self.createDirs)
        case .remoteName:
            // With -J the name waits for the head (the URL's is the fallback); nothing is
            // written before it (-J refuses -i and -I).
            if self.remoteHeaderName { return Output.Sink(path: nil) }
            guard let name = RemoteName.fromPath(target) else {
                throw UsageError(code: 23, message: "Remote file name has no length")
            }
            return Output.Sink(path: RemoteName.placed(name, in: self.outputDir), createsDirectories: self.createDirs)
        }
    }

    /// With -O -J: the sink for the name the response gives (never replacing a file that is
    /// there), or the URL's name; opened at once, as curl opens it on the head.
    func remoteHeaderSink(_ destination: TransferPlan.Destination, _ fields: HTTPFields, target: String) throws(UsageError) -> Output.Sink? {
        guard destination == .remoteName, self.remoteHeaderName else { return nil }
        if let value = fields[.contentDisposition], let name = RemoteName.fromContentDisposition(value) {
            return Output.Sink(path: RemoteName.placed(name, in: self.outputDir), exclusive: true, createsDirectories: self.createDirs)
        }
        guard let name = RemoteName.fromPath(target) else {
            throw UsageError(code: 23, message: "Remote file name has no length")
        }
        return Output.Sink(path: RemoteName.placed(name, in: self.outputDir), createsDirectories: self.createDirs)
    }
}
