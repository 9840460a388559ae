/// A middleware written as a closure, for one-liners:
///
/// ```swift
/// let timing = InterceptMiddleware { request, next in
///     let start = ContinuousClock.now
///     defer { print(request.operationName, ContinuousClock.now - start) }
///     return try await next(request)
/// }
/// ```
///
/// An error the closure throws that is not a ``ClientError`` fails the call as
/// `.middlewareFailed`, the error kept in ``ClientError/underlyingError``.
public struct InterceptMiddleware: Middleware {
    let name: String
    let body: @Sendable (ClientRequest, MiddlewareNext) async throws -> ClientResponse

    public init(_ name: String = "intercept", _ body: @escaping @Sendable (ClientRequest, MiddlewareNext) async throws -> ClientResponse) {
        self.name = name
        self.body = body
    }

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        do {
            return try await self.body(request, next)
        } catch {
            throw ClientError.middleware(error, in: self.name)
        }
    }
}

/// A middleware that changes every request before it goes on — a header, a query item, a
/// signature:
///
/// ```swift
/// let signed = RequestModifier { request in
///     request.head.headerFields[HTTPField.Name("X-Client")!] = "reports/2.1"
/// }
/// ```
public struct RequestModifier: Middleware {
    let name: String
    let modify: @Sendable (inout ClientRequest) async throws -> Void

    public init(_ name: String = "modify requests", _ modify: @escaping @Sendable (inout ClientRequest) async throws -> Void) {
        self.name = name
        self.modify = modify
    }

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        var request = request
        do {
            try await self.modify(&request)
        } catch {
            throw ClientError.middleware(error, in: self.name)
        }
        return try await next(request)
    }
}
