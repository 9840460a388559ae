/// The request of one page: the caller's request as it is, or — for a page reached through
/// a `next` link — the same request sent with GET at the link's URL, without a body.
///
/// Every page goes through `Client.valueAndResponse` as this wrapper, so the client's
/// middleware, validators, timeouts and decoding apply to each as to any call. Following a
/// link is a GET whatever the first request was (RFC 8288 links are dereferenced like any
/// URL); the request's header fields, metadata and decoders come along.
struct PageRequest<R: Request>: Request {
    typealias RequestBody = R.RequestBody
    typealias SuccessResponseBody = R.SuccessResponseBody
    typealias FailureResponseBody = R.FailureResponseBody

    /// Where a link sends a page's request: the parts of the head that replace the request's
    /// own. `target` is the path and query, with the client's own query items taken out of
    /// it (the client adds them to every request it sends, so they would appear twice).
    struct LinkTarget: Hashable, Sendable {
        var scheme: String
        var authority: String
        var target: String
    }

    let request: R
    let link: LinkTarget?

    var operationName: String { self.request.operationName }
    var method: HTTPRequest.Method { self.link == nil ? self.request.method : .get }
    var path: String { self.request.path }
    var headerFields: HTTPFields { self.request.headerFields }
    var queryItems: [QueryItem] { self.request.queryItems }
    var body: R.RequestBody { self.request.body }
    var metadata: RequestMetadata { self.request.metadata }

    func encodeBody(with coders: Coders) throws(ClientError) -> HTTPBody? {
        self.link == nil ? try self.request.encodeBody(with: coders) : nil
    }

    func makeHTTPRequest(baseURL: BaseURL, coders: Coders) throws(ClientError) -> HTTPRequest {
        var head = try self.request.makeHTTPRequest(baseURL: baseURL, coders: coders)
        if let link {
            head.method = .get
            head.scheme = link.scheme
            head.authority = link.authority
            head.path = link.target
        }
        return head
    }

    func decodeSuccessBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> R.SuccessResponseBody {
        try self.request.decodeSuccessBody(from: bytes, coders: coders)
    }

    func decodeFailureBody(from bytes: [UInt8], coders: Coders) throws(ClientError) -> R.FailureResponseBody {
        try self.request.decodeFailureBody(from: bytes, coders: coders)
    }
}
