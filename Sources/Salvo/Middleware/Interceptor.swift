/// A middleware written as four hooks — adapt the request, rescue an error, adapt the
/// response, hear the result — for those who think of interceptors that way (003). Implement
/// the hooks you need; the others pass things through.
///
/// ```swift
/// struct Session: Interceptor {
///     let tokens: TokenBox
///     func adaptRequest(_ request: ClientRequest) async throws -> ClientRequest {
///         var request = request
///         request.head.headerFields[.authorization] = "Bearer \(await tokens.current)"
///         return request
///     }
///     func rescue(_ error: ClientError, for request: ClientRequest, attempt: Int) async -> Bool {
///         guard error.status == .unauthorized, attempt == 1 else { return false }
///         await tokens.renew()
///         return true   // send it again, adapted anew
///     }
/// }
/// ```
///
/// Order: `adaptRequest`, the rest of the chain, then `adaptResponse` on a response, or
/// `rescue` on an error — a 4xx or 5xx of a collected call counts as an error here, with the
/// response in it —
/// which may send the request again (adapted anew) up to ``maxAttempts`` in all, and never
/// once the call's deadline has passed (every attempt spends the call's one timeout); finally
/// `receivedResponse` with the outcome the caller gets.
public protocol Interceptor: Middleware {
    /// Attempts in all when `rescue` asks for more (default 3).
    var maxAttempts: Int { get }
    func adaptRequest(_ request: ClientRequest) async throws -> ClientRequest
    /// Whether to send the request again after `error` (attempt 1 is the first).
    func rescue(_ error: ClientError, for request: ClientRequest, attempt: Int) async -> Bool
    func adaptResponse(_ response: ClientResponse, for request: ClientRequest) async throws -> ClientResponse
    func receivedResponse(_ result: Result<ClientResponse, ClientError>, for request: ClientRequest) async
}

extension Interceptor {
    public var maxAttempts: Int { 3 }
    public func adaptRequest(_ request: ClientRequest) async throws -> ClientRequest { request }
    public func rescue(_ error: ClientError, for request: ClientRequest, attempt: Int) async -> Bool { false }
    public func adaptResponse(_ response: ClientResponse, for request: ClientRequest) async throws -> ClientResponse { response }
    public func receivedResponse(_ result: Result<ClientResponse, ClientError>, for request: ClientRequest) async {}

    public func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        let name = String(describing: Self.self)
        var attempt = 1
        while true {
            let result: Result<ClientResponse, ClientError>
            do throws(ClientError) {
                let adapted: ClientRequest
                do {
                    adapted = try await self.adaptRequest(request)
                } catch {
                    throw ClientError.middleware(error, in: name)
                }
                var response = try await next(adapted)
                // (Not for a stream: its body is the caller's to read, and may never end.)
                if !adapted.isStreaming, response.status.kind == .clientError || response.status.kind == .serverError {
                    throw try await Self.failure(for: &response, limit: adapted.options.maxBodySize)
                }
                do {
                    result = .success(try await self.adaptResponse(response, for: adapted))
                } catch {
                    throw ClientError.middleware(error, in: name)
                }
            } catch {
                let canReplay = request.body?.isReplayable ?? true
                let timeLeft = request.options.transport.end(from: .now).map { $0 > .now } ?? true
                if attempt < self.maxAttempts, canReplay, timeLeft, await self.rescue(error, for: request, attempt: attempt) {
                    attempt += 1
                    continue
                }
                result = .failure(error)
            }
            // A refused status the hooks did not rescue reaches the caller as a response: the
            // client's validators decide, as without the interceptor.
            let outcome = result.flatMapError { error in error.interceptedResponse.map { .success($0) } ?? .failure(error) }
            await self.receivedResponse(outcome, for: request)
            return try outcome.get()
        }
    }

    /// A 4xx/5xx as an error for `rescue`, its response kept to be handed on if not rescued.
    private static func failure(for response: inout ClientResponse, limit: Int?) async throws(ClientError) -> ClientError {
        let bytes = try await response.collectedBytes(limit: limit)
        var error = ClientError(.unacceptableStatus, detail: "\(response.status.code) \(response.status.reasonPhrase)")
        error.responseHead = response.head
        error.responseBody = bytes
        error.interceptedResponse = response
        return error
    }
}
