import Foundation

/// A complete response to a ``Request``: its head, its raw body, where it came from, and its
/// success and failure bodies decoded when you ask for them.
///
/// ```swift
/// let response = try await client.send(GetUser(id: 7))
/// if response.status.kind == .successful {
///     let user = try response.decodeSuccessBody()
/// } else {
///     let problem = try response.decodeFailureBody()
/// }
/// ```
public struct Response<Success: Sendable, Failure: Sendable>: Sendable {
    /// The request as sent (the first one, when redirects were followed).
    public let request: HTTPRequest
    public let head: HTTPResponse
    /// The body as received (decoded from gzip or deflate when the transport does that).
    public let body: [UInt8]
    /// The URL the response came from, as text: the last of ``redirectChain``, or the request's.
    public let urlString: String
    let details: ExchangeDetails
    /// The client's coders, for a failure body asked for as a type of the caller's choosing.
    let coders: Coders
    /// The checks in effect for the call (the call's own, or the client's), run when asked.
    let validators: [any ResponseValidator]
    let successDecoder: @Sendable ([UInt8]) throws(ClientError) -> Success
    let failureDecoder: @Sendable ([UInt8]) throws(ClientError) -> Failure

    /// The URL the response came from: the last of ``redirectChain``, or the request's.
    public var url: URL { FoundationURL.make(self.urlString) }

    public var status: HTTPResponse.Status { self.head.status }
    public var headerFields: HTTPFields { self.head.headerFields }
    /// The body as UTF-8 text.
    public var text: String { String(decoding: self.body, as: UTF8.self) }
    /// The body as `Data`.
    public var data: Data { Data(self.body) }

    /// The body decoded as the request's success type, whatever the status.
    public func decodeSuccessBody() throws(ClientError) -> Success {
        do {
            return try self.successDecoder(self.body)
        } catch {
            throw self.annotated(error)
        }
    }

    /// The body decoded as the request's failure type, whatever the status.
    public func decodeFailureBody() throws(ClientError) -> Failure {
        do {
            return try self.failureDecoder(self.body)
        } catch {
            throw self.annotated(error)
        }
    }

    /// nil when the response passes the call's validators (the call's own, or the client's:
    /// by default, a 2xx status); otherwise the error `Client.value(_:options:)` would have
    /// thrown before decoding, with the failure body decoded when it decodes. For code that
    /// takes the raw response and checks it:
    ///
    /// ```swift
    /// let response = try await client.send(GetUser(id: 7))
    /// if let error = response.error { print(error.status?.code ?? 0) }
    /// ```
    public var error: ClientError? {
        guard var error = ResponseValidation.refusal(of: self.head, body: self.body, for: self.request,
                                                     by: self.validators) else { return nil }
        error = self.annotated(error)
        if error.code == .unacceptableStatus, error.decodedFailureBody == nil {
            error.decodedFailureBody = try? self.decodeFailureBody()
        }
        return error
    }

    /// The same response, with its success body turned into something else when decoded.
    ///
    /// ```swift
    /// let names = try await client.send(ListUsers()).map { $0.map(\.name) }
    /// ```
    public func map<T: Sendable>(_ transform: @escaping @Sendable (Success) throws -> T) -> Response<T, Failure> {
        let decode = self.successDecoder
        return Response<T, Failure>(
            request: self.request, head: self.head, body: self.body, urlString: self.urlString, details: self.details, coders: self.coders,
            validators: self.validators, successDecoder: { (bytes) throws(ClientError) in
                let value = try decode(bytes)
                do {
                    return try transform(value)
                } catch let error as ClientError {
                    throw error
                } catch {
                    throw ClientError(.decodingFailed, detail: "map: \(error)")
                }
            },
            failureDecoder: self.failureDecoder)
    }

    /// Every URL requested on the way here when redirects were followed; empty otherwise.
    public var redirectChain: [String] { self.details.redirectChain }
    /// Each redirect followed: the request sent and the 3xx that answered it.
    public var redirects: [RedirectHop] { self.details.redirects }
    /// The request this response answers: the last of a redirect chain, else ``request``.
    public var effectiveRequest: HTTPRequest { self.details.effectiveRequest ?? self.request }
    /// The HTTP version the response came in.
    public var version: HTTPVersion { self.details.version }
    /// Interim (1xx) responses before this one (`103 Early Hints`, say).
    public var interimResponses: [HTTPResponse] { self.details.interimResponses }
    /// The content coding the transport decoded ``body`` from (`gzip`), if it did; ``head``
    /// still says what the server sent.
    public var decodedContentEncoding: String? { self.details.decodedContentEncoding }
    /// Where the time went and the bytes the exchange moved (zeros from a transport that
    /// keeps no metrics).
    public var metrics: TransportMetrics { self.details.metrics }

    /// The same response with another success decoder.
    func replacingSuccessDecoder<T>(_ decode: @escaping @Sendable ([UInt8]) throws(ClientError) -> T) -> Response<T, Failure> {
        Response<T, Failure>(request: self.request, head: self.head, body: self.body, urlString: self.urlString, details: self.details, coders: self.coders,
                             validators: self.validators, successDecoder: decode, failureDecoder: self.failureDecoder)
    }

    /// An error about this response, carrying its head and body.
    func annotated(_ error: ClientError) -> ClientError {
        var error = error
        if error.responseHead == nil { error.responseHead = self.head }
        if error.responseBody == nil { error.responseBody = self.body }
        if error.coders == nil { error.coders = self.coders }
        return error
    }
}
