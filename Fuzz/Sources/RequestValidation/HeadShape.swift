import FuzzSupport
@testable import SalvoTransport

/// The shape every request head the encoder writes must have, checked byte by byte.
enum HeadShape {
    static func check(_ head: [UInt8]) {
        let shown = String(decoding: head, as: UTF8.self).debugDescription
        fuzzCheck(!head.contains(0), "NUL in head \(shown)")
        fuzzCheck(head.count >= 4 && head.suffix(4) == [13, 10, 13, 10], "head does not end with a blank line: \(shown)")
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var index = 0
        while index < head.count {
            let byte = head[index]
            if byte == 13 {
                fuzzCheck(index + 1 < head.count && head[index + 1] == 10, "bare CR at \(index) in \(shown)")
                lines.append(head[start..<index])
                index += 2
                start = index
                continue
            }
            fuzzCheck(byte != 10, "bare LF at \(index) in \(shown)")
            index += 1
        }
        // The last line is the blank one; no other line is empty.
        fuzzCheck(lines.last?.isEmpty == true && lines.dropLast().allSatisfy { !$0.isEmpty }, "an empty line inside \(shown)")
        guard let requestLine = lines.first else { return }
        fuzzCheck(requestLine.filter { $0 == 0x20 }.count == 2, "request line with other than 3 parts in \(shown)")
        for line in lines.dropFirst().dropLast() {
            guard let colon = line.firstIndex(of: 0x3A) else {
                fuzzCheck(false, "field line without a colon in \(shown)")
                return
            }
            let name = line[line.startIndex..<colon]
            fuzzCheck(!name.isEmpty && name.allSatisfy(HTTPToken.isTokenByte), "field name not a token in \(shown)")
        }
    }
}
