import HTTPTypes
import SalvoCore

/// `-w`/`--write-out`: a format printed after the transfer, with curl's variables filled in.
enum WriteOut {
    /// What one `salvo get` run learned, for the format's variables.
    struct Record {
        /// Whether a request was attempted (a usage error prints no format, as with curl).
        var attempted = false
        /// The final response's status (nil: none came; printed 000).
        var statusCode: Int?
        var headerFields: HTTPFields?
        /// Bytes of every head received, interim and redirect heads included (curl's size_header).
        var headerBytes = 0
        /// Body bytes of the final response, as written out.
        var bodyBytes = 0
        var metrics: TransportMetrics?
        var effectiveURL = ""
        var redirects = 0
        var exitCode: Int32 = 0
        /// The failure's message (empty when the transfer succeeded).
        var errorMessage = ""
        /// The URL's place on the command line, from 0.
        var urlIndex = 0
        /// The last request's method (a 303 turns a POST into a GET).
        var method = ""
        /// The final response's HTTP version.
        var version: HTTPVersion?
        /// Where a 3xx not followed pointed, resolved against its request's URL.
        var redirectURL = ""
        /// The file the body went to (empty for stdout).
        var fileName = ""
    }

    /// One value of a variable, as text or for JSON.
    enum Value {
        case text(String)
        case number(String)
        /// Nothing to say: empty text, and `null` in JSON, as curl writes it.
        case absent

        var plain: String {
            switch self {
            case .text(let text), .number(let text): return text
            case .absent: return ""
            }
        }

        var json: String {
            switch self {
            case .number(let text): return text
            case .text(let text): return WriteOut.quoted(text)
            case .absent: return "null"
            }
        }
    }

    /// The variables known here, in the order `%{json}` lists them.
    static let names = [
        "content_type", "errormsg", "exitcode", "filename_effective", "http_code", "http_version",
        "local_ip", "local_port", "method", "num_connects", "num_headers", "num_redirects",
        "redirect_url", "remote_ip", "remote_port", "response_code", "scheme", "size_download",
        "size_header", "size_request", "speed_download",
        "time_appconnect", "time_connect", "time_namelookup", "time_pretransfer",
        "time_starttransfer", "time_total", "url", "url_effective", "urlnum",
    ]

    /// The value of `name`, nil when it is not a variable known here.
    ///
    /// The times are seconds from the start of the transfer up to each phase's end, as curl
    /// counts them, built from the engine's metrics of the final exchange: the connection's
    /// phases end where the wait for a connection (`queueWait`, which for a new connection
    /// holds the lookup, the connect and the handshake) ends less what came after them, so
    /// `time_namelookup` is the moment the connect began. A reused connection or an IP
    /// address has no lookup of its own; its phases then end at the same moment. With `-L`,
    /// `time_total` covers the whole chain while the phases are those the engine reports for
    /// the chain's last exchange; `time_pretransfer` is `time_connect`'s successor: the
    /// moment a connection took the request.
    static func value(of name: String, in record: Record, requestURL: String) -> Value? {
        let metrics = record.metrics
        func seconds(_ duration: Duration?) -> Value { .number(Self.seconds(duration ?? .zero)) }
        let took = metrics?.queueWait ?? .zero
        let appConnect = metrics?.tlsHandshake == nil ? Duration.zero : took
        let connectEnd = Self.clamped(took - (metrics?.tlsHandshake ?? .zero))
        let lookupEnd = Self.clamped(connectEnd - (metrics?.connect ?? .zero))
        switch name {
        case "content_type":
            return .text(record.headerFields?[.contentType] ?? "")
        case "errormsg":
            return record.errorMessage.isEmpty ? .absent : .text(record.errorMessage)
        case "exitcode":
            return .number(String(record.exitCode))
        case "filename_effective":
            return .text(record.fileName)
        case "http_version":
            // curl's spelling: 1 (for 1.0), 1.1, 2, 3; 0 when no response came.
            guard let version = record.version else { return .text("0") }
            return .text(version.minor == 0 ? "\(version.major)" : "\(version.major).\(version.minor)")
        case "local_ip":
            return .text(metrics?.local?.address ?? "")
        case "local_port":
            return .number(String(metrics?.local?.port ?? 0))
        case "method":
            return .text(record.method)
        case "num_connects":
            return .number(String(metrics?.connectionsOpened ?? 0))
        case "num_headers":
            return .number(String(record.headerFields?.count ?? 0))
        case "redirect_url":
            return record.redirectURL.isEmpty ? .absent : .text(record.redirectURL)
        case "remote_ip":
            return .text(metrics?.remote?.address ?? "")
        case "remote_port":
            return .number(String(metrics?.remote?.port ?? 0))
        case "scheme":
            return .text(record.effectiveURL.prefix { $0 != ":" }.uppercased())
        case "speed_download":
            // Body bytes per second over the whole transfer, rounded down as curl does.
            let bytes = record.bodyBytes
            let total = metrics?.total ?? metrics?.timeToHead ?? .zero
            let (whole, fraction) = total.components
            let microseconds = whole * 1_000_000 + fraction / 1_000_000_000_000
            return .number(String(microseconds > 0 ? Int64(bytes) * 1_000_000 / microseconds : 0))
        case "urlnum":
            return .number(String(record.urlIndex))
        case "http_code", "response_code":
            let code = record.statusCode ?? 0
            let digits = String(code)
            return .number(String(repeating: "0", count: max(0, 3 - digits.count)) + digits)
        case "num_redirects":
            return .number(String(record.redirects))
        case "size_download":
            return .number(String(record.bodyBytes))
        case "size_header":
            return .number(String(record.headerBytes))
        case "size_request":
            return .number(String(metrics?.requestBytesSent ?? 0))
        case "time_appconnect":
            return seconds(appConnect)
        case "time_connect":
            return seconds(metrics == nil ? nil : connectEnd)
        case "time_namelookup":
            return seconds(metrics == nil ? nil : lookupEnd)
        case "time_pretransfer":
            return seconds(metrics?.queueWait)
        case "time_starttransfer":
            return seconds(metrics?.timeToFirstByte)
        case "time_total":
            return seconds(metrics?.total ?? metrics?.timeToHead)
        case "url":
            return .text(requestURL)
        case "url_effective":
            return .text(record.effectiveURL)
        default:
            return nil
        }
    }

    static func clamped(_ duration: Duration) -> Duration { duration < .zero ? .zero : duration }

    /// Seconds with six decimals, as curl prints its times.
    static func seconds(_ duration: Duration) -> String {
        let (whole, fraction) = duration.components
        let micros = max(0, whole) * 1_000_000 + max(0, fraction) / 1_000_000_000_000
        let digits = String(micros % 1_000_000)
        return "\(micros / 1_000_000)." + String(repeating: "0", count: 6 - digits.count) + digits
    }

    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// The response's fields as a JSON object: lowercase names, each with its values in order.
    static func headerJSON(_ fields: HTTPFields?) -> String {
        var order: [String] = []
        var values: [String: [String]] = [:]
        for field in fields ?? HTTPFields() {
            let name = field.name.canonicalName
            if values[name] == nil { order.append(name) }
            values[name, default: []].append(field.value)
        }
        return "{" + order.map { Self.quoted($0) + ":[" + values[$0]!.map(Self.quoted).joined(separator: ",") + "]" }
            .joined(separator: ",") + "}"
    }

    /// `format` with its variables and escapes replaced, written to stdout (or stderr after
    /// `%{stderr}`). An unknown variable is warned about on stderr and prints nothing.
    static func write(_ format: [UInt8], _ record: Record, requestURL: String, warn: (String) -> Void) {
        var fd: Int32 = 1
        var pending: [UInt8] = []
        func flush() {
            pending.withUnsafeBytes { _ = Output.writeAll(fd, $0) }
            pending.removeAll()
        }
        var index = format.startIndex
        while index < format.endIndex {
            let byte = format[index]
            let next = index + 1 < format.endIndex ? format[index + 1] : nil
            if byte == UInt8(ascii: "%"), next == UInt8(ascii: "%") {
                pending.append(byte)
                index += 2
            } else if byte == UInt8(ascii: "%"), let (name, end) = Self.variable(in: format, at: index, prefix: "{") {
                index = end
                switch name {
                case "onerror":
                    // The rest is for a transfer that failed.
                    if record.exitCode == 0 {
                        flush()
                        return
                    }
                case "stdout", "stderr":
                    flush()
                    fd = name == "stdout" ? 1 : 2
                case "json":
                    let members = Self.names.compactMap { name in
                        Self.value(of: name, in: record, requestURL: requestURL).map { Self.quoted(name) + ":" + $0.json }
                    }
                    pending += Array(("{" + members.joined(separator: ",") + "}").utf8)
                case "header_json":
                    pending += Array(Self.headerJSON(record.headerFields).utf8)
                default:
                    if let value = Self.value(of: name, in: record, requestURL: requestURL) {
                        pending += Array(value.plain.utf8)
                    } else {
                        warn("unknown --write-out variable: '\(name)'")
                    }
                }
            } else if byte == UInt8(ascii: "%"), let (name, end) = Self.variable(in: format, at: index, prefix: "header{") {
                // curl's %header{name}: the final response's field, its values joined by ", ".
                index = end
                let values = HTTPField.Name(name).map { record.headerFields?[values: $0] ?? [] } ?? []
                pending += Array(values.joined(separator: ", ").utf8)
            } else if byte == UInt8(ascii: "\\"), let next, [UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t")].contains(next) {
                pending.append(next == UInt8(ascii: "n") ? 0x0A : next == UInt8(ascii: "r") ? 0x0D : 0x09)
                index += 2
            } else {
                pending.append(byte)
                index += 1
            }
        }
        flush()
    }

    /// The name in `%<prefix>name}` at `index`, and the index after it; nil when it is not one.
    private static func variable(in format: [UInt8], at index: Int, prefix: String) -> (String, Int)? {
        let start = index + 1 + prefix.utf8.count
        guard start <= format.endIndex, format[(index + 1)..<start].elementsEqual(prefix.utf8),
              let close = format[start...].firstIndex(of: UInt8(ascii: "}")) else { return nil }
        return (String(decoding: format[start..<close], as: UTF8.self), close + 1)
    }
}
