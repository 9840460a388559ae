@_spi(Benchmarks) import SalvoTransport
import HTTPTypes

/// Collects a whole response and hands it to a callback on the loop thread. It is also the
/// request's handle for cancelling it (a ``CancellationState``): one object, not two.
/// Stored properties are `@exclusivity(unchecked)`: the object is touched by its loop's thread
/// only, and no access to a property spans a call that could reach it again, so Swift's
/// dynamic exclusivity checks (12% of the API path's user CPU) buy nothing here.
///
/// @unchecked Sendable, as its base: its own state is set on the caller's thread before the
/// request is handed to its loop, and touched on that loop's thread only from then on; only
/// the base's cancellation methods are called from other threads.
final class CollectingHandler: CancellationState, ResponseHandler, EndOfTurnWork, @unchecked Sendable {
    @exclusivity(unchecked) private var head: ParsedHead?
    @exclusivity(unchecked) private var body: [UInt8] = []
    private let maxBodySize: Int
    @exclusivity(unchecked) private var delivery: Delivery
    /// The result for an awaiting task, held until the loop's turn ends (see
    /// ``EventLoop/deferToEndOfTurn(_:)``).
    @exclusivity(unchecked) private var heldResult: Result<HTTPClientResponse, HTTPClientError>?

    /// Where the result goes: a completion handler, or an awaiting task's continuation (held
    /// as is, rather than in a closure made for it: one allocation per request fewer).
    enum Delivery: Sendable {
        case completion(@Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void)
        case continuation(UnsafeContinuation<Result<HTTPClientResponse, HTTPClientError>, Never>)
        /// An awaiting task's, once its continuation exists (``deliver(to:)``, before the
        /// request starts).
        case awaiting
    }

    /// Where the result of an `.awaiting` handler goes; called before the request starts.
    func deliver(to continuation: UnsafeContinuation<Result<HTTPClientResponse, HTTPClientError>, Never>) {
        self.delivery = .continuation(continuation)
    }

    /// A handler for a request placed on `loop` (whose pool holds it).
    init(maxBodySize: Int, loop: EventLoop, client: HTTPClient, delivery: Delivery) {
        self.maxBodySize = maxBodySize
        self.delivery = delivery
        super.init(loop: loop, client: client)
    }

    /// `result` is moved, not copied, to where it goes (a response is a dozen references).
    private func completion(_ result: consuming Result<HTTPClientResponse, HTTPClientError>) {
        // The request is over: its handle lets go of it, and of what was collected (a handle
        // a caller keeps must not keep the response too).
        self.finished()
        self.head = nil
        self.body = []
        switch self.delivery {
        case .completion(let completion): completion(result)
        case .continuation:
            // Resumed with the others of this turn of the loop, as one batch.
            self.heldResult = consume result
            self.runAtEndOfTurn()
        case .awaiting:
            // Every request is started after its continuation is given: unreachable.
            assertionFailure("a collected response with nowhere to go")
        }
    }

    func endOfTurn() {
        guard case .continuation(let continuation) = self.delivery, let result = self.heldResult.take() else { return }
        // Resumed once: the continuation is forgotten with it.
        self.delivery = .awaiting
        continuation.resume(returning: result)
    }

    var wantsDetailsAtHead: Bool { false }

    func didReceiveHead(_ head: ParsedHead) throws(HTTPClientError) {
        self.head = head
        if let lengthText = head.fields.firstValue(for: .contentLength), let length = Int(lengthText) {
            if length > self.maxBodySize { throw self.tooLarge() }
            // Capped: the head of a HEAD, 204 or 304 answer describes a body that never comes.
            self.body.reserveCapacity(min(length, 4 << 20))
        }
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws(HTTPClientError) -> Bool {
        if self.body.count + bytes.count > self.maxBodySize { throw self.tooLarge() }
        self.body.append(contentsOf: bytes)
        return true
    }

    func didFinish(trailers: HTTPFields?, details: ResponseDetails) {
        guard let head = self.head.take() else {
            self.completion(.failure(HTTPClientError(.invalidResponse, detail: "response ended without a head")))
            return
        }
        // The body moves into the response: the handler keeps no second reference to it.
        var body: [UInt8] = []
        swap(&body, &self.body)
        var response = HTTPClientResponse(parsedHead: head, body: body, trailers: trailers)
        details.apply(to: &response)
        self.completion(.success(response))
    }

    func didFail(_ error: HTTPClientError) {
        self.completion(.failure(error))
    }

    private func tooLarge() -> HTTPClientError {
        HTTPClientError(.bodyTooLarge, phase: .readBody, detail: "more than \(self.maxBodySize) bytes")
    }
}
