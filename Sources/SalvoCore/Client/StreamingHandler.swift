import HTTPTypes

/// Hands the head to a callback as soon as it arrives, then feeds the body into a
/// ``BodyStream`` with backpressure.
final class StreamingHandler: ResponseHandler {
    private let onHead: (Result<HTTPClientStreamingResponse, HTTPClientError>) -> Void
    private let makeStream: () -> BodyStream
    private var stream: BodyStream?

    init(makeStream: @escaping () -> BodyStream,
         onHead: @escaping (Result<HTTPClientStreamingResponse, HTTPClientError>) -> Void) {
        self.makeStream = makeStream
        self.onHead = onHead
    }

    func didReceiveHead(_ head: HTTPResponse) throws(HTTPClientError) {
        let stream = self.makeStream()
        self.stream = stream
        self.onHead(.success(HTTPClientStreamingResponse(head: head, body: ResponseBody(stream: stream))))
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) -> Bool {
        self.stream?.yield(bytes) ?? true
    }

    func didFinish(trailers: HTTPFields?) {
        if let stream = self.stream {
            stream.finish(.success(trailers))
        } else {
            self.onHead(.failure(HTTPClientError(.invalidResponse, detail: "response ended without a head")))
        }
    }

    func didFail(_ error: HTTPClientError) {
        if let stream = self.stream {
            stream.finish(.failure(error))
        } else {
            self.onHead(.failure(error))
        }
    }
}
