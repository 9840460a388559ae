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
                    redirects: RedirectPolicy? = nil, decompression: Decompression? = nil) {
            self.timeout = timeout
            self.maxBodySize = maxBodySize
            self.tls = tls
            self.redirects = redirects
            self.decompression = decompression
        }
    }
}
