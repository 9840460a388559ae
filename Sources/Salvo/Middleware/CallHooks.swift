/// Code run before each request and after each outcome of a client — the "before each /
/// after each" of a service (004), as a middleware.
///
/// ```swift
/// let hooks = CallHooks(beforeEach: { request in
///     request.head.headerFields[HTTPField.Name("X-Api-Key")!] = apiKey
/// }, afterEach: { request, result in
///     if case .failure(let error) = result { metrics.failed(request.operationName, error.code) }
/// })
/// let client = try Client(baseURL: "https://api.example.com", configuration: .init(middleware: [hooks]))
/// ```
///
/// `beforeEach` may change the request or throw to refuse it (the caller gets the error as
/// `.middlewareFailed`, or as it is for a ``ClientError``); `afterEach` hears every outcome,
/// the error included, and cannot change it.
public struct CallHooks: Middleware {
    let beforeEach: (@Sendable (inout ClientRequest) async throws -> Void)?
    let afterEach: (@Sendable (ClientRequest, Result<ClientResponse, ClientError>) async -> Void)?

    public init(beforeEach: (@Sendable (inout ClientRequest) async throws -> Void)? = nil,
                afterEach: (@Sendable (ClientRequest, Result<ClientResponse, ClientError>) async -> Void)? = nil) {
        self.beforeEach = beforeEach
        self.afterEach = afterEach
    }

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        var request = request
        if let beforeEach = self.beforeEach {
            do {
                try await beforeEach(&request)
            } catch {
                let refused = ClientError.middleware(error, in: "beforeEach")
                await self.afterEach?(request, .failure(refused))
                throw refused
            }
        }
        let result: Result<ClientResponse, ClientError>
        do {
            result = .success(try await next(request))
        } catch {
            result = .failure(error)
        }
        await self.afterEach?(request, result)
        return try result.get()
    }
}
