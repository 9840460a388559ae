import HTTPTypes

/// A complete response: head, collected body, and trailers if a chunked body had any.
public struct HTTPClientResponse: Sendable {
    public var head: HTTPResponse
    public var body: [UInt8]
    public var trailers: HTTPFields?

    public init(head: HTTPResponse, body: [UInt8], trailers: HTTPFields? = nil) {
        self.head = head
        self.body = body
        self.trailers = trailers
    }

    /// Shorthand for `head.status`.
    public var status: HTTPResponse.Status { self.head.status }
}

/// A response whose body is still arriving.
public struct HTTPClientStreamingResponse: Sendable {
    public var head: HTTPResponse
    /// The body, chunk by chunk. Reading it is what lets the connection read more.
    public var body: ResponseBody

    public var status: HTTPResponse.Status { self.head.status }
}
