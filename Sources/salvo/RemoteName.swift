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

    /// The base name in a Content-Disposition value's `filename` parameter (any directory
    /// part dropped, as curl does); nil when there is none or nothing usable is left.
    static func fromContentDisposition(_ value: String) -> String? {
        let bytes = Array(value.utf8)
        let key = Array("filename=".utf8)
        var index = 0
        while index + key.count <= bytes.count {
            // The parameter itself, not the tail of another name (no "xfilename=").
            let startsParameter = index == 0 || [UInt8(ascii: ";"), UInt8(ascii: " "), UInt8(ascii: "\t")].contains(bytes[index - 1])
            if startsParameter, bytes[index..<index + key.count].map(Self.lowercased) == key {
                let name = Self.parameterValue(bytes[(index + key.count)...])
                let base = name.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).last ?? []
                let text = String(decoding: base, as: UTF8.self)
                return self.acceptable(text) ? text : nil
            }
            index += 1
        }
        return nil
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
    /// Where the body goes before the response is known: stdout, -o's file, or -O's name from
    /// the URL (left to the response's head with -J), under --output-dir.
    func bodySink(target: String) throws(UsageError) -> Output.Sink {
        if self.remoteHeaderName && (self.include || self.headOnly) {
            throw UsageError(code: 2, message: "showing headers and --remote-header-name cannot be combined")
        }
        if let output = self.output {
            return Output.Sink(path: RemoteName.placed(output, in: self.outputDir), createsDirectories: self.createDirs)
        }
        guard self.remoteName else { return Output.Sink(path: nil) }
        // With -J the name waits for the head (the URL's is the fallback); nothing is written
        // before it (-J refuses -i and -I).
        if self.remoteHeaderName { return Output.Sink(path: nil) }
        guard let name = RemoteName.fromPath(target) else {
            throw UsageError(code: 23, message: "Remote file name has no length")
        }
        return Output.Sink(path: RemoteName.placed(name, in: self.outputDir), createsDirectories: self.createDirs)
    }

    /// With -O -J: the sink for the name the response gives (never replacing a file that is
    /// there), or the URL's name; opened at once, as curl opens it on the head.
    func remoteHeaderSink(_ fields: HTTPFields, target: String) throws(UsageError) -> Output.Sink? {
        guard self.output == nil, self.remoteName, self.remoteHeaderName else { return nil }
        if let value = fields[.contentDisposition], let name = RemoteName.fromContentDisposition(value) {
            return Output.Sink(path: RemoteName.placed(name, in: self.outputDir), exclusive: true, createsDirectories: self.createDirs)
        }
        guard let name = RemoteName.fromPath(target) else {
            throw UsageError(code: 23, message: "Remote file name has no length")
        }
        return Output.Sink(path: RemoteName.placed(name, in: self.outputDir), createsDirectories: self.createDirs)
    }
}
