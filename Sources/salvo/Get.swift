import ArgumentParser
import HTTPTypes
import SalvoCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `salvo get`: requests to one URL or several, curl's options and exit codes.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send requests and print the response bodies (curl-compatible options).",
        discussion: """
            Several URLs are fetched one after another over one connection per host (all at once \
            with -Z); each -o or -O takes the next URL in the order given, the others go to \
            stdout. The exit code is the last transfer's (with -Z, the last failure's).
            """)

    @Argument(help: "The http URLs.")
    var urls: [String]

    @Option(name: [.customShort("X"), .customLong("request")], help: "Request method.")
    var method: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: "Extra header, \"Name: value\" (repeatable).")
    var headers: [String] = []

    @Option(name: [.customShort("d"), .customLong("data")], help: "POST data; @file reads a file, dropping newlines (repeatable; every data option is joined by & in the order given; held in memory, 512 MiB at most).")
    var data: [String] = []

    @Option(name: .customLong("data-ascii"), help: "As -d.")
    var dataASCII: [String] = []

    @Option(name: .customLong("data-raw"), help: "As -d, with no special meaning for @.")
    var dataRaw: [String] = []

    @Option(name: .customLong("data-binary"), help: "POST data sent as is; @file and @- (standard input) are streamed, chunked when their length is unknown (held, like -d, with several URLs or -G).")
    var dataBinary: [String] = []

    @Option(name: .customLong("data-urlencode"), help: "POST data, percent-encoded: content, =content, name=content (the name as typed), @file or name@file (the file's bytes encoded, newlines too).")
    var dataURLEncode: [String] = []

    @Flag(name: [.customShort("G"), .customLong("get")], help: "Send the data of -d and its kind in the URL's query, with GET (HEAD with -I), instead of a POST body.")
    var dataInQuery = false

    /// What -d may hold in memory (bytes); lowered by tests.
    @Option(name: .customLong("held-data-limit"), help: .hidden)
    var heldDataLimit: Int?

    @Option(name: [.customShort("T"), .customLong("upload-file")], help: "Upload this file (PUT unless -X says otherwise), streamed from disk; - is standard input. Each -T takes the next URL, in order.")
    var uploadFiles: [String] = []

    @Option(name: [.customShort("o"), .customLong("output")], help: "Write the body to this file instead of stdout; each -o (and -O) takes the next URL, in order.")
    var outputs: [String] = []

    @Flag(name: [.customShort("O"), .customLong("remote-name")], help: "Write the body to a file named after the URL's last path segment (query dropped, kept percent-encoded); takes the next URL, as -o does.")
    var remoteName = false

    @Flag(name: .customLong("remote-name-all"), help: "As -O for every URL no -o or -O names.")
    var remoteNameAll = false

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
        discussion: "Variables: %{http_code} (%{response_code}), %{size_download}, %{size_header}, %{size_request}, %{time_namelookup}, %{time_connect}, %{time_appconnect}, %{time_pretransfer}, %{time_starttransfer}, %{time_total} (seconds from the start), %{url}, %{url_effective}, %{num_redirects}, %{content_type}, %{exitcode}, %{errormsg}, %{onerror} (what follows only after a failure), %{urlnum}, %{method}, %{scheme}, %{http_version}, %{num_headers}, %{num_connects}, %{remote_ip}, %{remote_port}, %{local_ip}, %{local_port}, %{redirect_url}, %{speed_download}, %{filename_effective}, %header{name}, %{header_json}, %{json} (all of them), %{stderr} and %{stdout} (where what follows goes), %% for %; \\n, \\r and \\t for newline, carriage return and tab."))
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

    // curl's removal entry "-host:port" is this option's value, not an option: the command
    // line reaches the parser as --resolve=-host:port (OptionOrder.normalized).
    @Option(name: .customLong("resolve"),
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

    @Flag(name: .customLong("http1.1"), help: "Speak HTTP/1.1 only.")
    var http11 = false

    @Flag(name: .customLong("http2"), help: "HTTP/2 where a TLS server offers it (ALPN), else HTTP/1.1 (the default).")
    var http2 = false

    @Flag(name: .customLong("http2-prior-knowledge"), help: "HTTP/2 from the first byte for http:// URLs (h2c, no Upgrade); for https:// as --http2.")
    var http2PriorKnowledge = false

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

    @Flag(name: [.customShort("Z"), .customLong("parallel")], help: "Fetch the URLs at the same time (up to --parallel-max at once, one connection each).")
    var parallel = false

    @Option(name: .customLong("parallel-max"), help: "Transfers at once with -Z (default 50, at most 300).")
    var parallelMax: Int?

    @Flag(name: .customLong("fail-early"), help: "Stop at the first transfer that fails, and exit with its code.")
    var failEarly = false

    func run() async throws {
        let status = await self.perform()
        if status != 0 { throw ExitCode(status) }
    }

    func report(_ code: Int32, _ message: String) -> Int32 {
        if !self.silent || self.showError {
            Output.stderr("salvo: (\(code)) \(message)\n")
        }
        return code
    }

    struct UsageError: Error {
        var code: Int32
        var message: String
    }

    /// What every transfer of one command line shares.
    struct Session: Sendable {
        var client: HTTPClient
        var proxies: ProxyConfiguration
        var timeout: Duration?
        var headers: HeaderArguments
        var data: RequestData?
        /// The -w format.
        var format: [UInt8]?
        /// -D's file, written by every transfer in turn.
        var dump: Output.SharedSink?
    }

    func perform() async -> Int32 {
        let session: Session
        let plan: TransferPlan
        do {
            (session, plan) = try self.prepare()
        } catch let error as UsageError {
            // A command line that cannot be run is said even with -s, as curl says it.
            if error.code == 2 && self.silent && !self.showError {
                Output.stderr("salvo: (2) \(error.message)\n")
                return 2
            }
            return self.report(error.code, error.message)
        } catch let error as TransportError {
            return self.report(CurlExitCode.forError(error), error.description)
        } catch {
            return self.report(2, "\(error)")
        }
        defer {
            session.client.shutdown()
            session.dump?.close()
        }
        return self.parallel ? await self.runParallel(plan, session) : await self.runSerial(plan, session)
    }

    /// One after another; the exit code is the last transfer's, as with curl (an earlier
    /// failure shows only in its message), or the first failure's with --fail-early.
    private func runSerial(_ plan: TransferPlan, _ session: Session) async -> Int32 {
        var status: Int32 = 0
        for transfer in plan.transfers {
            status = await self.transfer(transfer, session)
            if status != 0 && self.failEarly { break }
        }
        return status
    }

    /// Up to --parallel-max at once; the exit code is that of the last transfer to fail, as
    /// with curl, or of the first with --fail-early (which stops the others).
    private func runParallel(_ plan: TransferPlan, _ session: Session) async -> Int32 {
        await withTaskGroup(of: Int32.self) { group in
            var waiting = plan.transfers[...]
            for _ in 0..<self.parallelLimit {
                guard let next = waiting.popFirst() else { break }
                group.addTask { await self.transfer(next, session) }
            }
            var status: Int32 = 0
            while let finished = await group.next() {
                if finished != 0 {
                    status = finished
                    if self.failEarly {
                        group.cancelAll()
                        // The others end cancelled; their codes do not replace this one.
                        while await group.next() != nil {}
                        return status
                    }
                }
                if let next = waiting.popFirst() {
                    group.addTask { await self.transfer(next, session) }
                }
            }
            return status
        }
    }

    /// Reads what all transfers share, once: the -w format, the client's configuration, the
    /// -H fields and the data (standard input is read at most once).
    private func prepare() throws -> (Session, TransferPlan) {
        if self.remoteHeaderName && (self.include || self.headOnly) {
            throw UsageError(code: 2, message: "showing headers and --remote-header-name cannot be combined")
        }
        if self.outputs.contains("") { throw UsageError(code: 2, message: "option -o: is badly used here") }
        if self.urls.contains("-") { throw UsageError(code: 2, message: "option -: is unknown") }
        if let parallelMax, parallelMax < 0 {
            throw UsageError(code: 2, message: "option --parallel-max: expected a positive numerical parameter")
        }
        var format: [UInt8]? = nil
        if let writeOut {
            if writeOut.hasPrefix("@") {
                let path = String(writeOut.dropFirst())
                guard let bytes = Output.readFile(path == "-" ? nil : path) else {
                    throw UsageError(code: 26, message: "cannot read the --write-out format from \(path)")
                }
                format = bytes
            } else {
                format = OptionOrder.commandLine.values("w").last ?? Array(writeOut.utf8)
            }
        }
        let (configuration, timeout) = try self.clientConfiguration()
        let options = OptionOrder.commandLine
        let plan = TransferPlan(urls: self.urls, options: options, remoteNameAll: self.remoteNameAll,
                                uploads: options.named(["T"]).map { String(decoding: $0.value ?? [], as: UTF8.self) })
        if plan.unusedOutputs > 0 && !self.silent { Output.stderr("Warning: Got more output options than URLs\n") }
        if !self.remoteHeaderName, plan.transfers.contains(where: { $0.destination == .remoteName && !Self.hasRemoteName($0.url) }) {
            // As curl: a -O that cannot name its file stops the run before any transfer.
            throw UsageError(code: 23, message: "Remote file name has no length")
        }

        // The bytes as typed: a value need not be UTF-8.
        let typedHeaders = OptionOrder.commandLine.values("H")
        let headers = try HeaderArguments(typedHeaders.count == self.headers.count ? typedHeaders : self.headers.map { Array($0.utf8) })
        if !self.silent { for warning in headers.warnings { Output.stderr("Warning: \(warning)\n") } }
        var data: RequestData? = nil
        let items = RequestData.items(options)
        if !items.isEmpty {
            guard self.uploadFiles.isEmpty else {
                throw UsageError(code: 2, message: "-T cannot be combined with -d, --data-binary or --data-urlencode")
            }
            // The bytes as typed: "as is" means every byte, UTF-8 or not. Sent more than once
            // or in the URL, a stream is read whole first.
            data = try RequestData(items, limit: self.heldDataLimit ?? RequestData.defaultHeldLimit,
                                   holdsStreams: self.urls.count > 1, holdsFiles: self.dataInQuery)
            if !self.silent { for warning in data?.warnings ?? [] { Output.stderr("Warning: \(warning)\n") } }
        }
        let client: HTTPClient
        do {
            client = try HTTPClient(configuration: configuration)
        } catch {
            throw UsageError(code: CurlExitCode.forError(error), message: error.description)
        }
        // -D: the heads byte for byte, as they came (a terminal too: the option asks for them raw).
        let dump = self.dumpHeader.map { Output.SharedSink(path: $0) }
        let session = Session(client: client, proxies: configuration.proxy, timeout: timeout, headers: headers,
                              data: data, format: format, dump: dump)
        return (session, plan)
    }
}
