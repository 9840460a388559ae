import Foundation

/// The one error the typed layer throws: a stable ``Code``, and what is known of where it
/// happened — the response's status, head and raw body (always kept when there was a
/// response), the failure body decoded when it decodes, the transport's error, and for
/// decoding failures the coding path.
///
/// ```swift
/// do {
///     let user = try await client.value(GetUser(id: 7))
/// } catch where error.code == .unacceptableStatus {
///     print(error.status?.code ?? 0, error.failureBody(as: APIProblem.self)?.message ?? "")
/// }
/// ```
public struct ClientError: Error, Sendable, CustomStringConvertible {
    /// What went wrong. New codes may come: `switch` with a `default`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String

        /// The base URL is not an absolute http or https URL.
        public static let invalidBaseURL = Code(name: "invalid base URL")
        /// The request cannot be built (a path with spaces, a header that is not valid).
        public static let invalidRequest = Code(name: "invalid request")
        /// The request body could not be encoded.
        public static let encodingFailed = Code(name: "request body could not be encoded")
        /// The transport failed: see ``ClientError/transportError``.
        public static let transportFailed = Code(name: "transport failed")
        /// The response's status is not one the call accepts (by default 200–299).
        public static let unacceptableStatus = Code(name: "unacceptable status")
        /// A validator refused the response.
        public static let validationFailed = Code(name: "response failed validation")
        /// The body does not decode to the type asked for: see ``ClientError/codingPath``.
        public static let decodingFailed = Code(name: "response body could not be decoded")
        /// The body was larger than allowed.
        public static let bodyTooLarge = Code(name: "response body too large")
        /// A local file could not be read or written (a download's destination, say).
        public static let fileFailed = Code(name: "file could not be read or written")
        /// The call's cache policy forbids loading (``CachePolicy/returnCacheDataDontLoad``)
        /// and the cache has no response for it.
        public static let notCached = Code(name: "no cached response")
        /// The call was cancelled.
        public static let cancelled = Code(name: "cancelled")
        /// Credentials could not be had: a refresh failed, or a token store cannot be read or
        /// written (see ``detail`` and ``underlyingError``).
        public static let authorizationFailed = Code(name: "authorization failed")
        /// A middleware threw an error of its own (not a ``ClientError``): see ``detail``
        /// and ``underlyingError``.
        public static let middlewareFailed = Code(name: "middleware failed")
        /// An error that is not Salvo's, given to `ClientError(error)`: see
        /// ``ClientError/underlyingError``.
        public static let other = Code(name: "other error")

        public var description: String { self.name }
    }

    public var code: Code
    /// A human-readable cause.
    public var detail: String?
    /// The error of the transport, for `.transportFailed` (and `.cancelled` from it).
    public var transportError: TransportError?
    /// The response's head, when there was a response.
    public var responseHead: HTTPResponse?
    /// The response's raw body, when there was a response (also when it did not decode).
    public var responseBody: [UInt8]?
    /// The failure body, decoded, when the status was unacceptable and it decoded.
    public var decodedFailureBody: (any Sendable)?
    /// For `.decodingFailed` and `.encodingFailed`: where in the value, as a dotted path
    /// (`data.items[2].price`).
    public var codingPath: String?
    /// The response an ``Interceptor`` turned into this error for its `rescue` hook.
    var interceptedResponse: ClientResponse? {
        get { self.kept?.interceptedResponse }
        set { self.kept = Kept(interceptedResponse: newValue, coders: self.kept?.coders) }
    }
    /// The client's coders, to decode the failure body as a type the request did not declare.
    var coders: Coders? {
        get { self.kept?.coders }
        set { self.kept = Kept(interceptedResponse: self.kept?.interceptedResponse, coders: newValue) }
    }
    /// What the typed layer keeps in an error for itself, behind one reference: every async
    /// function that throws a `ClientError` holds room for one, so the error stays small.
    private var kept: Kept?

    private final class Kept: Sendable {
        let interceptedResponse: ClientResponse?
        let coders: Coders?

        init(interceptedResponse: ClientResponse?, coders: Coders?) {
            self.interceptedResponse = interceptedResponse
            self.coders = coders
        }
    }
    /// The error behind this one when it came from outside Salvo: what a middleware threw
    /// (`.middlewareFailed`), what a mock's responder or a body's source threw (with
    /// `.transportFailed`), any error given to `ClientError(error)` (`.other`).
    public var underlyingError: (any Error)?
    /// For `.decodingFailed`: what was wrong at ``codingPath``.
    public var decodingProblem: DecodingProblem?

    /// What was wrong with a value that did not decode.
    public enum DecodingProblem: Sendable, Hashable {
        /// Nothing there: a key that is missing, or null where a value is needed.
        case missingValue
        /// A value of another type than the one expected (a string for a number).
        case wrongType
        /// A value that is there but not valid: not JSON at all, a date in another format, a
        /// value a custom parser refused.
        case invalidValue
    }

    /// A value at `keyPath` that is there but not valid (for custom parsers).
    public static func invalidValue(at keyPath: String, _ detail: String) -> ClientError {
        var error = ClientError(.decodingFailed, detail: detail)
        error.codingPath = keyPath
        error.decodingProblem = .invalidValue
        return error
    }

    /// A value missing at `keyPath` (for custom parsers).
    public static func missingValue(at keyPath: String, _ detail: String? = nil) -> ClientError {
        var error = ClientError(.decodingFailed, detail: detail ?? "missing value")
        error.codingPath = keyPath
        error.decodingProblem = .missingValue
        return error
    }

    public init(_ code: Code, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    /// The response's status, when there was a response.
    public var status: HTTPResponse.Status? { self.responseHead?.status }

    /// The failure body as the request declared it — no type to name again:
    ///
    /// ```swift
    /// let request = Endpoint<User>.get("/users/7").failing(as: APIProblem.self)
    /// do { _ = try await client.value(request) } catch {
    ///     print(error.failureBody(for: request)?.message ?? "")   // an APIProblem?
    /// }
    /// ```
    ///
    /// nil when the response was not refused for its status or validation, or its failure
    /// body does not decode.
    public func failureBody<R: Request>(for request: R) -> R.FailureResponseBody? {
        if let body = self.decodedFailureBody as? R.FailureResponseBody { return body }
        guard let bytes = self.refusedBody else { return nil }
        return try? request.decodeFailureBody(from: bytes, coders: self.coders ?? .json)
    }

    /// The failure body decoded as `type`: the one the request declared, or any other
    /// `Decodable` type, decoded from the raw body with the client's coders. nil when the
    /// response was not refused for its status or validation, or the body is not a `type`.
    public func failureBody<T: Decodable>(as type: T.Type) -> T? {
        if let body = self.decodedFailureBody as? T { return body }
        guard let bytes = self.refusedBody else { return nil }
        return try? ResponseDecoding.decode(T.self, from: bytes, coders: self.coders ?? .json)
    }

    /// The decoded failure body as `type`, if it decoded to that (for a failure type that is
    /// not `Decodable`, decoded by the request's own decoder).
    public func failureBody<T>(as type: T.Type) -> T? { self.decodedFailureBody as? T }

    /// The raw body of a response refused for its status or by a validator.
    private var refusedBody: [UInt8]? {
        guard self.code == .unacceptableStatus || self.code == .validationFailed else { return nil }
        return self.responseBody
    }

    /// Whether the server may have acted on the request (see
    /// `TransportError.mayHaveBeenProcessed`): true once a response arrived.
    public var mayHaveBeenProcessed: Bool {
        if self.responseHead != nil { return true }
        return self.transportError?.mayHaveBeenProcessed ?? false
    }

    /// Whether the transport failed in a way that sending the same request again, unchanged,
    /// might mend (see `TransportError.isTransient`): a reset or a timeout, not a redirect
    /// loop or a certificate that does not verify. False when there is no transport error —
    /// a status, a body that does not decode, a validator's refusal are answers, which a retry
    /// policy judges by their own rules.
    public var isTransient: Bool { self.transportError?.isTransient ?? false }

    public var description: String {
        var text = self.code.description
        if let status = self.status { text += " (\(status.code))" }
        if let codingPath, !codingPath.isEmpty { text += " at \(codingPath)" }
        if let detail { text += ": \(detail)" }
        if let transportError { text += ": \(transportError)" }
        return text
    }

    // MARK: Making them

    /// A transport's error as a ``ClientError``: `.cancelled` for a cancellation, else
    /// `.transportFailed`, with the error in ``transportError`` (and what stood behind it, a
    /// mock responder's `URLError` say, in ``underlyingError``).
    public static func transport(_ error: TransportError) -> ClientError {
        var wrapped = ClientError(error.code == .cancelled ? .cancelled : .transportFailed)
        wrapped.transportError = error
        wrapped.underlyingError = error.underlyingError
        return wrapped
    }

    /// Any error as a ``ClientError``, for a `catch` whose error Swift types as `any Error` —
    /// inside a `Task {}` or another closure, where throws are not inferred as typed: a
    /// ``ClientError`` as it is, a `TransportError` as ``transport(_:)`` makes it, a
    /// `CancellationError` as `.cancelled`, anything else as `.other` with the error in
    /// ``underlyingError``.
    ///
    /// ```swift
    /// Task {
    ///     do {
    ///         let user = try await client.value(GetUser(id: 7))
    ///     } catch {
    ///         let error = ClientError(error)
    ///         print(error.code, error.status?.code ?? 0)
    ///     }
    /// }
    /// ```
    ///
    /// Or say the type once and Swift checks it: `do throws(ClientError) { … } catch { … }`.
    public init(_ error: any Error) {
        switch error {
        case let error as ClientError:
            self = error
        case let error as TransportError:
            self = .transport(error)
        case is CancellationError:
            self.init(.cancelled)
        default:
            self.init(.other, detail: "\(error)")
            self.underlyingError = error
        }
    }

    /// `error` from a middleware: a ``ClientError`` as it is, a `CancellationError` (a
    /// cancelled `Task.sleep` in a hook, say) as `.cancelled`, anything else as
    /// `.middlewareFailed`.
    static func middleware(_ error: any Error, in name: String) -> ClientError {
        if let error = error as? ClientError { return error }
        if error is CancellationError { return ClientError(.cancelled, detail: "\(name): cancelled") }
        var wrapped = ClientError(.middlewareFailed, detail: "\(name): \(error)")
        wrapped.underlyingError = error
        return wrapped
    }

    static func encoding(_ error: any Error, of type: Any.Type) -> ClientError {
        if let error = error as? ClientError { return error }
        var wrapped = ClientError(.encodingFailed)
        if case EncodingError.invalidValue(_, let context) = error {
            wrapped.codingPath = Self.dotted(context.codingPath)
            wrapped.detail = "\(type): \(context.debugDescription)"
        } else {
            wrapped.detail = "\(type): \(error)"
        }
        return wrapped
    }

    static func decoding(_ error: any Error, as type: Any.Type, body: [UInt8]) -> ClientError {
        if let error = error as? ClientError { return error }
        var wrapped = ClientError(.decodingFailed)
        wrapped.responseBody = body
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            wrapped.decodingProblem = .missingValue
            wrapped.codingPath = Self.dotted(context.codingPath + [key])
            wrapped.detail = "\(type): missing value for key \"\(key.stringValue)\""
        case DecodingError.valueNotFound(let expected, let context):
            wrapped.decodingProblem = .missingValue
            wrapped.codingPath = Self.dotted(context.codingPath)
            wrapped.detail = "\(type): missing value, expected \(expected)"
        case DecodingError.typeMismatch(let expected, let context):
            wrapped.decodingProblem = .wrongType
            wrapped.codingPath = Self.dotted(context.codingPath)
            let place = wrapped.codingPath.map { $0.isEmpty ? "" : " at \($0)" } ?? ""
            wrapped.detail = "\(type): wrong type, expected \(expected)\(place)\(Self.found(in: context.debugDescription))"
        case DecodingError.dataCorrupted(let context):
            wrapped.decodingProblem = .invalidValue
            wrapped.codingPath = Self.dotted(context.codingPath)
            wrapped.detail = "\(type): \(context.debugDescription)"
        default:
            wrapped.decodingProblem = .invalidValue
            wrapped.detail = "\(type): \(error)"
        }
        return wrapped
    }

    /// `, found a string "abc"` from a type mismatch's description, as Salvo's decoder and
    /// `JSONDecoder` both word it (`… but found X instead.`); empty when it says nothing.
    private static func found(in description: String) -> String {
        guard let start = description.range(of: " but found "),
              let end = description.range(of: " instead.", options: .backwards), start.upperBound <= end.lowerBound else { return "" }
        return ", found " + description[start.upperBound..<end.lowerBound]
    }

    /// `["data", "items", 2, "price"]` as `data.items[2].price`.
    static func dotted(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                if !text.isEmpty { text += "." }
                text += key.stringValue
            }
        }
        return text
    }
}
