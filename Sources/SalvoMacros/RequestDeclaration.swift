import Salvo

/// A request described by a type whose `body` builds it (see `@Request`): a struct's stored
/// properties are the request's inputs, its `body` puts them together.
///
/// `@Request` names ``Success`` and ``Failure`` from the `.responseBody(T.self)` and
/// `.responseError(E.self)` it finds in `body`, so that `var body: some Request` (whose types
/// Swift otherwise hides) still gives typed results; `some Request<T, E>` says it directly.
public protocol RequestDeclaration: Sendable {
    associatedtype Declared: Request
    /// The success body's type.
    associatedtype Success: Sendable = Declared.SuccessResponseBody
    /// The failure body's type.
    associatedtype Failure: Sendable = Declared.FailureResponseBody
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
        -> D.Success {
        let value = try await self.value(declaration.body, options: options)
        guard let typed = value as? D.Success else {
            throw ClientError(.decodingFailed, detail: "\(D.self) declares \(D.Success.self) but its body decodes \(type(of: value))")
        }
        return typed
    }

    /// The declared request's value or error, never thrown: ``Client/outcome(_:options:)`` of its `body`.
    public func outcome<D: RequestDeclaration>(_ declaration: D, options: CallOptions = CallOptions()) async
        -> (value: D.Success?, error: ClientError?) {
        do {
            return (try await self.value(declaration, options: options), nil)
        } catch {
            return (nil, error)
        }
    }

    /// The declared request's value and response: ``Client/valueAndResponse(_:options:)`` of its `body`.
    public func valueAndResponse<D: RequestDeclaration>(_ declaration: D, options: CallOptions = CallOptions()) async throws(ClientError)
        -> (value: D.Declared.SuccessResponseBody, response: Response<D.Declared.SuccessResponseBody, D.Declared.FailureResponseBody>) {
        try await self.valueAndResponse(declaration.body, options: options)
    }
}

extension ClientError {
    /// The failure body decoded for a declared request, typed as it declares it.
    public func failureBody<D: RequestDeclaration>(for declaration: D) -> D.Failure? {
        self.decodedFailureBody as? D.Failure
    }
}

extension QueueBuilder {
    /// A `@Request` declaration in a `Queue`: the request its `body` builds.
    public static func buildExpression(_ declaration: some RequestDeclaration) -> [any Request] { [declaration.body] }
}
