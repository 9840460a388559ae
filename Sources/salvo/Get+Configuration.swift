import SalvoCore

extension Get {
    /// The client every transfer of the command line shares (one connection per host, reused
    /// from URL to URL; up to --parallel-max of them with -Z), and the per-transfer time limit.
    func clientConfiguration() throws(UsageError) -> (HTTPClient.Configuration, timeout: Duration?) {
        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.maxConnectionsPerHost = self.parallel ? self.parallelLimit : 1
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
                    throw UsageError(code: 2, message: "--pinnedpubkey takes sha256//BASE64 values (PEM/DER files are not supported)")
                }
                keys.append(String(pin.dropFirst(8)))
            }
            configuration.tls.pinnedPublicKeys = keys
        }
        if let maxFilesize, maxFilesize < 0 { throw UsageError(code: 2, message: "option --max-filesize: is badly used here") }
        try self.applyResolve(to: &configuration)
        configuration.unixSocketPath = self.unixSocket
        configuration.httpVersion = Self.httpVersion(OptionOrder.commandLine)
        configuration.proxy = try self.proxyConfiguration()
        if self.ipv4Only || self.ipv6Only {
            // Both given: the last one counts, as with curl.
            let last = OptionOrder.commandLine.named(["4", "6"]).last
            let six = last.map { $0.name == "6" } ?? self.ipv6Only
            configuration.nameResolution.family = six ? .ipv6 : .ipv4
        }
        configuration.decompression = self.compressed
            ? Decompression(maxDecodedSize: self.maxFilesize)
            : .disabled
        guard self.maxRedirects >= -1 else { throw UsageError(code: 2, message: "option --max-redirs: expected a proper numerical parameter") }
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
        if let connectTimeout = try Self.seconds(self.connectTimeout, option: "--connect-timeout") {
            configuration.connectTimeout = connectTimeout
        }
        return (configuration, try Self.seconds(self.maxTime, option: "-m"))
    }

    /// --parallel-max as curl reads it: at most 300; below 1, the default (50).
    var parallelLimit: Int {
        guard let parallelMax, parallelMax >= 1 else { return 50 }
        return min(parallelMax, 300)
    }

    private func applyResolve(to configuration: inout HTTPClient.Configuration) throws(UsageError) {
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
                throw UsageError(code: 49, message: error.detail ?? "--resolve \(entry) cannot be read")
            }
        }
    }

    /// A duration option as curl reads it: 0 (or NaN) is no limit, a negative or infinite
    /// number, or one too large for milliseconds in a 64-bit count, is a usage error (exit 2).
    static func seconds(_ value: Double?, option: String) throws(UsageError) -> Duration? {
        guard let value, !value.isNaN, value != 0 else { return nil }
        guard value > 0 else { throw UsageError(code: 2, message: "option \(option): expected a positive numerical parameter") }
        guard value.isFinite, value <= 9.2e15 else { throw UsageError(code: 2, message: "option \(option): too large number") }
        return .milliseconds(Int64((value * 1000).rounded(.up)))
    }

    /// The version policy the last of `--http1.1`, `--http2` and `--http2-prior-knowledge`
    /// asks for, as curl takes the last; `.automatic` when none is given.
    static func httpVersion(_ order: OptionOrder) -> HTTPClient.HTTPVersionPolicy {
        switch order.named(["http1.1", "http2", "http2-prior-knowledge"]).last?.name {
        case "http1.1": .http1Only
        case "http2-prior-knowledge": .http2PriorKnowledge
        default: .automatic
        }
    }
}
