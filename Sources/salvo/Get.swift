import ArgumentParser
import HTTPTypes
import SalvoCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `salvo get`: one request, curl's options and exit codes.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send one request and print the response body (curl-compatible options).")

    @Argument(help: "The http URL.")
    var url: String

    @Option(name: [.customShort("X"), .customLong("request")], help: "Request method.")
    var method: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "Extra header, \"Name: value\" (repeatable).")
    var headers: [String] = []

    @Option(name: [.customShort("d"), .customLong("data")], help: "POST data; @file reads a file, dropping newlines (repeatable, joined by &; held in memory, 512 MiB at most).")
    var data: [String] = []

    @Option(name: .customLong("data-binary"), help: "POST data sent as is; @file and @- (standard input) are streamed, chunked when their length is unknown.")
    var dataBinary: [String] = []

    /// What -d may hold in memory (bytes); lowered by tests.
    @Option(name: .customLong("held-data-limit"), help: .hidden)
    var heldDataLimit: Int?

    @Option(name: [.customShort("T"), .customLong("upload-file")], help: "Upload this file (PUT unless -X says otherwise), streamed from disk.")
    var uploadFile: String?

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the body to this file instead of stdout (the first -o is the URL's, as with curl).")
    var outputs: [String] = []

    /// curl ties each -o to a URL in order: with one URL, the first one counts.
    var output: String? { self.outputs.first }

    @Flag(name: [.customShort("O"), .customLong("remote-name")], help: "Write the body to a file named after the URL's last path segment (query dropped, kept percent-encoded); -o wins when both are given.")
    var remoteName = false

    @Flag(name: [.customShort("J"), .customLong("remote-header-name")], help: "With -O, name the file after the response's Content-Disposition filename (its base name only; an existing file is never replaced).")
    var remoteHeaderName = false

    @Option(name: .customLong("output-dir"), help: "Directory for the files of -O, -J and a relative -o.")
    var outputDir: String?

    @Flag(name: .customLong("create-dirs"), help: "Create the missing directories of the output file's path (mode 0750).")
    var createDirs = false

    @Flag(name: [.customShort("i"), .customLong("include")], help: "Include the response head in the output.")
    var include = false

    @Option(name: [.customShort("D"), .customLong("dump-header")], help: "Write every response head as received (interim ones and, with -L, each of the chain) to this file; - is stdout.")
    var dumpHeader: String?

    @Option(name: [.customShort("w"), .customLong("write-out")], help: ArgumentHelp(
        "After the transfer, print this format with curl's variables filled in; @file reads it from a file, @- from stdin.",
        discussion: "Variables: %{http_code} (%{response_code}), %{size_download}, %{size_header}, %{size_request}, %{time_namelookup}, %{time_connect}, %{time_appconnect}, %{time_pretransfer}, %{time_starttransfer}, %{time_total} (seconds from the start), %{url}, %{url_effective}, %{num_redirects}, %{content_type}, %{exitcode}, %header{name}, %{header_json}, %{json} (all of them), %{stderr} and %{stdout} (where what follows goes), %% for %; \\n, \\r and \\t for newline, carriage return and tab."))
    var writeOut: String?

    @Flag(name: [.customShort("I"), .customLong("head")], help: "Send HEAD and print only the head.")
    var headOnly = false

    @Flag(name: [.customShort("s"), .customLong("silent")], help: "Print no error messages.")
    var silent = false

    @Flag(name: [.customShort("S"), .customLong("show-error")], help: "With -s, still print error messages.")
    var showError = false

    @Flag(name: [.customShort("v"), .customLong("verbose")], help: "Print request and response heads to stderr.")
    var verbose = false

    @Flag(name: [.customShort("f"), .customLong("fail")], help: "Exit 22, printing no body, on status 400 or more.")
    var fail = false

    @Option(name: [.customShort("m"), .customLong("max-time")], help: "Seconds the whole transfer may take.")
    var maxTime: Double?

    @Option(name: .customLong("connect-timeout"), help: "Seconds a connection may take.")
    var connectTimeout: Double?

    // Unconditional: curl's removal entry "-host:port" is this option's value, not an option.
    @Option(name: .customLong("resolve"), parsing: .unconditionalSingleValue,
            help: "host:port:address[,address…] — use these addresses for host and port; -host:port removes an earlier entry for them (repeatable).")
    var resolve: [String] = []

    @Option(name: [.customShort("u"), .customLong("user")], help: "user:password — Basic credentials for the server (a user alone sends an empty password).")
    var user: String?

    @Flag(name: [.customShort("n"), .customLong("netrc")], help: "Take the credentials for the URL's host from ~/.netrc (per host again on each redirect; -u and the URL's user win).")
    var netrc = false

    @Option(name: .customLong("netrc-file"), help: "As --netrc, from this file.")
    var netrcFile: String?

    @Flag(name: .customLong("netrc-optional"), help: "As --netrc, the file being optional.")
    var netrcOptional = false

    @Option(name: [.customShort("x"), .customLong("proxy")], help: "[http://][user:password@]host[:port] — go through this HTTP proxy (\"\" for none; default port 1080).")
    var proxy: String?

    @Option(name: [.customShort("U"), .customLong("proxy-user")], help: "user:password for the proxy.")
    var proxyUser: String?

    @Option(name: .customLong("noproxy"), help: "Hosts that go direct, comma-separated (\"*\" for all); replaces NO_PROXY.")
    var noProxy: String?

    @Flag(name: [.customShort("p"), .customLong("proxytunnel")], help: "Tunnel http:// requests through the proxy too (CONNECT).")
    var proxyTunnel = false

    @Option(name: .customLong("unix-socket"), help: "Connect to this Unix domain socket instead of the URL's host.")
    var unixSocket: String?

    @Flag(name: [.customShort("4"), .customLong("ipv4")], help: "Connect over IPv4 only.")
    var ipv4Only = false

    @Flag(name: [.customShort("6"), .customLong("ipv6")], help: "Connect over IPv6 only.")
    var ipv6Only = false

    @Flag(name: [.customShort("k"), .customLong("insecure")], help: "Do not verify the server's TLS certificate.")
    var insecure = false

    @Option(name: .customLong("cacert"), help: "CA certificates (PEM file) to verify the server with.")
    var cacert: String?

    @Option(name: .customLong("capath"), help: "Directory of CA certificates to verify the server with.")
    var capath: String?

    @Option(name: .customLong("cert"), help: "Client certificate (PEM file).")
    var clientCertificate: String?

    @Option(name: .customLong("key"), help: "Private key for --cert (PEM file).")
    var clientKey: String?

    @Option(name: .customLong("pinnedpubkey"), help: "Pinned public keys: sha256//BASE64[;sha256//BASE64…].")
    var pinnedPublicKey: String?

    @Flag(name: .customLong("tlsv1.2"), help: "Use TLS 1.2 or later.")
    var tls12 = false

    @Flag(name: .customLong("tlsv1.3"), help: "Use TLS 1.3 or later.")
    var tls13 = false

    @Flag(name: .customLong("compressed"), help: "Ask for gzip or deflate and decode the response.")
    var compressed = false

    @Option(name: .customLong("max-filesize"), help: "Fail (exit 63) rather than receive a body larger than this many bytes (decoded size included).")
    var maxFilesize: Int?

    @Flag(name: [.customShort("L"), .customLong("location")], help: "Follow redirects.")
    var followRedirects = false

    @Flag(name: .customLong("location-trusted"), help: "As -L, sending the credentials (-u, Authorization, Cookie) to every host of the chain, not only the first.")
    var locationTrusted = false

    @Option(name: .customLong("max-redirs"), help: "Redirects followed at most with -L (default 50, -1: no limit).")
    var maxRedirects: Int = 50

    func run() async throws {
        let status = await self.perform()
        if status != 0 { throw ExitCode(status) }
    }

    private func report(_ code: Int32, _ message: String) -> Int32 {
        if !self.silent || self.showError {
            Output.stderr("salvo: (\(code)) \(message)\n")
        }
        return code
    }

    func perform() async -> Int32 {
        var format: [UInt8]? = nil
        if let writeOut {
            if writeOut.hasPrefix("@") {
                let path = String(writeOut.dropFirst())
                guard let bytes = Output.readFile(path == "-" ? nil : path) else {
                    return self.report(26, "cannot read the --write-out format from \(path)")
                }
                format = bytes
            } else {
                format = RawArguments.values(of: ["-w", "--write-out"], parsed: [writeOut]).last ?? Array(writeOut.utf8)
            }
        }
        var record = WriteOut.Record()
        let status = await self.transfer(&record)
        if let format, record.attempted {
            record.exitCode = status
            // Warned about even with -s, as curl does.
            WriteOut.write(format, record, requestURL: self.requestURL ?? self.url) { Output.stderr("salvo: \($0)\n") }
        }
        return status
    }

    /// The URL as requested (after the command line's normalization).
    private var requestURL: String? {
        try? CommandLineURL.normalize(RawArguments.bytes(of: self.url))
    }

    func transfer(_ record: inout WriteOut.Record) async -> Int32 {
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.maxConnectionsPerHost = 1
        configuration.userAgent = nil  // set (or removed) by the command line itself
        if self.insecure { configuration.tls = .insecure }
        if let cacert { configuration.tls.trustRoots = .file(cacert) }
        if let capath { configuration.tls.trustRoots = .directory(capath) }
        configuration.tls.certificateFile = self.clientCertificate
        configuration.tls.privateKeyFile = self.clientKey
        if self.tls13 { configuration.tls.minimumVersion = .tls13 }
        if let pins = self.pinnedPublicKey {
            var keys: [String] = []
            for pin in pins.split(separator: ";") {
                guard pin.hasPrefix("sha256//"), pin.count > 8 else {
                    return self.report(2, "--pinnedpubkey takes sha256//BASE64 values (PEM/DER files are not supported)")
                }
                keys.append(String(pin.dropFirst(8)))
            }
            configuration.tls.pinnedPublicKeys = keys
        }
        if let maxFilesize, maxFilesize < 0 { return self.report(2, "option --max-filesize: is badly used here") }
        for entry in self.resolve {
            do throws(TransportError) {
                if entry.hasPrefix("-") {
                    // curl's "-host:port": forget what earlier entries said for it (a later
                    // entry may add it again). Whatever follows the port is not read, as with
                    // curl, so an entry copied whole with a "-" in front removes itself. Not
                    // being there is no error.
                    let parts = entry.dropFirst().split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
                    guard parts.count >= 2, !parts[0].isEmpty, let port = Int(parts[1]) else {
                        throw TransportError(.invalidConfiguration, detail: "resolve entry \"\(entry)\": expected -host:port")
                    }
                    configuration.nameResolution.overrides.removeAll { $0.host.lowercased() == parts[0].lowercased() && $0.port == port }
                    continue
                }
                configuration.nameResolution.overrides.append(try ResolveOverride(entry))
            } catch {
                // curl: "bad option syntax".
                return self.report(49, error.detail ?? "--resolve \(entry) cannot be read")
            }
        }
        configuration.unixSocketPath = self.unixSocket
        do {
            configuration.proxy = try self.proxyConfiguration()
        } catch {
            return self.report(error.code, error.message)
        }
        if self.ipv4Only || self.ipv6Only {
            // Both given: the last one counts, as with curl.
            let last = RawArguments.all.dropFirst().last { ["-4", "--ipv4", "-6", "--ipv6"].contains(String(decoding: $0, as: UTF8.self)) }
            let six = last.map { ["-6", "--ipv6"].contains(String(decoding: $0, as: UTF8.self)) } ?? self.ipv6Only
            configuration.nameResolution.family = six ? .ipv6 : .ipv4
        }
        configuration.decompression = self.compressed
            ? Decompression(maxDecodedSize: self.maxFilesize)
            : .disabled
        guard self.maxRedirects >= -1 else { return self.report(2, "option --max-redirs: expected a proper numerical parameter") }
        // As curl: a redirect to another origin drops Authorization and Cookie; other fields
        // given with -H (an API key among them) go on, as the user typed them.
        // --location-trusted sends them everywhere; netrc credentials are each host's own.
        configuration.redirects = self.followRedirects || self.locationTrusted
            ? RedirectPolicy(maxRedirects: self.maxRedirects == -1 ? Int.max : self.maxRedirects,
                             credentialFields: [.authorization, .cookie], trustsEveryHost: self.locationTrusted)
            : .disabled
        self.netrcCredentials?.applyToRedirects(&configuration.redirects, user: self.user)
        // As curl: no bound on a server's silence or on the wait for a head unless -m says so,
        // and connecting bounded only by curl's own default (300 s) or --connect-timeout.
        configuration.headTimeout = nil
        configuration.readTimeout = nil
        configuration.connectTimeout = .seconds(300)
        let timeout: Duration?
        do {
            if let connectTimeout = try Self.seconds(self.connectTimeout, option: "--connect-timeout") {
                configuration.connectTimeout = connectTimeout
            }
            timeout = try Self.seconds(self.maxTime, option: "-m")
        } catch {
            return self.report(error.code, error.message)
        }

        let request: HTTPRequest
        let body: HTTPBody?
        let expectContinue: Bool
        let removesHost: Bool
        do {
            (request, body, expectContinue, removesHost) = try self.buildRequest(proxies: configuration.proxy)
        } catch let error as TransportError {
            return self.report(CurlExitCode.forError(error), error.description)
        } catch let error as UsageError {
            return self.report(error.code, error.message)
        } catch {
            return self.report(2, "\(error)")
        }

        let client: HTTPClient
        do {
            client = try HTTPClient(configuration: configuration)
        } catch {
            return self.report(CurlExitCode.forError(error), error.description)
        }
        defer { client.shutdown() }

        if self.verbose {
            // A request a proxy gets whole shows its absolute form, as it goes on the wire.
            let viaProxy = request.headerFields[Self.proxyConnection] != nil
            Output.stderr(Self.describe(request, body: body?.announcedLength, absoluteForm: viaProxy))
        }

        // Opened at the first byte to write, as curl does: a failed request leaves an
        // existing file as it was.
        var sink: Output.Sink
        do throws(UsageError) {
            sink = try self.bodySink(target: request.path ?? "/")
        } catch {
            return self.report(error.code, error.message)
        }
        defer { sink.close() }
        // -D: the heads byte for byte, as they came (a terminal too: the option asks for them raw).
        var dump = self.dumpHeader.map { Output.Sink(path: $0) }
        defer { dump?.close() }
        record.attempted = true
        record.effectiveURL = "\(request.scheme ?? "http")://\(request.authority ?? "")\(request.path ?? "/")"

        // Every head as it arrived (interim ones, each of a redirect chain, the lines of one
        // that failed), shown byte for byte with -i and -v, as curl does — but for control
        // characters in a status line, shown escaped on stdout and stderr (a file given
        // with -o gets the bytes as they came).
        let heads = Mutex<[ReceivedHead]>([])
        var options = HTTPClient.RequestOptions(timeout: timeout)
        options.expectContinue = expectContinue
        // -H "Host:" (on the command line or in a -H @file) removes the Host line itself, as curl does.
        options.omitsHost = removesHost
        if self.include || self.headOnly || self.verbose || self.dumpHeader != nil || self.writeOut != nil {
            options.headObserver = { head in heads.withLock { $0.append(head) } }
        }
        /// Writes the heads that came since the last call; false when the output failed.
        func showHeads() -> Bool {
            let arrived = heads.withLock { list in
                defer { list.removeAll() }
                return list
            }
            for head in arrived {
                if head.kind != .failed { record.headerBytes += head.raw.count }
                if dump != nil, !dump!.write(head.raw) { return false }
                let shown = ShownHead.escapingStatusLine(head.raw)
                if self.verbose { Output.stderr(Self.prefixedLines(shown, prefix: "< ")) }
                let toTerminal = !sink.isFile
                if self.include || self.headOnly, !sink.write(toTerminal ? shown : head.raw) { return false }
            }
            return true
        }

        do throws(TransportError) {
            var response: TransportResponse
            do throws(TransportError) {
                response = try await client.stream(request, body: body, options: options)
                if response.status.code == 417, options.expectContinue, body?.isReplayable ?? true {
                    // The server refuses to be asked first: sent again without Expect, as curl does.
                    response.body.cancel()
                    options.expectContinue = false
                    response = try await client.stream(request, body: body, options: options)
                }
            } catch {
                guard showHeads() else { return self.report(23, sink.failure) }
                throw error
            }
            guard showHeads() else { return self.report(23, sink.failure) }
            record.statusCode = Int(response.status.code)
            record.headerFields = response.headerFields
            record.metrics = response.metrics
            record.redirects = response.redirects.count
            if let last = response.redirectChain.last { record.effectiveURL = last }
            if let reason = response.unfollowedRedirect {
                // A 307/308 for a body that cannot be sent again (-T -): curl stops here too.
                response.body.cancel()
                return self.report(25, reason)
            }
            if self.fail && response.status.code >= 400 {
                return self.report(22, "The requested URL returned error: \(response.status.code)")
            }
            if let limit = self.maxFilesize, let announced = response.headerFields[.contentLength],
               Int(announced).map({ $0 > limit }) ?? announced.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                // A length past any count (the engine read the body to the close) exceeds too.
                return self.report(63, "Maximum file size exceeded")
            }
            do throws(UsageError) {
                if let named = try self.remoteHeaderSink(response.headerFields, target: request.path ?? "/") {
                    sink = named
                    guard sink.write([]) else { return self.report(23, sink.failure) }
                }
            } catch {
                return self.report(error.code, error.message)
            }
            var received = 0
            for try await chunk in response.body {
                received += chunk.count
                if let limit = self.maxFilesize, received > limit { return self.report(63, "Maximum file size exceeded") }
                record.bodyBytes = received
                guard sink.write(chunk) else { return self.report(23, sink.failure) }
            }
            if let metrics = response.body.metrics { record.metrics = metrics }
            // An empty body still makes (or empties) the file, as curl does.
            guard sink.write([]) else { return self.report(23, sink.failure) }
            return 0
        } catch {
            return self.report(Self.exitCode(for: error, proxies: configuration.proxy), error.description)
        }
    }

    struct UsageError: Error {
        var code: Int32
        var message: String
    }

    /// A duration option as curl reads it: 0 (or NaN) is no limit, a negative or infinite
    /// number, or one too large for milliseconds in a 64-bit count, is a usage error (exit 2).
    static func seconds(_ value: Double?, option: String) throws(UsageError) -> Duration? {
        guard let value, !value.isNaN, value != 0 else { return nil }
        guard value > 0 else { throw UsageError(code: 2, message: "option \(option): expected a positive numerical parameter") }
        guard value.isFinite, value <= 9.2e15 else { throw UsageError(code: 2, message: "option \(option): too large number") }
        return .milliseconds(Int64((value * 1000).rounded(.up)))
    }

    func buildRequest(proxies: ProxyConfiguration = .none) throws -> (HTTPRequest, HTTPBody?, expectContinue: Bool, removesHost: Bool) {
        let headers = try HeaderArguments(self.headers.map { RawArguments.bytes(of: $0, attached: ["-H", "--header="]) })
        if !self.silent { for warning in headers.warnings { Output.stderr("Warning: \(warning)\n") } }
        var fields = headers.fields
        let removed = headers.removed

        var body: HTTPBody? = nil
        var url: String
        do {
            url = try CommandLineURL.normalize(RawArguments.bytes(of: self.url))
        } catch {
            throw UsageError(code: 3, message: "URL \"\(self.url)\": \(error.reason)")
        }
        if let path = self.uploadFile {
            guard self.data.isEmpty && self.dataBinary.isEmpty else {
                throw UsageError(code: 2, message: "-T cannot be combined with -d or --data-binary")
            }
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
        } else if !self.data.isEmpty || !self.dataBinary.isEmpty {
            // The bytes as typed: "as is" means every byte, UTF-8 or not.
            let data = try RequestData(data: RawArguments.values(of: ["-d", "--data"], parsed: self.data),
                                       binary: RawArguments.values(of: ["--data-binary"], parsed: self.dataBinary),
                                       limit: self.heldDataLimit ?? RequestData.defaultHeldLimit)
            if !self.silent { for warning in data.warnings { Output.stderr("Warning: \(warning)\n") } }
            body = data.body
            if fields[.contentType] == nil && !removed.contains("content-type") {
                // After the length, as curl writes it (a -H Content-Type goes with the others);
                // curl's type for --data-binary @file too, whatever the file's extension.
                body?.contentType = "application/x-www-form-urlencoded"
            }
        }

        let expectContinue: Bool
        (body, expectContinue) = UploadFraming.shape(body, fields: &fields, removed: removed, isUpload: self.uploadFile != nil)
        let methodText = self.method ?? (self.headOnly ? "HEAD" : (self.uploadFile != nil ? "PUT" : (body != nil ? "POST" : "GET")))
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
            let typed = RawArguments.values(of: ["-u", "--user"], parsed: [user]).last ?? []
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
        if fields[.userAgent] == nil && !removed.contains("user-agent") { ordered[.userAgent] = "salvo/0.1" }
        if fields[.accept] == nil && !removed.contains("accept") { ordered[.accept] = "*/*" }
        if self.unixSocket == nil, fields[Self.proxyConnection] == nil, !removed.contains("proxy-connection"),
           let key = try? RequestURL(url).key,
           let proxy = proxies.proxy(for: key.scheme, host: key.host), key.scheme == .http, !proxy.tunnelsPlainHTTP {
            // What curl says to a proxy it sends requests to whole.
            ordered[Self.proxyConnection] = "Keep-Alive"
        }
        ordered.append(contentsOf: fields.filter { $0.name != HTTPField.Name("Host")! })
        request.headerFields = ordered
        return (request, body, expectContinue, removed.contains("host"))
    }

    static func describe(_ request: HTTPRequest, body: RequestBodyLength?, absoluteForm: Bool = false) -> String {
        let target = (absoluteForm ? "\(request.scheme ?? "http")://\(request.authority ?? "")" : "") + (request.path ?? "/")
        var text = "> \(request.method.rawValue) \(target) HTTP/1.1\r\n"
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
        var text = ""
        for line in raw.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast(raw.last == 0x0A ? 1 : 0) {
            text += prefix + String(decoding: line, as: UTF8.self) + "\n"
        }
        return text
    }
}

