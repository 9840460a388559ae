import Foundation
import HTTPTypes
import Salvo

/// A response with nothing decoded: what an endpoint declared `-> RawResponse` returns without
/// throwing for a status the validators refuse (`response.error` says why).
public typealias RawResponse = Response<Empty, Empty>

// The sends, one per kind of return type. The generated code always writes
// `return try await request.send(with: client)`: the compiler picks the overload from the
// function's declared return type, so type aliases and qualified names work as written.
extension APIRequest {
    /// Sends the call and decodes the success body as `Value`; a refused status, a transport
    /// failure or a body that does not decode throws `ClientError` (with the failure body
    /// decoded as `Failure` and its bytes in `responseBody`).
    public func send<Value: Decodable & Sendable>(with client: Client) async throws(ClientError) -> Value {
        try await client.value(self.call(Value.self))
    }

    /// Sends the call and checks its status; the body is not decoded.
    public func send(with client: Client) async throws(ClientError) {
        _ = try await client.value(self.call(Empty.self))
    }

    /// Sends the call and returns the response whatever its status: a status the validators
    /// refuse is `response.error`, not thrown. A transport failure still throws (there is no
    /// response to return).
    public func send<Value: Decodable & Sendable>(with client: Client) async throws(ClientError) -> Response<Value, Failure> {
        try await client.send(self.call(Value.self))
    }

    /// Sends the call and returns the decoded value with the response.
    public func send<Value: Decodable & Sendable>(with client: Client) async throws(ClientError) -> (Value, Response<Value, Failure>) {
        let (value, response) = try await client.valueAndResponse(self.call(Value.self))
        return (value, response)
    }

    /// Sends the call and returns the decoded value with the response, nothing decoded in it.
    public func send<Value: Decodable & Sendable>(with client: Client) async throws(ClientError) -> (Value, Response<Empty, Failure>) {
        let (value, response) = try await client.valueAndResponse(self.call(Value.self))
        return (value, response.map { _ in Empty() })
    }

    // MARK: Streams

    /// Sends the call and returns its body as a stream of `Element`s, framed as the scope says
    /// (`@JSONLines`, `@EventStream`) or, when it says nothing, as the response's content type
    /// says (`text/event-stream` is Server-Sent Events, anything else JSON Lines).
    public func send<Element: Decodable & Sendable>(with client: Client) async throws(ClientError) -> ResponseStream<Element> {
        let response = try await client.stream(self.call(Empty.self))
        return ResponseStream(response: response, framing: self.framing(of: response),
                              coders: self.scope.coders ?? client.configuration.coders)
    }

    /// Sends the call and returns its body as JSON Lines of `Element`.
    public func send<Element: Decodable & Sendable>(with client: Client) async throws(ClientError) -> JSONLines<Element> {
        let response = try await client.stream(self.call(Empty.self))
        return response.jsonLines(of: Element.self, decoder: self.scope.coders?.decoder)
    }

    /// Sends the call and returns its body as Server-Sent Events.
    public func send(with client: Client) async throws(ClientError) -> ServerSentEvents {
        try await client.stream(self.call(Empty.self)).serverSentEvents()
    }

    // MARK: Completion handlers

    /// Sends the call and hands the decoded value, or the error, to `completion`.
    @discardableResult
    public func send<Value: Decodable & Sendable>(with client: Client,
                                                  completion: @escaping @Sendable (Result<Value, ClientError>) -> Void) -> CallHandle {
        client.value(self.call(Value.self), completion: completion)
    }

    /// Sends the call and hands the decoded value, or the error, to `completion`.
    @discardableResult
    public func send<Value: Decodable & Sendable>(with client: Client,
                                                  completion: @escaping @Sendable (Result<Value, any Error>) -> Void) -> CallHandle {
        client.value(self.call(Value.self)) { result in completion(result.mapError { $0 }) }
    }

    /// Sends the call and tells `completion` whether it succeeded.
    @discardableResult
    public func send(with client: Client, completion: @escaping @Sendable (Result<Void, ClientError>) -> Void) -> CallHandle {
        client.value(self.call(Empty.self)) { result in completion(result.map { _ in () }) }
    }

    /// Sends the call and tells `completion` whether it succeeded.
    @discardableResult
    public func send(with client: Client, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) -> CallHandle {
        client.value(self.call(Empty.self)) { result in completion(result.map { _ in () }.mapError { $0 }) }
    }

    /// Sends the call and hands the response (any status), or the transport's error, to `completion`.
    @discardableResult
    public func send<Value: Decodable & Sendable>(
        with client: Client, completion: @escaping @Sendable (Result<Response<Value, Failure>, ClientError>) -> Void
    ) -> CallHandle {
        client.send(self.call(Value.self), completion: completion)
    }

    // MARK: The request

    /// The call as a `Request` whose success body is `Value`.
    func call<Value: Decodable & Sendable>(_ type: Value.Type) -> APICall<Value, Failure> {
        APICall<Value, Failure>(self)
    }

    private func framing(of response: StreamingResponse<Failure>) -> APIScope.StreamFraming {
        if let framing = self.scope.streamFraming { return framing }
        let type = response.headerFields[.contentType]?.lowercased() ?? ""
        return type.hasPrefix("text/event-stream") ? .serverSentEvents : .jsonLines
    }
}
