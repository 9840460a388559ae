import Foundation
import HTTPTypes
import Logging

/// Where requests built with the builder DSL go — a base URL — and what happens around each of
/// them: a hook before it is sent, a hook after its response came, a logger. The SwiftyNetworking
/// shape:
///
/// ```swift
/// struct Backend: Service {
///     var baseURL: URL { URL(string: "https://api.example.com")! }
///     let logger = Logger(label: "backend")            // each request and its outcome, at info
///
///     func beforeEach(_ request: ClientRequest) -> ClientRequest {
///         request.headers { X_Api_Key(value: "secret_token") }
///     }
///
///     func afterEach(_ response: ClientResponse) -> ClientResponse {
///         statistics.record(response.head.status.code)
///         return response
///     }
/// }
/// ```
///
/// The hooks run for every request built `from:` the service, inside the client that sends it
/// (before the client's own middleware). `beforeEach` may change the request or throw to refuse
/// it (the caller gets `.middlewareFailed`, or the error itself when it is a ``ClientError``);
/// `afterEach` sees every response — any status — and may change it or throw; a request that
/// got no response (a transport failure) reaches the caller as its error without `afterEach`.
public protocol Service: Sendable {
    /// The base URL of the service's requests; the client's own base URL is not used for them.
    var baseURL: URL { get }

    /// Called with each request before it is sent; returns the request to send. By default the
    /// request as it is.
    func beforeEach(_ request: ClientRequest) async throws -> ClientRequest

    /// Called with each response before the caller gets it; returns the response to hand on.
    /// By default the response as it is.
    func afterEach(_ response: ClientResponse) async throws -> ClientResponse

    /// Where the service's requests are logged (``LoggingMiddleware``, at info). By default a
    /// logger that writes nothing.
    var logger: Logger { get }
}

extension Service {
    public func beforeEach(_ request: ClientRequest) async throws -> ClientRequest { request }
    public func afterEach(_ response: ClientResponse) async throws -> ClientResponse { response }
    public var logger: Logger { Logger(label: "salvo.service", factory: { _ in SwiftLogNoOpLogHandler() }) }
}

/// A service's hooks and logger as the middleware of each request built from it.
struct ServiceHooks: Middleware {
    let service: any Service

    func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        var request = request
        do {
            request = try await self.service.beforeEach(request)
        } catch {
            throw ClientError.middleware(error, in: "beforeEach")
        }
        if let name = request.metadata[InvalidHeaderName.self] {
            throw ClientError(.invalidRequest, detail: "\"\(name)\" is not a header field name")
        }
        let logger = self.service.logger
        let response: ClientResponse
        if logger.handler is SwiftLogNoOpLogHandler {
            response = try await next(request)
        } else {
            response = try await LoggingMiddleware(logger: logger).intercept(request, next: next)
        }
        do {
            return try await self.service.afterEach(response)
        } catch {
            throw ClientError.middleware(error, in: "afterEach")
        }
    }
}

/// A header name a builder was given that HTTP does not allow: the send fails with it.
enum InvalidHeaderName: RequestMetadataKey {
    typealias Value = String
}

extension ClientRequest {
    /// This request with more header fields, as the builder's `.headers { … }` writes them: for
    /// a service's `beforeEach`. A name given again replaces the earlier value; a name HTTP does
    /// not allow fails the request with `.invalidRequest`.
    public func headers(@HeaderBuilder _ fields: () -> [HeaderEntry]) -> ClientRequest {
        var copy = self
        for entry in fields() {
            switch entry {
            case .field(let field): copy.head.headerFields[field.name] = field.value
            case .invalidName(let name): copy.metadata[InvalidHeaderName.self] = copy.metadata[InvalidHeaderName.self] ?? name
            }
        }
        return copy
    }
}

extension ClientResponse {
    /// The status code, as a number.
    public var statusCode: Int { self.head.status.code }
}
