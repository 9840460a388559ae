import Logging

/// Logs every request and its outcome through swift-log: method, URL, status and duration;
/// header fields and bodies when asked, with credentials redacted and bodies capped.
///
/// ```swift
/// var logging = LoggingMiddleware(logger: Logger(label: "api"))
/// logging.headers = true
/// logging.bodies = .upTo(2048)
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(middleware: [logging]))
/// // info: GET https://api.example.com/users/7 → 200 in 12.4 ms   [operation: GET /users/7, status: 200, …]
/// ```
///
/// A call that fails is logged at `.error` with the error, then the error goes on unchanged.
/// Bodies are logged only for collected calls (a stream is never read here) and only up to
/// the cap, as UTF-8 text (other bytes as a count).
public struct LoggingMiddleware: Middleware {
    /// How much of each body to log.
    public enum BodyLogging: Sendable, Hashable {
        case none
        /// At most this many bytes of each body.
        case upTo(Int)
    }

    public var logger: Logger
    /// The level of the request and response lines (failures are `.error`).
    public var level: Logger.Level
    /// Whether to log header fields (as metadata), redacted.
    public var headers: Bool
    public var bodies: BodyLogging
    /// Fields whose values are never logged: by default `CredentialFields.standard`
    /// (credentials, cookies, API keys) — the list redirects use too; extend it with
    /// `.standard.adding([name])`.
    public var redactedFields: CredentialFields
    /// Whether query values are logged (off by default: API keys travel there too); names
    /// always are.
    public var queryValues: Bool

    public init(logger: Logger, level: Logger.Level = .info, headers: Bool = false, bodies: BodyLogging = .none,
                redactedFields: CredentialFields = .standard, queryValues: Bool = false) {
        self.logger = logger
        self.level = level
        self.headers = headers
        self.bodies = bodies
        self.redactedFields = redactedFields
        self.queryValues = queryValues
    }

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let start = ContinuousClock.now
        let line = "\(request.head.method.rawValue) \(self.loggable(request.url))"
        var metadata: Logger.Metadata = ["operation": "\(request.operationName)"]
        if self.headers { metadata["request.headers"] = self.describe(request.head.headerFields) }
        if case .upTo(let cap) = self.bodies, case .bytes(let bytes)? = request.body?.content {
            metadata["request.body"] = "\(Self.text(of: bytes, cap: cap))"
        }
        var response: ClientResponse
        do {
            response = try await next(request)
        } catch {
            metadata["duration"] = "\(Self.milliseconds(ContinuousClock.now - start)) ms"
            self.logger.error("\(line) failed: \(self.describe(error))", metadata: metadata)
            throw error
        }
        let elapsed = ContinuousClock.now - start
        metadata["status"] = "\(response.status.code)"
        metadata["duration"] = "\(Self.milliseconds(elapsed)) ms"
        if self.headers { metadata["response.headers"] = self.describe(response.headerFields) }
        if case .upTo(let cap) = self.bodies, !request.isStreaming {
            let bytes = try await response.collectedBytes(limit: request.options.maxBodySize)
            metadata["response.body"] = "\(Self.text(of: bytes, cap: cap))"
        }
        self.logger.log(level: self.level, "\(line) → \(response.status.code) in \(Self.milliseconds(elapsed)) ms", metadata: metadata)
        return response
    }

    /// The fields as `name: value` lines, redacted ones as `name: ‹redacted›`; without query
    /// values, fields holding a URL (`Location`, `Referer`…) lose theirs too.
    func describe(_ fields: HTTPFields) -> Logger.MetadataValue {
        .array(fields.map { field in
            let value = if self.redactedFields.contains(field.name) {
                "‹redacted›"
            } else if Self.urlFields.contains(field.name) {
                self.loggable(field.value)
            } else {
                field.value
            }
            return .string("\(field.name.rawName): \(value)")
        })
    }

    static let urlFields: Set<HTTPField.Name> = [.location, .contentLocation, HTTPField.Name("Referer")!]

    /// A failure as logged: in full with query values shown; else its codes only, as a
    /// transport's detail may quote a URL (a redirect's target).
    func describe(_ error: ClientError) -> String {
        guard !self.queryValues else { return "\(error)" }
        return "\(error.code)" + (error.transportError.map { " (\($0.code))" } ?? "")
    }

    /// A URL as logged: never with userinfo (credentials), and without query values unless
    /// ``queryValues``.
    func loggable(_ url: String) -> String {
        let bare = Self.withoutUserinfo(url)
        return self.queryValues ? bare : Self.withoutQueryValues(bare)
    }

    /// `http://host/…` for `http://user:pw@host/…`.
    static func withoutUserinfo(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let authorityEnd = url[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
        guard let at = url[scheme.upperBound..<authorityEnd].lastIndex(of: "@") else { return url }
        var bare = url
        bare.removeSubrange(scheme.upperBound...at)
        return bare
    }

    /// `…/search?q=‹›&key=‹›`: the names of the query, not its values.
    static func withoutQueryValues(_ url: String) -> String {
        guard let mark = url.firstIndex(of: "?") else { return url }
        let query = url[url.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false).map { item in
            item.split(separator: "=", maxSplits: 1).first.map { "\($0)=‹›" } ?? ""
        }
        return String(url[...mark]) + query.joined(separator: "&")
    }

    static func text(of bytes: [UInt8], cap: Int) -> String {
        let shown = bytes.prefix(Swift.max(0, cap))
        // The cap may cut a character in two: up to three bytes of it are left out.
        let text = (0...Swift.min(3, shown.count)).lazy.compactMap { String(validating: shown.dropLast($0), as: UTF8.self) }.first
        guard let text else { return "\(bytes.count) bytes, not text" }
        return shown.count < bytes.count ? "\(text)… (\(bytes.count) bytes)" : text
    }

    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let ms = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        return String(Int((ms * 10).rounded())).inserting(decimalPointBeforeLast: 1)
    }
}

extension String {
    /// "124" → "12.4".
    fileprivate func inserting(decimalPointBeforeLast digits: Int) -> String {
        let padded = self.count <= digits ? String(repeating: "0", count: digits - self.count + 1) + self : self
        return String(padded.dropLast(digits)) + "." + String(padded.suffix(digits))
    }
}
