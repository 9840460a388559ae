import HTTPTypes
import SalvoCore

/// What every request of a scripted run shares, encoded once — the target's prefix when a
/// proxy forwards the requests (absolute form), and the run's fields (`Host`, `User-Agent`,
/// the fields given to the run, a proxy's credentials) — and the encoding of one call's
/// request around them, checked as it is written.
struct ScriptedHead: Sendable {
    /// Written before a call's path: `http://host:port` for a forwarding proxy, else nothing.
    let targetPrefix: [UInt8]
    /// The run's field lines, each ending in CRLF.
    let fieldLines: [UInt8]
    /// The lowercased names of those fields: a call may not send them again.
    let fieldNames: Set<String>
    /// HTTP/2 (nil for an HTTP/1.1 run): the run's part of every call's header list —
    /// `:scheme` and `:authority`, then the run's fields, names in lowercase, no Host.
    let http2Pseudo: [(name: [UInt8], value: [UInt8])]?
    let http2Fields: [(name: [UInt8], value: [UInt8])]?

    init(configuration: LoadConfiguration) throws(TransportError) {
        // A head for "/" shows both parts: the request line's target, and the field lines.
        let head = try configuration.encodedHead(method: .get, target: "/", body: .none)
        guard let lineEnd = head.firstIndex(of: 0x0D),
              let space = head[..<lineEnd].firstIndex(of: 0x20),
              let lastSpace = head[..<lineEnd].lastIndex(of: 0x20), lastSpace > space + 1,
              head.count >= lineEnd + 4 else {
            throw TransportError(.invalidRequest, detail: "the run's request head could not be prepared")
        }
        self.targetPrefix = Array(head[(space + 1)..<(lastSpace - 1)])   // the target without its "/"
        self.fieldLines = Array(head[(lineEnd + 2)..<(head.count - 2)])
        var names = Set(configuration.headerFields.map { $0.name.canonicalName })
        names.insert("user-agent")
        self.fieldNames = names
        if configuration.http2 {
            // The same head as a header list: its fields without the request's own pseudo-fields.
            guard let block = HTTP2HeaderBlock(encodedHead: head, scheme: configuration.url.scheme.rawValue,
                                               authority: configuration.url.key.authority) else {
                throw TransportError(.invalidRequest, detail: "the run's request head has no HTTP/2 form")
            }
            let entries = block.spans.map { (name: Array(block.storage[$0.name]), value: Array(block.storage[$0.value])) }
            self.http2Pseudo = entries.filter { $0.name == Array(":scheme".utf8) || $0.name == Array(":authority".utf8) }
            self.http2Fields = entries.filter { $0.name.first != UInt8(ascii: ":") }
        } else {
            self.http2Pseudo = nil
            self.http2Fields = nil
        }
    }

    /// Writes `request`'s head and body into `buffer`; says whether it is a HEAD (its answer
    /// has no body), or what keeps it from being sent.
    func encode(_ request: ScriptedRequest, into buffer: ScriptBuffer) -> Result<Bool, ScriptFailure> {
        buffer.count = 0
        var method = request.method.rawValue
        let meaning = method.withUTF8 { bytes in
            buffer.append(UnsafeRawBufferPointer(bytes))
            return Self.meaning(ofMethod: bytes)
        }
        let (isHead, announcesBody) = (meaning.isHead, meaning.announcesBody)
        buffer.append(" ")
        buffer.append(self.targetPrefix)
        var path = request.path
        if let failure = path.withUTF8({ bytes -> ScriptFailure? in
            if let failure = Self.checkTarget(bytes, method: meaning, absolute: !self.targetPrefix.isEmpty) { return failure }
            buffer.append(UnsafeRawBufferPointer(bytes))
            return nil
        }) { return .failure(failure) }
        buffer.append(" HTTP/1.1\r\n")
        buffer.append(self.fieldLines)
        for field in request.headerFields {
            if let failure = self.refusal(of: field) { return .failure(failure) }
            buffer.append(field.name.rawName)
            buffer.append(": ")
            buffer.append(field.value)
            buffer.append("\r\n")
        }
        if !request.body.isEmpty || announcesBody {
            buffer.append("Content-Length: ")
            buffer.appendDecimal(request.body.count)
            buffer.append("\r\n")
        }
        buffer.append("\r\n")
        buffer.append(request.body)
        return .success(isHead)
    }

    /// Why a call may not send `field`, if it may not: the run writes it, or sends it already,
    /// or its value would break its line.
    func refusal(of field: HTTPField) -> ScriptFailure? {
        let name = field.name.canonicalName
        if RequestEncoder.fieldsTheEngineWrites.contains(name) {
            return ScriptFailure("\(field.name) is the run's to write; a scenario cannot set it")
        }
        if self.fieldNames.contains(name) {
            return ScriptFailure("\(field.name) is sent with every request of the run already; a scenario cannot send a second")
        }
        if field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) {
            return ScriptFailure("the value of \(field.name) holds CR, LF or NUL")
        }
        return nil
    }

    /// What a method (its name's bytes) means for a call: whether its answer has no body
    /// (HEAD), whether it announces its body's length even when empty (POST, PUT, PATCH), and
    /// whether it is CONNECT or OPTIONS (which the target check asks).
    struct MethodMeaning {
        var isHead = false
        var announcesBody = false
        var isConnect = false
        var isOptions = false
    }

    static func meaning(ofMethod bytes: UnsafeBufferPointer<UInt8>) -> MethodMeaning {
        var meaning = MethodMeaning()
        switch bytes.count {
        case 3: meaning.announcesBody = Self.spells(bytes, "PUT")
        case 4:
            meaning.isHead = Self.spells(bytes, "HEAD")
            meaning.announcesBody = Self.spells(bytes, "POST")
        case 5: meaning.announcesBody = Self.spells(bytes, "PATCH")
        case 7:
            meaning.isConnect = Self.spells(bytes, "CONNECT")
            meaning.isOptions = Self.spells(bytes, "OPTIONS")
        default: break
        }
        return meaning
    }

    /// Whether `bytes` are exactly `text` (a method's name: compared as bytes, not as strings).
    @inline(__always)
    private static func spells(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        bytes.count == text.utf8CodeUnitCount && bytes.elementsEqual(UnsafeBufferPointer(start: text.utf8Start, count: bytes.count))
    }

    /// Refuses a target that is not an absolute path (or `*` for OPTIONS, sent directly), or
    /// that holds a byte a request line cannot carry.
    static func checkTarget(_ bytes: UnsafeBufferPointer<UInt8>, method: MethodMeaning, absolute: Bool) -> ScriptFailure? {
        if method.isConnect { return ScriptFailure("CONNECT opens a tunnel, which a scenario's call cannot") }
        if bytes.count == 1, bytes[0] == UInt8(ascii: "*"), method.isOptions {
            // Through a proxy that forwards, a request names its origin: "*" has no such form.
            return absolute ? ScriptFailure("OPTIONS * cannot go through a proxy that forwards requests") : nil
        }
        guard bytes.first == UInt8(ascii: "/") else {
            return ScriptFailure("the path \"\(Self.printable(bytes))\" does not begin with \"/\"")
        }
        // Eight bytes at a time first (the last eight overlapping), then, for a short target,
        // byte by byte: the offending byte is looked for again only to report it.
        if Self.carriable(UnsafeRawBufferPointer(bytes)) { return nil }
        for (offset, byte) in bytes.enumerated() where byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: "#") {
            let shown = String(byte, radix: 16, uppercase: true)
            return ScriptFailure("the path \"\(Self.printable(bytes))\" holds byte 0x\(byte < 16 ? "0" : "")\(shown) at \(offset), "
                + "which a request line cannot carry; percent-encode it")
        }
        return nil
    }

    /// Whether every byte of `bytes` may stand in a request line's target: printable ASCII,
    /// no space, no '#'.
    static func carriable(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        guard count >= 8 else {
            for byte in bytes where byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: "#") { return false }
            return true
        }
        var offset = 0
        while true {
            guard Self.carriable(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) else { return false }
            if offset == count - 8 { return true }
            offset = Swift.min(offset + 8, count - 8)
        }
    }

    /// The same of a word's eight bytes: each test sets a byte's high bit when the byte is at
    /// least a bound (adding to a byte below 0x80 never carries into the next).
    @inline(__always)
    private static func carriable(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func atLeast(_ bound: UInt64) -> UInt64 { (word &+ (0x80 &- bound) &* ones) & high }
        guard word & high == 0 else { return false }
        let hash = atLeast(0x23) & ~atLeast(0x24)
        return atLeast(0x21) & ~atLeast(0x7F) & ~hash == high
    }

    /// `bytes` as text for a message, control bytes escaped and cut at 200.
    private static func printable(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        RequestEncoder.printable(String(decoding: bytes.prefix(200), as: UTF8.self)) + (bytes.count > 200 ? "…" : "")
    }
}

/// Why a scenario's call was not sent: what its request or its code did wrong.
struct ScriptFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
