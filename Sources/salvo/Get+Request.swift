import HTTPTypes
import SalvoCore

extension Get {
    /// The request for one URL: the shared -H fields, the data (in the body, or in the query
    /// with -G), the upload when this transfer carries it, credentials from -u or netrc.
    func buildRequest(url typed: [UInt8], upload: String?, session: Session) throws -> (HTTPRequest, HTTPBody?, expectContinue: Bool, removesHost: Bool) {
        var fields = session.headers.fields
        let removed = session.headers.removed

        var body: HTTPBody? = nil
        var url: String
        var typedBytes = typed
        if self.dataInQuery, let data = session.data {
            // -G: the data joins the query (after a "&" when there is one) and the fragment,
            // which never goes on the wire, is left out (curl 7.88 puts the data after it
            // and so loses it).
            if let hash = typedBytes.firstIndex(of: UInt8(ascii: "#")) { typedBytes.removeSubrange(hash...) }
            typedBytes.append(typedBytes.contains(UInt8(ascii: "?")) ? UInt8(ascii: "&") : UInt8(ascii: "?"))
            typedBytes += data.heldBytes ?? []
        }
        do {
            url = try CommandLineURL.normalize(typedBytes)
        } catch {
            throw UsageError(code: 3, message: "URL \"\(String(decoding: typed, as: UTF8.self))\": \(error.reason)")
        }
        if let path = upload {
            // Standard input goes as it comes, chunked, as curl sends it; an empty file with
            // a length of 0.
            // "-T ." is curl's standard input read without blocking the transfer; reads here
            // never block the event loop anyway (they run on a thread of their own).
            let fromStandardInput = path == "-" || path == "."
            body = fromStandardInput ? StandardInput.body : (Output.isEmptyRegularFile(path) ? .bytes([]) : try .file(path: path))
            // curl -T names no type; a file body would guess one from the extension.
            body?.contentType = nil
            // As curl: a URL ending in a slash gets the file's name.
            if url.hasSuffix("/"), !fromStandardInput, let name = path.split(separator: "/").last {
                url += name
            }
        } else if let data = session.data, !self.dataInQuery {
            body = data.body
            if fields[.contentType] == nil && !removed.contains("content-type") {
                // After the length, as curl writes it (a -H Content-Type goes with the others);
                // curl's type for --data-binary @file too, whatever the file's extension.
                body?.contentType = "application/x-www-form-urlencoded"
            }
        }

        let expectContinue: Bool
        (body, expectContinue) = UploadFraming.shape(body, fields: &fields, removed: removed, isUpload: upload != nil)
        let defaultMethod = self.headOnly ? "HEAD" : (upload != nil ? "PUT" : (body != nil ? "POST" : "GET"))
        let methodText = self.method ?? defaultMethod
        guard let method = HTTPRequest.Method(methodText) else {
            throw TransportError(.invalidRequest, detail: "invalid method \"\(methodText)\"")
        }
        // curl's order: Host, Authorization (from the URL), User-Agent, Accept, then the
        // -H fields as given (a -H of one of the first three takes its place there).
        var request = try HTTPRequest(method: method, url: url)
        if let user = self.user {
            // As curl: -u wins over the URL's userinfo; without a colon the password is empty
            // (curl would prompt for one; a script cannot answer).
            // The bytes as typed, as curl sends them: a password need not be UTF-8.
            let typed = OptionOrder.commandLine.values("u").last ?? Array(user.utf8)
            let credentials = typed.contains(UInt8(ascii: ":")) ? typed : typed + [UInt8(ascii: ":")]
            request.headerFields[.authorization] = "Basic " + Base64.encode(credentials)
        }
        self.netrcCredentials?.apply(to: &request, user: self.user, url: url)
        var ordered = HTTPFields()
        // A -H Host takes the Host line's place, first.
        if let host = fields.first(where: { $0.name == HTTPField.Name("Host")! }) { ordered.append(host) }
        if let credentials = request.headerFields[.authorization], fields[.authorization] == nil, !removed.contains("authorization") {
            ordered[.authorization] = credentials
        }
        if fields[.userAgent] == nil && !removed.contains("user-agent") { ordered[.userAgent] = SalvoVersion.userAgent }
        if fields[.accept] == nil && !removed.contains("accept") { ordered[.accept] = "*/*" }
        if self.unixSocket == nil, fields[Self.proxyConnection] == nil, !removed.contains("proxy-connection"),
           let key = try? RequestURL(url).key,
           let proxy = session.proxies.proxy(for: key.scheme, host: key.host), key.scheme == .http, !proxy.tunnelsPlainHTTP {
            // What curl says to a proxy it sends requests to whole.
            ordered[Self.proxyConnection] = "Keep-Alive"
        }
        ordered.append(contentsOf: fields.filter { $0.name != HTTPField.Name("Host")! })
        request.headerFields = ordered
        return (request, body, expectContinue, removed.contains("host"))
    }


    static func describe(_ request: HTTPRequest, body: RequestBodyLength?, absoluteForm: Bool = false,
                         version: HTTPVersion = .http1_1) -> String {
        let target = (absoluteForm ? "\(request.scheme ?? "http")://\(request.authority ?? "")" : "") + (request.path ?? "/")
        var text = "> \(request.method.rawValue) \(target) \(version)\r\n"
        if let authority = request.authority { text += "> Host: \(authority)\r\n" }
        for field in request.headerFields { text += "> \(field.name.rawName): \(field.value)\r\n" }
        switch body {
        case .known(let count)?: text += "> Content-Length: \(count)\r\n"
        case .unknown?: text += "> Transfer-Encoding: chunked\r\n"
        default: break
        }
        return text + ">\r\n"
    }

    /// `raw`'s lines each after `prefix`, line ends kept as they came.
    static func prefixedLines(_ raw: [UInt8], prefix: String) -> String {
        Self.lines(raw).map { line in
            prefix + String(decoding: line.last == 0x0A ? line.dropLast() : line[...], as: UTF8.self) + "\n"
        }.joined()
    }
}
