import HTTPTypes
import SalvoCore
import Tracing

/// A request's client span: started with the request's attributes, its context injected into
/// the request's fields (a W3C tracer writes `traceparent`), ended with the response's status
/// or the error.
struct RequestSpan: RequestObservation {
    let span: any Span

    static func start(_ request: inout HTTPRequest, tracer: any Tracer) -> RequestSpan {
        let method = request.method.rawValue
        let span = tracer.startSpan(method, context: ServiceContext.current ?? .topLevel, ofKind: .client)
        span.attributes["http.request.method"] = method
        if let scheme = request.scheme { span.attributes["url.scheme"] = scheme }
        if let authority = request.authority {
            let (host, port) = Self.split(authority, scheme: request.scheme)
            span.attributes["server.address"] = host
            if let port { span.attributes["server.port"] = port }
            // The URL as sent, without its query (where tokens may sit); the authority has no
            // user information (HTTPRequest keeps none).
            let path = (request.path ?? "/").prefix { $0 != "?" }
            span.attributes["url.full"] = "\(request.scheme ?? "http")://\(authority)\(path)"
        }
        tracer.inject(span.context, into: &request.headerFields, using: HTTPFieldsInjector())
        return RequestSpan(span: span)
    }

    func ended(_ result: Result<HTTPResponse, TransportError>) {
        switch result {
        case .success(let head):
            self.span.attributes["http.response.status_code"] = head.status.code
            if head.status.code >= 400 {
                self.span.attributes["error.type"] = String(head.status.code)
                self.span.setStatus(SpanStatus(code: .error))
            }
        case .failure(let error):
            self.span.attributes["error.type"] = error.code.description
            self.span.recordError(error)
            self.span.setStatus(SpanStatus(code: .error, message: error.code.description))
        }
        self.span.end()
    }

    /// `host` and `port` of an authority (`[::1]:8443` → `::1`, 8443); the scheme's port when
    /// it names none.
    static func split(_ authority: String, scheme: String?) -> (String, Int?) {
        var host = Substring(authority)
        var port: Int?
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            host = authority[..<colon]
            port = Int(authority[authority.index(after: colon)...])
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return (String(host), port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil))
    }
}

/// Writes a tracer's context into a request's fields.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        carrier[name] = value
    }
}
