import Observation
import Synchronization

/// What a client is doing, observable: the calls in flight, and how many ended with a
/// response or without one.
/// Give one to ``Client/Configuration/activity`` and watch it with Observation (the Linux
/// stand-in for an `ObservableObject` client in SwiftUI).
///
/// ```swift
/// let activity = ClientActivity()
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(activity: activity))
/// withObservationTracking {
///     _ = activity.inFlightCount
/// } onChange: {
///     print("calls in flight changed")
/// }
/// ```
///
/// Safe to read from any thread; its changes are made on the tasks that run the calls, so
/// an observer that updates a UI hops to its own actor.
public final class ClientActivity: Observable, Sendable {
    /// One call in flight.
    public struct Call: Sendable, Hashable, Identifiable {
        public let id: UInt64
        /// The request's operation name (``Request/operationName``).
        public let operationName: String
        public let method: HTTPRequest.Method
        /// The request's path, with its query.
        public let path: String
        public let startedAt: ContinuousClock.Instant
    }

    private struct State {
        var nextID: UInt64 = 0
        var inFlight: [UInt64: Call] = [:]
        var succeeded = 0
        var failed = 0
    }

    private let registrar = ObservationRegistrar()
    private let state = Mutex(State())

    public init() {}

    /// The calls in flight, oldest first.
    public var inFlight: [Call] {
        self.registrar.access(self, keyPath: \.inFlight)
        return self.state.withLock { $0.inFlight.values.sorted { $0.id < $1.id } }
    }

    /// How many calls are in flight.
    public var inFlightCount: Int {
        self.registrar.access(self, keyPath: \.inFlight)
        return self.state.withLock { $0.inFlight.count }
    }

    /// Whether any call is in flight (a spinner's condition).
    public var isBusy: Bool { self.inFlightCount > 0 }

    /// Calls that ended with a response, whatever its status (for a stream: whose head came).
    public var completedCount: Int {
        self.registrar.access(self, keyPath: \.completedCount)
        return self.state.withLock { $0.succeeded }
    }

    /// Calls that ended without a response: a transport failure, a timeout, cancellation.
    public var failedCount: Int {
        self.registrar.access(self, keyPath: \.failedCount)
        return self.state.withLock { $0.failed }
    }

    func begin(_ operationName: String, _ head: HTTPRequest) -> UInt64 {
        self.registrar.withMutation(of: self, keyPath: \.inFlight) {
            self.state.withLock { state in
                state.nextID += 1
                state.inFlight[state.nextID] = Call(id: state.nextID, operationName: operationName, method: head.method,
                                                    path: head.path ?? "/", startedAt: .now)
                return state.nextID
            }
        }
    }

    func end(_ id: UInt64, succeeded: Bool) {
        self.registrar.withMutation(of: self, keyPath: \.inFlight) {
            self.state.withLock { _ = $0.inFlight.removeValue(forKey: id) }
        }
        if succeeded {
            self.registrar.withMutation(of: self, keyPath: \.completedCount) { self.state.withLock { $0.succeeded += 1 } }
        } else {
            self.registrar.withMutation(of: self, keyPath: \.failedCount) { self.state.withLock { $0.failed += 1 } }
        }
    }
}

extension Client {
    /// Runs `call` as one call in the client's activity view, if it has one.
    @inline(__always)
    func tracked<T>(_ operationName: String, _ head: HTTPRequest, _ call: () async throws(ClientError) -> T) async throws(ClientError) -> T {
        guard let activity = self.configuration.activity else { return try await call() }
        let id = activity.begin(operationName, head)
        do {
            let result = try await call()
            activity.end(id, succeeded: true)
            return result
        } catch {
            activity.end(id, succeeded: false)
            throw error
        }
    }
}
