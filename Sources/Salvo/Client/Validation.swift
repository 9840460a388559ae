/// A check a response must pass before its success body is decoded. A client has a list
/// (``Client/Configuration/validators``, by default ``StatusCodeValidator``), and a call may
/// bring its own instead.
///
/// ```swift
/// struct RequiresBody: ResponseValidator {
///     func validate(_ response: HTTPResponse, body: [UInt8], for request: HTTPRequest) throws(ClientError) {
///         if body.isEmpty { throw ClientError(.validationFailed, detail: "empty body") }
///     }
/// }
/// ```
public protocol ResponseValidator: Sendable {
    /// Throws to refuse `response`, the answer to `request`.
    func validate(_ response: HTTPResponse, body: [UInt8], for request: HTTPRequest) throws(ClientError)
}

/// Accepts a status in ``acceptable`` (default 200–299); anything else is
/// `.unacceptableStatus`, with the failure body decoded when it decodes.
public struct StatusCodeValidator: ResponseValidator {
    public var acceptable: Range<Int>

    public init(acceptable: Range<Int> = 200..<300) {
        self.acceptable = acceptable
    }

    public init(acceptable: ClosedRange<Int>) {
        // Status codes have three digits: the bounds are clamped there, so `200...Int.max`
        // means "200 and up".
        let upper = Swift.min(acceptable.upperBound, 999) + 1
        self.acceptable = Swift.min(acceptable.lowerBound, upper)..<upper
    }

    public func validate(_ response: HTTPResponse, body: [UInt8], for request: HTTPRequest) throws(ClientError) {
        guard self.acceptable.contains(response.status.code) else {
            throw ClientError(.unacceptableStatus, detail: "\(response.status.code) \(response.status.reasonPhrase)")
        }
    }
}

/// Accepts a response whose `Content-Type` is one the request's `Accept` names: a request
/// without `Accept`, or with `*/*`, accepts anything; `application/*` accepts any
/// application type; a structured suffix matches both ways — `application/json` accepts
/// `application/problem+json`, and `application/vnd.github+json` accepts `application/json`
/// (what such APIs answer); a range with `q=0` is refused; an empty body needs no type (a
/// streamed one is checked by the type its head announces). Off by default: add it to a
/// client's or a call's validators.
///
/// ```swift
/// let strict = try Client(baseURL: "https://api.example.com", configuration: .init(
///     validators: [StatusCodeValidator(), ContentTypeValidator()]))
/// ```
public struct ContentTypeValidator: ResponseValidator {
    public init() {}

    public func validate(_ response: HTTPResponse, body: [UInt8], for request: HTTPRequest) throws(ClientError) {
        guard let accept = request.headerFields[.accept] else { return }
        if body.isEmpty && response.headerFields[.contentType] == nil { return }
        let ranges = accept.split(separator: ",").compactMap { entry -> MediaType? in
            let parameters = entry.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: " \t").lowercased() }
            if parameters.contains(where: { $0.hasPrefix("q=") && (Double($0.dropFirst(2)) ?? 1) == 0 }) { return nil }
            return MediaType(String(entry))
        }
        if ranges.contains(where: { $0.essence == "*/*" }) { return }
        guard let received = response.headerFields[.contentType].map(MediaType.init(rawValue:)) else {
            throw ClientError(.validationFailed, detail: "no Content-Type; the request accepts \(accept)")
        }
        guard ranges.contains(where: { $0.matches(received) }) else {
            throw ClientError(.validationFailed, detail: "Content-Type \(received.essence) is not one of \(accept)")
        }
    }
}

/// A validator from a closure.
public struct ClosureValidator: ResponseValidator {
    let check: @Sendable (HTTPResponse, [UInt8], HTTPRequest) throws(ClientError) -> Void

    public init(_ check: @escaping @Sendable (HTTPResponse, [UInt8], HTTPRequest) throws(ClientError) -> Void) {
        self.check = check
    }

    public func validate(_ response: HTTPResponse, body: [UInt8], for request: HTTPRequest) throws(ClientError) {
        try self.check(response, body, request)
    }
}

extension Substring {
    func trimmingCharacters(in set: String) -> String {
        var slice = self[...]
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}

/// Running a call's validators: one place for collected and streamed responses.
enum ResponseValidation {
    /// The first refusal of `response` (with its head) by `validators`, in order; nil when
    /// all accept it.
    static func refusal(of response: HTTPResponse, body: [UInt8], for request: HTTPRequest,
                        by validators: [any ResponseValidator]) -> ClientError? {
        for validator in validators {
            do {
                try validator.validate(response, body: body, for: request)
            } catch {
                var error = error
                if error.responseHead == nil { error.responseHead = response }
                return error
            }
        }
        return nil
    }
}
