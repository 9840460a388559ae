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
/// One story for every hook:
/// 1. `adaptRequest` changes each attempt before it goes on down the chain.
/// 2. `rescue` is offered every failure of an attempt: an error thrown below (the transport,
///    a later middleware, `adaptRequest`, `adaptResponse`) and, for a collected call, an
///    answer the call's validators refuse (by default a 4xx or 5xx: an `.unacceptableStatus`
///    error with the response in it; the call's own validators decide the same). Returning true
///    sends the request again, adapted anew, up to ``maxAttempts`` in all, never once the
///    call's deadline has passed (every attempt spends the call's one timeout) and never
///    with a body that cannot be sent twice.
/// 3. `adaptResponse` sees every response handed on, whatever its status: one the
///    validators pass, and one they refuse that `rescue` did not take (its body collected).
/// 4. `receivedResponse` hears the verdict last, once per call, on the response as adapted:
///    `.success` when the validators pass it, `.failure` for every failure (with the adapted
///    response's head and body in the error).
///
/// A refused response that was not rescued still goes on to the caller as a response, and
/// the same validators decide what the caller sees (`value` throws, `send` hands it back), as
/// without the interceptor. A streamed call's answer is not judged here (its body is the
/// caller's to read, and may never end): it is a response to every hook.
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
            let verdict: Result<ClientResponse, ClientError>
            do throws(ClientError) {
                let adapted: ClientRequest
                do {
                    adapted = try await self.adaptRequest(request)
                } catch {
                    throw ClientError.middleware(error, in: name)
                }
                var response = try await next(adapted)
                if !adapted.isStreaming, let refusal = try await Self.refusal(of: &response, for: adapted),
                   await self.retries(after: refusal, for: request, attempt: attempt) {
                    attempt += 1
                    continue
                }
                // The verdict is on what is handed on: an adapted response is judged as it is.
                var handedOn = try await self.adapt(response, for: adapted, in: name)
                if !adapted.isStreaming, let refusal = try await Self.refusal(of: &handedOn, for: adapted) {
                    verdict = .failure(refusal)
                } else {
                    verdict = .success(handedOn)
                }
            } catch {
                if await self.retries(after: error, for: request, attempt: attempt) {
                    attempt += 1
                    continue
                }
                verdict = .failure(error)
            }
            await self.receivedResponse(verdict, for: request)
            // A refused status the hooks did not rescue reaches the caller as a response: the
            // client's validators decide, as without the interceptor.
            switch verdict {
            case .success(let response): return response
            case .failure(let error):
                if let response = error.interceptedResponse { return response }
                throw error
            }
        }
    }

    /// Whether `rescue` takes `error` and another attempt may go.
    private func retries(after error: ClientError, for request: ClientRequest, attempt: Int) async -> Bool {
        let canReplay = request.body?.isReplayable ?? true
        let timeLeft = request.options.transport.end(from: .now).map { $0 > .now } ?? true
        guard attempt < self.maxAttempts, canReplay, timeLeft else { return false }
        return await self.rescue(error, for: request, attempt: attempt)
    }

    private func adapt(_ response: ClientResponse, for request: ClientRequest, in name: String) async throws(ClientError) -> ClientResponse {
        do {
            return try await self.adaptResponse(response, for: request)
        } catch {
            throw ClientError.middleware(error, in: name)
        }
    }

    /// What the call's validators (the client's when the call has none; by default, "not
    /// 2xx") say of a collected `response`: nil when they pass it, else their error, with the
    /// response kept in it to be handed on if it is not rescued.
    private static func refusal(of response: inout ClientResponse, for request: ClientRequest) async throws(ClientError) -> ClientError? {
        let bytes = try await response.collectedBytes(limit: request.options.maxBodySize)
        let validators = request.options.validators ?? [StatusCodeValidator()]
        guard var error = ResponseValidation.refusal(of: response.head, body: bytes, for: request.head, by: validators) else { return nil }
        error.responseHead = response.head
        error.responseBody = bytes
        error.interceptedResponse = response
        return error
    }
}
