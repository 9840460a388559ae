import HTTPTypes
import SalvoTransport

/// A request head as an HTTP/2 header list: names and values side by side in one buffer,
/// pseudo-fields first (RFC 9113 §8.3.1), names in lowercase, and the fields HTTP/2 forbids
/// left out (§8.2.2: Connection and the fields it names, Keep-Alive, Proxy-Connection,
/// Transfer-Encoding, Upgrade, TE but `trailers`; Host, which `:authority` says).
///
/// Made from the HTTP/1.1 head the engine has already encoded and checked for the request
/// (``RequestEncoder``): one source of truth for the fields a request carries — the
/// caller's, the client's defaults, the framing — whichever version carries it.
package struct HTTP2HeaderBlock: Equatable, Sendable {
    /// The names and values, back to back.
    package private(set) var storage: [UInt8] = []
    /// Where each name and value lies in `storage`.
    package private(set) var spans: [(name: Range<Int>, value: Range<Int>)] = []

    package static func == (lhs: HTTP2HeaderBlock, rhs: HTTP2HeaderBlock) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0 == $1 }
    }

    /// The list as text, for tests and logs.
    package var fields: [(name: String, value: String)] {
        self.spans.map { (String(decoding: self.storage[$0.name], as: UTF8.self), String(decoding: self.storage[$0.value], as: UTF8.self)) }
    }

    mutating func append(_ name: some Collection<UInt8>, _ value: some Collection<UInt8>) {
        let nameStart = self.storage.count
        self.storage.append(contentsOf: name)
        let valueStart = self.storage.count
        self.storage.append(contentsOf: value)
        self.spans.append((nameStart..<valueStart, valueStart..<self.storage.count))
    }

    /// Fields a connection-specific HTTP/1.1 head may carry that HTTP/2 forbids.
    static let connectionSpecific: Set<String> = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"]

    /// The list for `head`, an HTTP/1.1 request head as ``RequestEncoder`` writes it (request
    /// line, `Name: value` lines, CRLF ends, a blank line), sent over `scheme`; `authority`
    /// when the head has no Host field. Nil when the head is not in that form.
    package init?(encodedHead head: [UInt8], scheme: String, authority: String) {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var index = 0
        while index + 1 < head.count {
            if head[index] == 0x0D && head[index + 1] == 0x0A {
                if index == start { break }   // the blank line
                lines.append(head[start..<index])
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        guard let requestLine = lines.first else { return nil }
        let parts = requestLine.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let method = parts[0], target = parts[1]
        var names: [(name: [UInt8], value: ArraySlice<UInt8>)] = []
        var hostValue: ArraySlice<UInt8>? = nil
        var connectionNamed = Set<String>()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: 0x3A) else { return nil }
            let name = line[line.startIndex..<colon].map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }
            var value = line[(colon + 1)...]
            while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
            while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
            if name == Array("host".utf8) { hostValue = value }
            if name == Array("connection".utf8) {
                for token in String(decoding: value, as: UTF8.self).split(separator: ",") {
                    connectionNamed.insert(token.trimmingCharacters(in: " \t").lowercased())
                }
            }
            names.append((name, value))
        }
        self.append(Array(":method".utf8), method)
        let isConnect = method.elementsEqual("CONNECT".utf8)
        if !isConnect {
            self.append(Array(":scheme".utf8), Array(scheme.utf8))
        }
        if isConnect {
            self.append(Array(":authority".utf8), target)
        } else if let hostValue {
            self.append(Array(":authority".utf8), hostValue)
        } else {
            self.append(Array(":authority".utf8), Array(authority.utf8))
        }
        if !isConnect {
            self.append(Array(":path".utf8), target)
        }
        for (name, value) in names {
            let text = String(decoding: name, as: UTF8.self)
            if Self.connectionSpecific.contains(text) || connectionNamed.contains(text) { continue }
            if text == "te", !String(decoding: value, as: UTF8.self).lowercased().elementsEqual("trailers") { continue }
            self.append(name, value)
        }
    }

    /// The list for `request` as it stands (its own fields only: no defaults are added).
    init(_ request: HTTPRequest) {
        self.append(Array(":method".utf8), Array(request.method.rawValue.utf8))
        if request.method != .connect {
            self.append(Array(":scheme".utf8), Array((request.scheme ?? "https").utf8))
        }
        if let authority = request.authority { self.append(Array(":authority".utf8), Array(authority.utf8)) }
        if request.method != .connect {
            self.append(Array(":path".utf8), Array((request.path ?? "/").utf8))
        }
        var named = Set<String>()
        for value in request.headerFields[values: .connection] {
            for token in value.split(separator: ",") {
                named.insert(token.trimmingCharacters(in: " \t").lowercased())
            }
        }
        for field in request.headerFields {
            let name = field.name.canonicalName
            if Self.connectionSpecific.contains(name) || named.contains(name) { continue }
            if name == "te", field.value.lowercased() != "trailers" { continue }
            self.append(Array(name.utf8), Array(field.value.utf8))
        }
    }
}

extension Substring {
    /// Without the characters of `set` at either end.
    fileprivate func trimmingCharacters(in set: String) -> Substring {
        var text = self
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return text
    }
}
