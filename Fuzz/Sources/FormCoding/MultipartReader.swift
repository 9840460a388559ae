/// Reads a `multipart/form-data` body back into parts, strictly: each part is
/// `--boundary CRLF head CRLF CRLF content CRLF`, and the body ends with `--boundary-- CRLF`.
/// A delimiter is `--boundary` at the start of the body or after a CRLF (RFC 2046 §5.1.1):
/// elsewhere — inside a quoted file name, say — it is only text.
enum MultipartReader {
    struct Part {
        var name: String
        var filename: String?
        var content: [UInt8]
    }

    static func parts(of body: [UInt8], boundary: String) -> [Part]? {
        let delimiter = Array("--\(boundary)".utf8)
        var starts: [Int] = []
        var index = 0
        while index + delimiter.count <= body.count {
            let atLineStart = index == 0 || (index >= 2 && body[index - 2] == 13 && body[index - 1] == 10)
            if atLineStart && body[index..<index + delimiter.count].elementsEqual(delimiter) {
                starts.append(index)
                index += delimiter.count
            } else {
                index += 1
            }
        }
        guard let last = starts.last, starts.first == 0,
              body[last...].elementsEqual(delimiter + Array("--\r\n".utf8)) else { return nil }
        var parts: [Part] = []
        for (start, end) in zip(starts, starts.dropFirst()) {
            let region = Array(body[(start + delimiter.count)..<end])
            guard region.starts(with: [13, 10]), region.suffix(2) == [13, 10],
                  let headEnd = self.find([13, 10, 13, 10], in: region, from: 2) else { return nil }
            // Read as bytes: a quote followed by a combining mark is one Character.
            let head = Array(region[2..<headEnd])
            let content = Array(region[(headEnd + 4)..<(region.count - 2)])
            let prefix = Array("Content-Disposition: form-data; name=\"".utf8)
            guard head.starts(with: prefix), let close = head[prefix.count...].firstIndex(of: 0x22) else { return nil }
            var part = Part(name: String(decoding: head[prefix.count..<close], as: UTF8.self), content: content)
            let rest = head[(close + 1)...]
            let filenamePrefix = Array("; filename=\"".utf8)
            if rest.starts(with: filenamePrefix) {
                let start = rest.startIndex + filenamePrefix.count
                guard let end = rest[start...].firstIndex(of: 0x22) else { return nil }
                part.filename = String(decoding: rest[start..<end], as: UTF8.self)
            }
            parts.append(part)
        }
        return parts
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        for index in start...(haystack.count - needle.count) where haystack[index..<index + needle.count].elementsEqual(needle) {
            return index
        }
        return nil
    }
}
