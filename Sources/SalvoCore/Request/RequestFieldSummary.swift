import HTTPTypes

/// What preparing a request asks of its own fields, found in one pass over them: whether it
/// sets the fields the client would otherwise add (User-Agent, Accept-Encoding), whether it
/// carries fields meant for a proxy, its Expect, and whether its Connection asks to close.
/// (Asked one by one, each question was a scan of its own, copying every field it passed.)
struct RequestFieldSummary {
    var hasUserAgent = false
    var hasAcceptEncoding = false
    /// Proxy-Authorization or Proxy-Connection: fields for a proxy that forwards the request.
    var hasProxyFields = false
    /// Every Expect value, joined with ", "; nil without one.
    var expect: String?
    /// A Connection field lists `close`: the connection is not reused after the request.
    var asksClose = false

    init(_ fields: HTTPFields) {
        for field in fields {
            // Names are matched on their lowercase spelling, by length first.
            let name = field.name.canonicalName
            switch name.utf8.count {
            case 6 where name == "expect":
                self.expect = self.expect.map { $0 + ", " + field.value } ?? field.value
            case 10 where name == "user-agent":
                self.hasUserAgent = true
            case 10 where name == "connection":
                if Self.listsClose(field.value) { self.asksClose = true }
            case 15 where name == "accept-encoding":
                self.hasAcceptEncoding = true
            case 16 where name == "proxy-connection", 19 where name == "proxy-authorization":
                self.hasProxyFields = true
            default:
                break
            }
        }
    }

    /// Whether a Connection value lists `close` (any case, spaces around it ignored).
    static func listsClose(_ value: String) -> Bool {
        value.split(separator: ",").contains { $0.lowercased().filter { $0 != " " && $0 != "\t" } == "close" }
    }
}
