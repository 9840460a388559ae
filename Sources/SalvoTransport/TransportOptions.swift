/// The bounds on one request's time, as every transport takes them: the one options value
/// that crosses the seam. The typed layer's call options and the engine's request options
/// each carry one (`options.transport`) and add only what is their own, so a call's timeouts
/// reach the engine as they were given, converted nowhere.
///
/// Timeouts combine: the earliest of ``timeout`` (from the call) and ``deadline`` ends the
/// whole exchange, body included; ``headTimeout`` bounds the wait for the response head
/// alone (a long stream needs one without a total timeout); ``readTimeout`` bounds each
/// silence of the server, ``writeTimeout`` each time it takes none of the request's bytes.
/// Nil leaves a bound to the transport (the engine bounds the head and each silence at
/// 300 s by default). A duration of zero (or less) is no bound at all, as curl's `-m 0`: for
/// the head, read or write timeout it turns the transport's bound off for this request (a
/// long poll, an event stream without heartbeats). A ``deadline`` already past has passed.
///
/// ```swift
/// var options = TransportOptions(timeout: .seconds(30))
/// options.readTimeout = .seconds(5)
/// let response = try await transport.send(request, body: nil, options: options)
/// ```
public struct TransportOptions: Sendable, Hashable {
    /// The whole exchange, from the call to the last body byte.
    public var timeout: Duration?
    /// An absolute end for the whole exchange (a deadline shared by several calls).
    public var deadline: ContinuousClock.Instant?
    /// From the call until the response head has arrived (queue, connect and send included).
    public var headTimeout: Duration?
    /// The longest the server may stay silent while a response is awaited or read.
    public var readTimeout: Duration?
    /// The longest the server may take none of the request's bytes while they are due.
    public var writeTimeout: Duration?

    public init(timeout: Duration? = nil, deadline: ContinuousClock.Instant? = nil, headTimeout: Duration? = nil,
                readTimeout: Duration? = nil, writeTimeout: Duration? = nil) {
        self.timeout = timeout
        self.deadline = deadline
        self.headTimeout = headTimeout
        self.readTimeout = readTimeout
        self.writeTimeout = writeTimeout
    }

    /// The earlier of ``timeout`` and ``deadline``, as a duration from now (zero: the deadline
    /// has passed; nil: no end).
    public var effectiveTimeout: Duration? {
        let timeout = Self.bound(self.timeout)
        guard let deadline = self.deadline else { return timeout }
        let remaining = max(.zero, deadline - .now)
        return timeout.map { min($0, remaining) } ?? remaining
    }

    /// A bound given as a duration, as every layer reads it: nil and zero (or less) are none.
    package static func bound(_ duration: Duration?) -> Duration? {
        guard let duration, duration > .zero else { return nil }
        return duration
    }

    /// When the exchange's time is up, counted from `start`: the earlier of ``deadline`` and
    /// ``timeout`` (nil: never). A timeout past any clock's range (a century) is no end
    /// rather than an overflow.
    public func end(from start: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let byTimeout = Self.bound(self.timeout).flatMap { $0 < .seconds(100 * 365 * 86_400) ? start + $0 : nil }
        switch (self.deadline, byTimeout) {
        case let (deadline?, timeout?): return min(deadline, timeout)
        case let (deadline, timeout): return deadline ?? timeout
        }
    }

    /// These options with ``timeout`` turned into the ``deadline`` it makes from `start`: what
    /// a policy that spends the call's time over several steps (retries, a wait for a token)
    /// hands on, so that every step ends by the same instant.
    public func anchored(at start: ContinuousClock.Instant) -> TransportOptions {
        var anchored = self
        anchored.deadline = self.end(from: start)
        anchored.timeout = nil
        return anchored
    }
}

/// Options that carry a ``TransportOptions`` value — the typed layer's `Client.CallOptions`,
/// the engine's `HTTPClient.RequestOptions` — and read and write its bounds as their own.
public protocol TransportOptionsCarrying {
    /// The bounds on the request's time, handed to a transport as they are.
    var transport: TransportOptions { get set }
}

extension TransportOptionsCarrying {
    /// The whole exchange, from the call to the last body byte.
    public var timeout: Duration? {
        get { self.transport.timeout }
        set { self.transport.timeout = newValue }
    }
    /// An absolute end for the whole exchange (shared by several calls); the earlier of it and
    /// ``timeout`` applies.
    public var deadline: ContinuousClock.Instant? {
        get { self.transport.deadline }
        set { self.transport.deadline = newValue }
    }
    /// From the call until the response head has arrived: queueing, connecting, sending and
    /// the server's think time (fails with `.headTimeout`), and never sooner than this after
    /// the request's last byte went out (a long upload is not cut). Unlike ``timeout`` it
    /// stops at the head, so it suits a long stream. Nil: the transport's bound (the engine's
    /// `Configuration.headTimeout`, 300 s by default); `.zero`: none for this request.
    public var headTimeout: Duration? {
        get { self.transport.headTimeout }
        set { self.transport.headTimeout = newValue }
    }
    /// The longest the server may stay silent while the response is due or arriving (fails
    /// with `.readTimeout`). Nil: the transport's bound (the engine's
    /// `Configuration.readTimeout`, 300 s by default); `.zero`: none for this request — an
    /// event stream without heartbeats, a long poll.
    public var readTimeout: Duration? {
        get { self.transport.readTimeout }
        set { self.transport.readTimeout = newValue }
    }
    /// The longest the server may take none of the request's bytes while they are due (an
    /// upload to a server that stopped reading; fails with `.writeTimeout`). Nil: the
    /// transport's bound (none by default in the engine); `.zero`: none for this request.
    public var writeTimeout: Duration? {
        get { self.transport.writeTimeout }
        set { self.transport.writeTimeout = newValue }
    }
}
