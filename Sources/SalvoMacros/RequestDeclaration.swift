import Salvo

/// A request described by a type whose `body` builds it (see `@Request`): a struct's stored
/// properties are the request's inputs, its `body` puts them together.
public protocol RequestDeclaration: Sendable {
    associatedtype Declared: Request
    /// The request, built from the properties.
    var body: Declared { get }
}

extension Client {
    /// Sends the declared request: ``Client/send(_:options:)`` of its `body`.
    public func send<D: RequestDeclaration>(_ declaration: D, options: CallOptions = CallOptions()) async throws(ClientError)
        -> Response<D.Declared.SuccessResponseBody, D.Declared.FailureResponseBody> {
        try await self.send(declaration.body, options: options)
    }

    /// The declared request's decoded success body: ``Client/value(_:options:)`` of its `body`.
    public func value<D: RequestDeclaration>(_ declaration: D, options: CallOptions = CallOptions()) async throws(ClientError)
        -> D.Declared.SuccessResponseBody {
        try await self.value(declaration.body, options: options)
    }

    /// The declared request's value or error, never thrown: ``Client/outcome(_:options:)`` of its `body`.
    public func outcome<D: RequestDeclaration>(_ declaration: D, options: CallOptions = CallOptions()) async
        -> (value: D.Declared.SuccessResponseBody?, error: ClientError?) {
        await self.outcome(declaration.body, options: options)
    }

    /// The declared request's value and response: ``Client/valueAndResponse(_:options:)`` of its `body`.
    public func valueAndResponse<D: RequestDeclaration>(_ declaration: D, options: CallOptions = CallOptions()) async throws(ClientError)
        -> (value: D.Declared.SuccessResponseBody, response: Response<D.Declared.SuccessResponseBody, D.Declared.FailureResponseBody>) {
        try await self.valueAndResponse(declaration.body, options: options)
    }
}
