import SalvoTransport
import HTTPTypes

/// How a request body is framed on the wire.
public enum RequestBodyLength: Sendable, Hashable {
    /// No body, and no framing header unless the method expects content (then `Content-Length: 0`).
    case none
    /// A body of exactly this many bytes: `Content-Length`.
    case known(Int)
    /// A body of unknown length: `Transfer-Encoding: chunked`.
    case unknown
}

/// Serializes an `HTTPRequest` head into HTTP/1.1 bytes.
///
/// The encoder owns framing: any `Content-Length` or `Transfer-Encoding` the caller put in
/// the fields is replaced by what the body says, so a request can never announce one length
/// and send another. `Host` comes from the authority unless the caller set one (as with
/// curl's `-H 'Host: …'`); the connection still goes to the authority. A CR, LF or NUL anywhere in the head, a method
/// or field name that is not a token, or a target with spaces or control characters, is
/// refused before a byte is written: that is how header injection and request smuggling begin.
/// Non-ASCII bytes of the target are percent-encoded; field values go as given, bytes included.
public enum RequestEncoder {
    /// Fields a client adds to requests that lack them, written after the request's own
    /// without copying its `HTTPFields`. Values are checked when the client is configured.
    struct AddedFields {
        var userAgent: String?
        /// `Accept-Encoding: gzip, deflate`: the codings the client decodes for the caller.
        var acceptEncoding = false
        var contentType: String?
        var contentEncoding: String?
        /// `Expect: 100-continue`, after the framing (``HTTPClient/RequestOptions/expectContinue``).
        var expectContinue = false
        /// No Host line at all (``HTTPClient/RequestOptions/omitsHost``).
        var omitsHost = false
        /// For a request through an HTTP proxy: `http://authority`, written before the path
        /// (the absolute form, RFC 9112 §3.2.2).
        var absoluteFormPrefix: String?
        /// `Proxy-Authorization`, after Host, unless the request has its own.
        var proxyAuthorization: String?
        static let none = AddedFields()
    }

    /// `value` for a field the client adds, refused when it holds CR, LF or NUL.
    static func checkedValue(_ value: String, of name: String) throws(TransportError) -> String {
        guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) else {
            throw invalid("\(name) \"\(printable(value))\" contains CR, LF or NUL")
        }
        return value
    }

    /// Appends the request head (request line, fields, blank line) to `buffer`.
    public static func encodeHead(
        _ request: HTTPRequest,
        body: RequestBodyLength,
        into buffer: inout [UInt8]
    ) throws(TransportError) {
        try self.encodeHead(request, body: body, adding: .none, into: &buffer)
    }

    /// The head as an HTTP proxy that forwards it is sent it: absolute form, and its
    /// credentials (for the load generator, which encodes its request once).
    package static func encodeHead(
        _ request: HTTPRequest,
        body: RequestBodyLength,
        forwardedBy proxy: HTTPProxy,
        into buffer: inout [UInt8]
    ) throws(TransportError) {
        var added = AddedFields()
        added.absoluteFormPrefix = "\(request.scheme ?? "http")://\(request.authority ?? "")"
        added.proxyAuthorization = proxy.credentials?.basicAuthorization
        try self.encodeHead(request, body: body, adding: added, into: &buffer)
    }

    static func encodeHead(
        _ request: HTTPRequest,
        body: RequestBodyLength,
        adding added: AddedFields,
        into buffer: inout [UInt8]
    ) throws(TransportError) {
        let method = request.method.rawValue
        guard !method.isEmpty, allBytes(of: method, are: HTTPToken.isTokenByte) else {
            throw invalid("method \"\(printable(method))\" is not a valid token")
        }
        let target = request.path ?? "/"
        guard !target.isEmpty, allBytes(of: target, are: isTargetByte) else {
            throw invalid("request target \"\(printable(target))\" contains spaces or control characters")
        }
        if let authority = request.authority {
            guard !authority.isEmpty, allBytes(of: authority, are: isTargetByte) else {
                throw invalid("authority \"\(printable(authority))\" contains spaces or control characters")
            }
        }

        buffer.append(contentsOf: method.utf8)
        buffer.append(0x20)
        if let prefix = added.absoluteFormPrefix {
            // Joined to the authority, a target not starting with "/" would name another host
            // ("@evil.test/x") to the proxy than the one the request is for.
            guard target.hasPrefix("/") || target == "*" else {
                throw invalid("request target \"\(printable(target))\" must start with \"/\" to go through a proxy")
            }
            buffer.append(contentsOf: prefix.utf8)
            // OPTIONS * through a proxy names the origin alone (RFC 9112 §3.2.4).
            if target != "*" { appendTarget(target, into: &buffer) }
        } else {
            appendTarget(target, into: &buffer)
        }
        buffer.append(contentsOf: " HTTP/1.1\r\n".utf8)

        let hostName = Self.hostName
        let explicitHost = request.headerFields.containsField(hostName)
        if let authority = request.authority, !explicitHost, !added.omitsHost {
            appendField(name: "Host", value: authority, into: &buffer)
        }
        if let credentials = added.proxyAuthorization, !request.headerFields.containsField(.proxyAuthorization) {
            appendField(name: "Proxy-Authorization", value: credentials, into: &buffer)
        }
        var hostWritten = false
        for field in request.headerFields {
            let name = field.name
            if name == .contentLength || name == .transferEncoding { continue }
            if name == hostName {
                // One Host only (RFC 9112 §3.2), and first, as it would be without the override.
                if hostWritten { continue }
                hostWritten = true
            }
            try appendChecked(field, into: &buffer)
        }
        if let userAgent = added.userAgent { appendField(name: "User-Agent", value: userAgent, into: &buffer) }
        if added.acceptEncoding { appendField(name: "Accept-Encoding", value: "gzip, deflate", into: &buffer) }
        // The framing, then what the body says of itself, then the Expect the client adds:
        // curl's order, so that a request made like curl's is the same bytes.
        switch body {
        case .known(let length):
            guard length >= 0 else { throw invalid("body length \(length) is negative") }
            appendContentLength(length, into: &buffer)
        case .unknown:
            appendField(name: "Transfer-Encoding", value: "chunked", into: &buffer)
        case .none:
            if methodExpectsContent(request.method) { appendContentLength(0, into: &buffer) }
        }
        if let value = added.contentType { appendField(name: "Content-Type", value: value, into: &buffer) }
        if let value = added.contentEncoding { appendField(name: "Content-Encoding", value: value, into: &buffer) }
        if added.expectContinue { appendField(name: "Expect", value: "100-continue", into: &buffer) }
        buffer.append(0x0D)
        buffer.append(0x0A)
    }

    /// A field of the caller's, checked again (the head is the last line of defence, and
    /// names can be built unchecked elsewhere): a token name, no CR, LF or NUL in the value.
    private static func appendChecked(_ field: HTTPField, into buffer: inout [UInt8]) throws(TransportError) {
        let nameText = field.name.rawName
        guard allBytes(of: nameText, are: HTTPToken.isTokenByte) else {
            throw invalid("field name \"\(printable(nameText))\" is not a valid token")
        }
        let valid = field.withUnsafeBytesOfValue { bytes in
            !bytes.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 })
        }
        guard valid else {
            throw invalid("value of \(nameText) contains CR, LF or NUL")
        }
        buffer.append(contentsOf: nameText.utf8)
        buffer.append(0x3A)
        field.withUnsafeBytesOfValue { value in
            // An empty value goes as "Name:", without the space (as curl writes it).
            guard !value.isEmpty else { return }
            buffer.append(0x20)
            buffer.append(contentsOf: value)
        }
        buffer.append(0x0D)
        buffer.append(0x0A)
    }

    /// The request target, with bytes outside ASCII percent-encoded (RFC 3986 §2.1: a target
    /// is ASCII; servers differ on raw UTF-8, so it never goes raw).
    private static func appendTarget(_ target: String, into buffer: inout [UInt8]) {
        guard !allBytes(of: target, are: { $0 < 0x80 }) else {
            buffer.append(contentsOf: target.utf8)
            return
        }
        let hex: StaticString = "0123456789ABCDEF"
        for byte in target.utf8 {
            if byte >= 0x80 {
                buffer.append(UInt8(ascii: "%"))
                buffer.append(hex.utf8Start[Int(byte >> 4)])
                buffer.append(hex.utf8Start[Int(byte & 0x0F)])
            } else {
                buffer.append(byte)
            }
        }
    }

    /// POST, PUT and PATCH define meaning for content; RFC 9110 §8.6 asks for a length there.
    static func methodExpectsContent(_ method: HTTPRequest.Method) -> Bool {
        method == .post || method == .put || method == .patch
    }

    @inline(__always)
    private static func appendField(name: StaticString, value: StaticString, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        buffer.append(0x3A)
        buffer.append(0x20)
        buffer.append(contentsOf: UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
        buffer.append(0x0D)
        buffer.append(0x0A)
    }

    @inline(__always)
    private static func appendField(name: StaticString, value: String, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        buffer.append(0x3A)
        buffer.append(0x20)
        buffer.append(contentsOf: value.utf8)
        buffer.append(0x0D)
        buffer.append(0x0A)
    }

    private static func appendContentLength(_ length: Int, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "Content-Length: ".utf8)
        appendDecimal(length, into: &buffer)
        buffer.append(0x0D)
        buffer.append(0x0A)
    }

    static func appendDecimal(_ value: Int, into buffer: inout [UInt8]) {
        precondition(value >= 0)
        if value < 10 {
            buffer.append(0x30 + UInt8(value))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { raw in
            while rest > 0 {
                raw[19 - count] = 0x30 + UInt8(rest % 10)
                rest /= 10
                count += 1
            }
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[(20 - count)...]))
        }
    }

    /// Made once: a name is validated and lowercased when it is made.
    static let hostName = HTTPField.Name("Host")!

    /// Whether every byte of `text` passes `test`, read in place (a request's strings are
    /// scanned once each, per request).
    @inline(__always)
    static func allBytes(of text: String, are test: (UInt8) -> Bool) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            for byte in bytes where !test(byte) { return false }
            return true
        }
    }

    @inline(__always)
    static func isTargetByte(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte != 0x7F
    }

    private static func invalid(_ detail: String) -> TransportError {
        TransportError(.invalidRequest, phase: .request, detail: detail)
    }

    /// Fields a request's own code may not add where the engine writes the head from a
    /// template (a prepared call, a scripted load run): its framing, the host, the
    /// connection's, a proxy's (kept from an origin), and `Expect` (neither waits for 100
    /// Continue). Lowercased.
    package static let fieldsTheEngineWrites: Set<String> = [
        "content-length", "transfer-encoding", "host", "connection", "keep-alive", "te", "upgrade",
        "proxy-authorization", "proxy-connection", "expect",
    ]

    /// The text with control characters shown as escapes, for error messages.
    package static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += String(format: scalar.value)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

private extension String {
    init(format value: UInt32) {
        let hex = String(value, radix: 16, uppercase: true)
        self = "\\x" + (hex.count < 2 ? "0" + hex : hex)
    }
}
