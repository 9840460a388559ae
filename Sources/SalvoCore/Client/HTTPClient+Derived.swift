extension HTTPClient {
    /// A client with other request defaults over the same event loops and connection pools:
    /// cheap to make (no thread, no connection), one per part of a program that wants its own
    /// timeouts, redirects, decompression, User-Agent or default fields.
    ///
    /// ```swift
    /// let client = try HTTPClient()
    /// let reports = client.with { $0.requestTimeout = .seconds(60); $0.headerFields[.authorization] = "Bearer …" }
    /// let health = client.with { $0.requestTimeout = .milliseconds(500); $0.redirects = .disabled }
    /// ```
    ///
    /// Request defaults follow `adjust`: `requestTimeout`, `headTimeout`, `readTimeout`, `writeTimeout`,
    /// `redirects`, `decompression`, `userAgent`, `headerFields`, `maxBodySize`,
    /// `expectContinueTimeout`, `unixSocketPath`, `proxy`. What belongs to the pools stays this
    /// client's, whatever `adjust` sets: threads, connection limits, pipelining, idle, connect and pool
    /// wait timeouts, head limits, TLS (a request can still bring its own TLS settings), name
    /// resolution and the observer (whose host events come from the pools). The derived client keeps its base alive; shutting it down only
    /// stops it taking requests, while shutting the base down ends both.
    public func with(_ adjust: (inout Configuration) -> Void) -> HTTPClient {
        let root = self.base ?? self
        var configuration = self.configuration
        adjust(&configuration)
        let pools = root.configuration
        configuration.threads = pools.threads
        configuration.maxConnectionsPerHost = pools.maxConnectionsPerHost
        configuration.pipeliningDepth = pools.pipeliningDepth
        configuration.idleTimeout = pools.idleTimeout
        configuration.connectTimeout = pools.connectTimeout
        configuration.poolWaitTimeout = pools.poolWaitTimeout
        configuration.headLimits = pools.headLimits
        configuration.tls = pools.tls
        configuration.nameResolution = pools.nameResolution
        configuration.observer = pools.observer
        return HTTPClient(deriving: root, configuration: configuration)
    }
}
