import SalvoTransport
extension HTTPClient {
    /// Settings for one request that override the client's ``Configuration``. Every field
    /// left nil takes the client's value.
    ///
    /// ```swift
    /// var options = HTTPClient.RequestOptions(timeout: .seconds(5))
    /// options.tls = pinnedTLS   // this request only; its connections are pooled apart
    /// let response = try await client.execute(request, options: options)
    /// ```
    public struct RequestOptions: Sendable {
        /// Deadline for the whole exchange, from the call to the last body byte.
        public var timeout: Duration?
        /// An absolute end for the whole exchange; the earlier of it and ``timeout`` applies.
        public var deadline: ContinuousClock.Instant?
        /// From the call until the response head has arrived: queueing, connecting, sending
        /// and the server's think time. Fails with `.headTimeout`. Unlike ``timeout`` it
        /// stops counting at the head, so it suits a long stream.
        public var headTimeout: Duration?
        /// The longest the server may stay silent while the response is due or arriving
        /// (the client's ``HTTPClient/Configuration/readTimeout`` when nil).
        public var readTimeout: Duration?
        /// Largest body the collecting APIs accept.
        public var maxBodySize: Int?
        /// TLS for this request. Connections made under one TLS configuration are never
        /// reused for a request under another.
        public var tls: TLSConfiguration?
        /// Whether and how far this request follows redirects.
        public var redirects: RedirectPolicy?
        /// Whether this response is decoded from gzip or deflate, and within what bounds.
        public var decompression: Decompression?

        public init(timeout: Duration? = nil, maxBodySize: Int? = nil, tls: TLSConfiguration? = nil,
                    redirects: RedirectPolicy? = nil, decompression: Decompression? = nil,
                    deadline: ContinuousClock.Instant? = nil, headTimeout: Duration? = nil, readTimeout: Duration? = nil) {
            self.timeout = timeout
            self.deadline = deadline
            self.headTimeout = headTimeout
            self.readTimeout = readTimeout
            self.maxBodySize = maxBodySize
            self.tls = tls
            self.redirects = redirects
            self.decompression = decompression
        }
    }
}
