extension Client {
    /// Cancels the call made with `id` (``CallOptions/id``), from any thread: it ends with
    /// `.cancelled`. A call not made yet is refused with `.cancelled` when it comes (the last
    /// 1024 such ids are remembered); nothing happens for a call that is over (one of the
    /// last 1024 to end), so a late cancel does not refuse a later call that reuses its id.
    ///
    /// ```swift
    /// let id = RequestID()
    /// Task { try await client.value(Endpoint<Report>.get("/reports/slow"), options: .init(id: id)) }
    /// client.cancel(id)
    /// ```
    ///
    /// A call made without an id is cancelled with its task (or its ``CallHandle``). A
    /// stream (`stream`, `events`) can be cancelled by id until its response head comes; its
    /// body is then the caller's, cancelled with ``StreamingResponse/cancel()`` or its task.
    /// A `download` can be cancelled by id until its file is in place.
    public func cancel(_ id: RequestID) {
        self.calls.cancel(id)
    }

    /// Cancels every call running now that was made with an id.
    public func cancelAll() {
        self.calls.cancelAll()
    }

    /// The ids of the calls running now that were made with one.
    public var callsInFlight: [RequestID] {
        self.calls.inFlight
    }
}
