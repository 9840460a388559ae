/// Typed values that travel with a request for middleware to read: an endpoint's tags, or
/// anything a policy needs to know about one call.
///
/// ```swift
/// enum Audience: RequestMetadataKey { typealias Value = String }
///
/// let report = Endpoint<Report>.get("/reports/today").tagged("reports").with(Audience.self, "finance")
/// // in a middleware:
/// if request.metadata.tags.contains("reports"), request.metadata[Audience.self] == "finance" { … }
/// ```
public struct RequestMetadata: Sendable {
    private var values: [ObjectIdentifier: any Sendable] = [:]
    /// Free-form labels (`"reports"`, `"no-auth"`), for middleware that applies to some requests.
    public var tags: Set<String> = []

    public init(tags: Set<String> = []) {
        self.tags = tags
    }

    /// The value stored under `key`, if any.
    public subscript<Key: RequestMetadataKey>(_ key: Key.Type) -> Key.Value? {
        get { self.values[ObjectIdentifier(key)] as? Key.Value }
        set { self.values[ObjectIdentifier(key)] = newValue }
    }

    /// Whether nothing is stored.
    public var isEmpty: Bool { self.values.isEmpty && self.tags.isEmpty }
}

/// A key for a value in ``RequestMetadata``: a type, so that keys of different modules never
/// collide and each value has its own type.
public protocol RequestMetadataKey {
    associatedtype Value: Sendable
}

/// Middleware for one request alone, run before the client's own (outermost first): what a
/// built request's ``Service`` hooks and logger become.
///
/// ```swift
/// let traced = Endpoint<User>.get("/me").with(RequestMiddleware.self, [CallHooks(beforeEach: { request in … })])
/// ```
public enum RequestMiddleware: RequestMetadataKey {
    public typealias Value = [any Middleware]
}

/// What answers a request in place of the client's transport (a built request's `.mocked`):
/// the client's middleware still run, then this instead of the network.
enum StandInTransport: RequestMetadataKey {
    typealias Value = @Sendable (ClientRequest) async throws(ClientError) -> ClientResponse
}

extension RequestMetadata {
    /// Whether the request brings middleware of its own or a stand-in for the transport: then
    /// it takes a chain built for it.
    var routesOnItsOwn: Bool {
        !self.isEmpty && (self[RequestMiddleware.self] != nil || self[StandInTransport.self] != nil)
    }
}

/// A request's own timeout (``TypedEndpoint/timeout(_:)``), between the call's and the client's:
/// `options.timeout ?? endpoint's ?? configuration.timeout`.
public enum RequestTimeout: RequestMetadataKey {
    public typealias Value = Duration
}

extension Client.CallOptions {
    /// These options with the request's own timeout when the call gives none.
    func withTimeout(of metadata: RequestMetadata) -> Self {
        guard self.timeout == nil, let own = metadata[RequestTimeout.self] else { return self }
        var options = self
        options.timeout = own
        return options
    }
}
