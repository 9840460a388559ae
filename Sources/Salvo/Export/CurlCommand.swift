/// A request as a `curl` command line: pasted into a POSIX shell, it sends the same method,
/// URL, header fields and body bytes — for bug reports, and for trying a request by hand.
///
/// ```swift
/// print(try await client.curlCommand(for: Endpoint<Empty>.post("/notes", body: ["text": "it's"])))
/// // curl --http1.1 --globoff --path-as-is -X 'POST' -H 'User-Agent:' -H 'Accept:' -H 'Content-Type: application/json'
/// //   --data-binary '{"text":"it'\''s"}' 'https://api.example.com/notes'
/// ```
///
/// The fields are the request's own: curl's defaults it would add (`User-Agent`, `Accept`, a
/// form `Content-Type`, `Expect: 100-continue` before a large body) are switched off when the
/// request does not set them. `Host` and `Content-Length` curl adds as the transport does;
/// the engine's own `Accept-Encoding` (when it decompresses) is not part of the request, so
/// not of the command. Quoting is POSIX single quotes; a body that is not printable text, or
/// is longer than a command-line argument may be (100 KiB), goes through the shell's
/// `printf` with octal escapes, so every byte arrives as it was. A streamed body that cannot
/// be replayed — or is longer than `maxInlineBody` — is read from standard input
/// (`--data-binary @-`), and the first line of the command says so.
///
/// For a bug report, `redacting: .standard` shows the credential fields
/// (``CredentialFields``) with `‹redacted›` for their values, and the URL without its query
/// values and userinfo (API keys travel there too): the command then no longer sends them, and
/// says so on its first line. The body goes as it is.
extension ClientRequest {
    public func curlCommand(maxInlineBody: Int = 1 << 20, redacting redacted: CredentialFields = .none) async -> String {
        var words = ["curl", "--http1.1", "--globoff", "--path-as-is"]
        let method = self.head.method
        if method == .head {
            words.append("--head")
        } else if method != .get || self.body != nil {
            words += ["-X", Self.quoted(method.rawValue)]
        }
        let fields = self.head.headerFields
        for (name, curlDefault) in [(HTTPField.Name.userAgent, true), (.accept, true)] where curlDefault && fields[name] == nil {
            words += ["-H", Self.quoted("\(name.rawName):")]
        }
        if let body = self.body {
            if fields[.contentType] == nil {
                words += ["-H", Self.quoted("Content-Type:")]
            }
            let large: Bool
            switch body.length {
            case .known(let count): large = count > Self.curlExpectThreshold
            case .unknown: large = true
            }
            if large, fields[.expect] == nil {
                words += ["-H", Self.quoted("Expect:")]
            }
        }
        let redacting = !redacted.names.isEmpty
        var prefix = redacting ? "# credentials and query values redacted (the body is not): put them back before running this\n" : ""
        for field in fields {
            if redacted.contains(field.name) {
                words += ["-H", Self.quoted("\(field.name.rawName): ‹redacted›")]
                continue
            }
            // "Name;" is curl's spelling of a field with an empty value.
            words += ["-H", Self.quoted(field.value.isEmpty ? "\(field.name.rawName);" : "\(field.name.rawName): \(field.value)")]
        }
        if let body = self.body {
            switch await Self.inlineBytes(of: body, upTo: maxInlineBody) {
            case .some(let bytes) where bytes.count <= Self.maxArgumentBytes && Self.isPrintable(bytes):
                words += ["--data-binary", Self.quoted(String(decoding: bytes, as: UTF8.self))]
            case .some(let bytes):
                prefix += "printf '\(Self.printfEscaped(bytes))' | "
                words += ["--data-binary", "@-"]
            case .none:
                prefix += "# the body (\(Self.describe(body.length))) is streamed: pipe it into this command\n"
                words += ["--data-binary", "@-"]
            }
        }
        words.append(Self.quoted(redacting ? Self.redactedURL(self.url) : self.url))
        return prefix + words.joined(separator: " ")
    }

    /// `url` without its userinfo and with `‹redacted›` for each query value (names kept).
    static func redactedURL(_ url: String) -> String {
        let url = LoggingMiddleware.withoutUserinfo(url)
        guard let mark = url.firstIndex(of: "?") else { return url }
        let query = url[url.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false).map { item in
            item.split(separator: "=", maxSplits: 1).first.map { "\($0)=‹redacted›" } ?? ""
        }
        return String(url[...mark]) + query.joined(separator: "&")
    }

    /// Linux refuses a single argument over 128 KiB; a body longer than this goes through
    /// `printf`, a shell builtin without that limit.
    static let maxArgumentBytes = 100 * 1024
    /// curl sends `Expect: 100-continue` before bodies over 1 MiB (or of unknown length).
    static let curlExpectThreshold = 1 << 20

    /// The body's bytes when they can be had without consuming it: in memory, or a
    /// replayable stream no longer than `limit`.
    private static func inlineBytes(of body: HTTPBody, upTo limit: Int) async -> [UInt8]? {
        switch body.content {
        case .bytes(let bytes):
            return bytes
        case .stream(let length, let replayable, _):
            guard replayable, let length, length <= limit else { return nil }
            return try? await MockTransport.collect(body)
        }
    }

    private static func describe(_ length: HTTPBody.Length) -> String {
        switch length {
        case .known(let count): "\(count) bytes"
        case .unknown: "length unknown"
        }
    }

    /// `text` in single quotes: every byte literal but `'`, written `'\''`.
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// Text that pastes into a terminal as it is: UTF-8 of printable characters and line
    /// feeds — no tab (completion), CR (turned into LF), DEL (erases), other control
    /// characters, C1 controls — and not starting with `@`, which curl reads as a file name.
    private static func isPrintable(_ bytes: [UInt8]) -> Bool {
        guard bytes.first != UInt8(ascii: "@"), let text = String(validating: bytes, as: UTF8.self) else { return false }
        return text.unicodeScalars.allSatisfy { scalar in
            scalar == "\n" || (scalar.value >= 0x20 && scalar.value != 0x7F && !(0x80...0x9F).contains(scalar.value))
        }
    }

    /// Bytes for a `printf` format: printable ASCII as it is (but `\`, `%`, `'`, and a `-`
    /// first, which `printf` would take for an option — a multipart body starts with one),
    /// the rest as octal escapes.
    private static func printfEscaped(_ bytes: [UInt8]) -> String {
        var text = ""
        for (index, byte) in bytes.enumerated() {
            if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\\") && byte != UInt8(ascii: "%") && byte != UInt8(ascii: "'")
                && !(index == 0 && byte == UInt8(ascii: "-")) {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "\\" + String(byte, radix: 8).leftPadded(to: 3)
            }
        }
        return text
    }
}

extension Client {
    /// `request` as a `curl` command line, built as the client would send it (base URL,
    /// default headers and query, the body from its coders) — before any middleware.
    /// `redacting`: fields whose values are hidden (`.standard` for a bug report).
    public func curlCommand<R: Request>(for request: R, options: CallOptions = CallOptions(),
                                        redacting redacted: CredentialFields = .none) async throws(ClientError) -> String {
        let (head, body) = try self.prepare(request)
        return await ClientRequest(head: head, body: body, operationName: request.operationName, baseURL: self.baseURL,
                                   options: options, metadata: request.metadata,
                                   coders: self.configuration.coders).curlCommand(redacting: redacted)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: Swift.max(0, width - self.count)) + self
    }
}
