public import CoreMetrics
public import HTTPTypes
public import Logging
public import SalvoCore
public import Tracing
import Synchronization

/// Logs, metrics and traces of Salvo's engine through swift-log, swift-metrics and
/// swift-distributed-tracing: set it as the engine's observer, each part only if you want it.
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// configuration.observer = Observability(
///     logger: Logger(label: "http-client"),          // connections opened, closed, reused… at debug
///     metrics: MetricsSystem.factory,                // the backend the application bootstrapped
///     tracer: InstrumentationSystem.tracer)          // a client span per request, context injected
/// let client = try HTTPClient(configuration: configuration)
/// ```
///
/// A client without an observer spends nothing on any of it. With one, metric handles are made
/// once per host on each event loop; a request costs the handles' own work, a log line only at
/// the logger's level (nothing at info: the engine's events are debug), and a span when a tracer
/// is given.
public struct Observability: EngineObserver {
    /// Where connection events are logged, at debug; nil logs nothing.
    public var logger: Logger?
    /// Where the metrics go; nil records none.
    public var metrics: (any MetricsFactory)?
    /// What makes the requests' spans; nil makes none.
    public var tracer: (any Tracer)?

    public init(logger: Logger? = nil, metrics: (any MetricsFactory)? = nil, tracer: (any Tracer)? = nil) {
        self.logger = logger
        self.metrics = metrics
        self.tracer = tracer
    }

    public func hostObserver(scheme: String, host: String, port: Int) -> any HostObserver {
        HostEvents(scheme: scheme, host: host, port: port, logger: self.logger, metrics: self.metrics)
    }

    public func requestStarting(_ request: inout HTTPRequest) -> (any RequestObservation)? {
        guard let tracer = self.tracer else { return nil }
        return RequestSpan.start(&request, tracer: tracer)
    }
}

/// The metric names, with their dimensions `server.address`, `server.port` and `url.scheme`
/// (and `http.response.status_class` or `closed_by` where said).
public enum ObservabilityMetrics {
    /// Counter: connections made.
    public static let connectionsOpened = "salvo.http.client.connections.opened"
    /// Counter, by `closed_by` (`client` or `server`): connections closed.
    public static let connectionsClosed = "salvo.http.client.connections.closed"
    /// Meter: connections open now.
    public static let connectionsOpen = "salvo.http.client.connections.open"
    /// Meter: open connections idle now.
    public static let connectionsIdle = "salvo.http.client.connections.idle"
    /// Meter: requests waiting for a connection now.
    public static let requestsQueued = "salvo.http.client.requests.queued"
    /// Counter: requests sent on a connection that had carried an earlier one.
    public static let connectionsReused = "salvo.http.client.connections.reused"
    /// Counter: TLS handshakes that resumed an earlier session.
    public static let tlsResumed = "salvo.http.client.tls.resumed"
    /// Counter: requests sent again after their connection failed before any answer.
    public static let requestsRetried = "salvo.http.client.requests.retried"
    /// Timer, by `http.response.status_class` (`2xx`…): from the call to the end of the
    /// response, each response of a redirect chain apart.
    public static let requestDuration = "salvo.http.client.request.duration"
}

/// One host's events on one loop: its metric handles, made once.
final class HostEvents: HostObserver {
    let host: String
    let port: Int
    let logger: Logger?
    let handles: Handles?
    /// What this loop last added to the idle and queued meters (every loop adds its own share).
    private let shares = Mutex((idle: 0, queued: 0))

    struct Handles {
        let opened: Counter
        let closedByClient: Counter
        let closedByServer: Counter
        let open: Meter
        let idle: Meter
        let queued: Meter
        let reused: Counter
        let tlsResumed: Counter
        let retried: Counter
        /// By status class: 1xx to 5xx, and anything else.
        let durations: [CoreMetrics.Timer]
    }

    init(scheme: String, host: String, port: Int, logger: Logger?, metrics: (any MetricsFactory)?) {
        self.host = host
        self.port = port
        self.logger = logger
        self.handles = metrics.map { factory in
            let dimensions = [("server.address", host), ("server.port", String(port)), ("url.scheme", scheme)]
            return Handles(
                opened: Counter(label: ObservabilityMetrics.connectionsOpened, dimensions: dimensions, factory: factory),
                closedByClient: Counter(label: ObservabilityMetrics.connectionsClosed, dimensions: dimensions + [("closed_by", "client")], factory: factory),
                closedByServer: Counter(label: ObservabilityMetrics.connectionsClosed, dimensions: dimensions + [("closed_by", "server")], factory: factory),
                open: Meter(label: ObservabilityMetrics.connectionsOpen, dimensions: dimensions, factory: factory),
                idle: Meter(label: ObservabilityMetrics.connectionsIdle, dimensions: dimensions, factory: factory),
                queued: Meter(label: ObservabilityMetrics.requestsQueued, dimensions: dimensions, factory: factory),
                reused: Counter(label: ObservabilityMetrics.connectionsReused, dimensions: dimensions, factory: factory),
                tlsResumed: Counter(label: ObservabilityMetrics.tlsResumed, dimensions: dimensions, factory: factory),
                retried: Counter(label: ObservabilityMetrics.requestsRetried, dimensions: dimensions, factory: factory),
                durations: ["1xx", "2xx", "3xx", "4xx", "5xx", "other"].map { statusClass in
                    CoreMetrics.Timer(label: ObservabilityMetrics.requestDuration,
                                      dimensions: dimensions + [("http.response.status_class", statusClass)], factory: factory)
                })
        }
    }

    func connectionOpened(id: Int, resumedTLS: Bool) {
        self.handles?.opened.increment()
        self.handles?.open.increment()
        if resumedTLS { self.handles?.tlsResumed.increment() }
        self.logger?.debug("connection opened", metadata: self.metadata(id, ["tls.resumed": "\(resumedTLS)"]))
    }

    func connectionClosed(id: Int, byServer: Bool) {
        if let handles = self.handles {
            (byServer ? handles.closedByServer : handles.closedByClient).increment()
            handles.open.decrement()
        }
        self.logger?.debug("connection closed", metadata: self.metadata(id, ["closed_by": byServer ? "server" : "client"]))
    }

    func connectionReused() {
        self.handles?.reused.increment()
        self.logger?.debug("connection reused", metadata: ["server.address": "\(self.host)", "server.port": "\(self.port)"])
    }

    func requestEnded(status: Int, duration: Duration) {
        guard let handles = self.handles else { return }
        let index = (100..<600).contains(status) ? status / 100 - 1 : 5
        handles.durations[index].recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    func poolChanged(idle: Int, queued: Int) {
        guard let handles = self.handles else { return }
        // Called on one loop only; the lock is uncontended and keeps the type Sendable.
        let (idleDelta, queuedDelta) = self.shares.withLock { last in
            defer { last = (idle, queued) }
            return (idle - last.idle, queued - last.queued)
        }
        Self.move(handles.idle, by: idleDelta)
        Self.move(handles.queued, by: queuedDelta)
    }

    /// A meter up or down by `delta` (its increment takes no negative amounts).
    private static func move(_ meter: Meter, by delta: Int) {
        if delta > 0 { meter.increment(by: Double(delta)) } else if delta < 0 { meter.decrement(by: Double(-delta)) }
    }

    func requestRetried() {
        self.handles?.retried.increment()
        self.logger?.debug("request sent again on a new connection", metadata: ["server.address": "\(self.host)", "server.port": "\(self.port)"])
    }

    private func metadata(_ id: Int, _ more: Logger.Metadata) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["server.address": "\(self.host)", "server.port": "\(self.port)", "connection.id": "\(id)"]
        metadata.merge(more) { _, new in new }
        return metadata
    }
}
