extension HTTPClient {
    /// One client for the whole process, for code that has no client of its own to hand: made
    /// on first use with the default configuration (loops per core, TLS verified against the
    /// system's roots, redirects followed, gzip decoded), the same engine the typed layer's
    /// `Client` uses when given no transport.
    ///
    /// ```swift
    /// let response = try await HTTPClient.shared.execute(HTTPRequest(method: .get, url: "https://example.com/"))
    /// ```
    ///
    /// Its life is the process's: ``shutdown()`` does nothing to it (other code may be using
    /// it), and a process may exit at any time, requests in flight included — its loop threads
    /// end with the process, nothing is written after `exit`. Clients you make yourself are
    /// yours to shut down.
    ///
    /// - Throws: the error that kept it from starting (no threads to be had, no TLS library),
    ///   the same every time: a process without a shared client never crashes for it.
    public static var shared: HTTPClient {
        get throws(TransportError) { try SharedClient.made.get() }
    }
}

/// The shared client, made once.
private enum SharedClient {
    static let made: Result<HTTPClient, TransportError> = Result { () throws(TransportError) in
        try HTTPClient(sharedWith: HTTPClient.Configuration())
    }
}
