import Synchronization

/// Identical GETs in flight at the same time share one exchange: the first goes to the
/// server, the others wait for its response, and every caller gets it (with a body of its
/// own). Opt-in.
///
/// ```swift
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(middleware: [RequestCoalescing()]))
/// async let a = client.value(Endpoint<Config>.get("/config"))
/// async let b = client.value(Endpoint<Config>.get("/config"))   // no second request
/// ```
///
/// Identical means the same method (GET or HEAD), URL and header fields, no body, and a
/// collected call (streams are never shared). A caller that is cancelled stops waiting at
/// once; the shared exchange is cancelled only when every caller waiting for it is. The
/// exchange runs with the options of the call that started it; a caller that joins it keeps
/// its own deadline (its wait ends with `.totalTimeout` when that comes first).
public final class RequestCoalescing: Middleware {
    private struct Shared: Sendable {
        var response: ClientResponse
        var body: [UInt8]
    }

    private typealias Flight = SharedWork<Shared>

    private let flights = Mutex<[String: Flight]>([:])

    public init() {}

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let method = request.head.method
        guard method == .get || method == .head, request.body == nil, !request.isStreaming else { return try await next(request) }
        let key = Self.key(of: request)
        let (flight, leads) = self.flights.withLock { flights -> (Flight, Bool) in
            if let flight = flights[key] { return (flight, false) }
            let flight = Flight(cancellation: ClientError(.cancelled, detail: "cancelled while waiting for an identical request"),
                                stopsWhenAbandoned: true)
            flights[key] = flight
            return (flight, true)
        }
        if leads {
            flight.start { [weak self] () async -> Result<Shared, ClientError> in
                let outcome: Result<Shared, ClientError>
                do throws(ClientError) {
                    var response = try await next(request)
                    let body = try await response.collectedBytes(limit: request.options.maxBodySize)
                    outcome = .success(Shared(response: response, body: body))
                } catch {
                    outcome = .failure(error)
                }
                // Later identical requests start afresh.
                self?.flights.withLock { flights in
                    if flights[key] === flight { flights[key] = nil }
                }
                return outcome
            }
        }
        // A follower's wait ends with its own deadline (the exchange runs on the leader's).
        let outcome = leads ? await flight.wait()
            : await flight.wait(until: Self.end(of: request.options),
                                timeout: ClientError.transport(TransportError(.totalTimeout, detail: "waiting for an identical request in flight")))
        if case .failure(let error) = outcome, error.code == .cancelled, !leads, !Task.isCancelled {
            // The shared exchange was cancelled — its leader's call, or every caller, gave
            // up — but this caller did not: it goes alone.
            return try await next(request)
        }
        let shared = try outcome.get()
        var response = shared.response
        response.setCollectedBody(shared.body)
        return response
    }

    /// When a call's own time is up: the earlier of its deadline and its timeout from now.
    private static func end(of options: Client.CallOptions) -> ContinuousClock.Instant? {
        options.transport.end(from: .now)
    }

    /// How many callers wait for an exchange in flight, all flights together (for tests:
    /// what a caller joined is known without guessing at timing).
    var callersWaiting: Int {
        self.flights.withLock { flights in flights.values.reduce(0) { $0 + $1.waiting } }
    }

    private static func key(of request: ClientRequest) -> String {
        let fields = request.head.headerFields.map { "\($0.name.canonicalName): \($0.value)" }.sorted()
        // Tags change what other middleware do (no-auth, login): only alike requests share.
        let tags = request.metadata.tags.sorted().map { "tag \($0)" }
        return ([request.head.method.rawValue, request.url] + fields + tags).joined(separator: "\n")
    }
}
