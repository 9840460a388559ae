public import HTTPTypes

/// What the engine tells an application that asks to watch it: logs, metrics, traces. The
/// engine calls it only when ``HTTPClient/Configuration/observer`` is set, so a client without
/// one pays nothing; `SalvoObservability` implements it with swift-log, swift-metrics and
/// swift-distributed-tracing.
///
/// Per host and loop the engine asks once for a ``HostObserver`` and keeps it, so that an
/// implementation makes its metric handles once, not per request. Per request it calls
/// ``requestStarting(_:)`` where the call begins (on the caller's thread, in its task), which
/// may add fields to the request (a trace's `traceparent`) and returns what hears its end.
public protocol EngineObserver: Sendable {
    /// The observer of one host's connections and requests on one event loop; called on that
    /// loop, once per host (kept for the loop's life, a bounded number of hosts).
    func hostObserver(scheme: String, host: String, port: Int) -> any HostObserver

    /// A request begins: the observer may add header fields to `request`, and returns what
    /// hears how the request ended (nil: nothing to hear).
    func requestStarting(_ request: inout HTTPRequest) -> (any RequestObservation)?
}

/// One host's events on one event loop, called on that loop's thread (never concurrently).
public protocol HostObserver: AnyObject, Sendable {
    /// A connection was made (`resumedTLS`: its TLS handshake resumed an earlier session).
    func connectionOpened(id: Int, resumedTLS: Bool)
    /// A connection closed; `byServer`: the server closed it or asked to.
    func connectionClosed(id: Int, byServer: Bool)
    /// A request went out on a connection that had carried an earlier one.
    func connectionReused()
    /// A response ended whole: its status and the time from the start of the call.
    func requestEnded(status: Int, duration: Duration)
    /// A request was sent again on another connection, its first never answered.
    func requestRetried()
    /// The host's idle connections and requests waiting for one, on this loop, changed.
    func poolChanged(idle: Int, queued: Int)
}

/// The end of one request, heard once: its response head, or why it failed.
public protocol RequestObservation: Sendable {
    func ended(_ result: Result<HTTPResponse, TransportError>)
}
