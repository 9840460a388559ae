import SalvoTransport
import HTTPTypes

extension HTTPClient {
    /// Sends `request` and collects the response.
    ///
    /// - Parameters:
    ///   - request: the head: method, URL (scheme, authority, path) and header fields.
    ///   - body: what to send after the head; nil sends none.
    ///   - options: this request's overrides of the client's configuration (timeout, body
    ///     size limit, TLS…).
    /// - Throws: `TransportError`; `.cancelled` when the calling task is cancelled (the
    ///   connection is closed, never reused mid-response).
    ///
    /// Runs on the caller's executor (`nonisolated(nonsending)`): the request is prepared —
    /// microseconds — and handed to its event loop without first hopping to the global
    /// executor, and the result comes back to where the caller is (an actor, or an event loop
    /// it prefers as its task executor) with the response itself. The one slow step, setting
    /// up TLS the first time (the system trust store, ~50 ms), runs on the global executor.
    nonisolated(nonsending) public func execute(
        _ request: HTTPRequest, body: HTTPBody? = nil, options: RequestOptions = RequestOptions()
    ) async throws(TransportError) -> CollectedResponse {
        guard let observer = self.configuration.observer else {
            return try await self.executeObserved(request, body: body, options: options)
        }
        return try await Self.observed(request, by: observer, head: \.head) { (request) async throws(TransportError) in
            try await self.executeObserved(request, body: body, options: options)
        }
    }

    /// ``execute(_:body:options:)`` once the observer, if any, has seen the request.
    @inline(__always)
    nonisolated(nonsending) private func executeObserved(
        _ request: HTTPRequest, body: HTTPBody?, options: RequestOptions
    ) async throws(TransportError) -> CollectedResponse {
        await self.setUpTLS(for: request, options: options)
        var prepared = try self.prepare(request, body: body, options: options)
        if Task.isCancelled {
            body?.requestEnded()
            throw TransportError.cancelled(.caller, phase: .request)
        }
        let loop = self.place(&prepared)
        let limit = options.maxBodySize ?? self.configuration.maxBodySize
        // The owner is made here, the prepared request moved into it: what this async call
        // keeps across its suspension is one reference, not the request's 900 bytes. It
        // collects the response and is the request's cancellation handle too.
        let owner = RequestOwner(consume prepared, client: self, loop: loop, delivery: .awaiting, maxBodySize: limit)
        let isolation = #isolation
        let result = await withTaskCancellationHandler {
            let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<CollectedResponse, TransportError>, Never>) in
                owner.deliver(to: continuation, isolation: isolation)
                self.start(owner, on: loop)
            }
            threadSanitizerSawResume()
            return result
        } onCancel: {
            owner.cancel()
        }
        return try result.get()
    }

    /// Sends `request` and returns as soon as the response head arrives; the body follows as
    /// an `AsyncSequence` of chunks, read from the socket only as fast as it is consumed.
    ///
    /// Cancelling the calling task, or dropping the body before its end, cancels the request.
    /// Runs on the caller's executor, as ``execute(_:body:options:)`` does.
    nonisolated(nonsending) public func stream(
        _ request: HTTPRequest, body: HTTPBody? = nil, options: RequestOptions = RequestOptions()
    ) async throws(TransportError) -> TransportResponse {
        guard let observer = self.configuration.observer else {
            return try await self.streamObserved(request, body: body, options: options)
        }
        // A streamed call's observation ends with its head: the body is the caller's to read.
        return try await Self.observed(request, by: observer, head: \.head) { (request) async throws(TransportError) in
            try await self.streamObserved(request, body: body, options: options)
        }
    }

    /// ``stream(_:body:options:)`` once the observer, if any, has seen the request.
    @inline(__always)
    nonisolated(nonsending) private func streamObserved(
        _ request: HTTPRequest, body: HTTPBody?, options: RequestOptions
    ) async throws(TransportError) -> TransportResponse {
        await self.setUpTLS(for: request, options: options)
        var prepared = try self.prepare(request, body: body, options: options)
        if Task.isCancelled {
            body?.requestEnded()
            throw TransportError.cancelled(.caller, phase: .request)
        }
        let loop = self.place(&prepared)
        let handler = StreamingHandler()
        let owner = RequestOwner(consume prepared, client: self, loop: loop, delivery: .stream(handler))
        let isolation = #isolation
        let result = await withTaskCancellationHandler {
            let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<TransportResponse, TransportError>, Never>) in
                handler.deliver(to: continuation, isolation: isolation)
                self.start(owner, on: loop)
            }
            threadSanitizerSawResume()
            return result
        } onCancel: {
            owner.cancel()
        }
        return try result.get()
    }

    /// Sends `request`, collects the response and calls `completion` with it **on the event
    /// loop thread** that ran the request. Keep the handler short, or hop elsewhere: the loop
    /// serves other connections meanwhile.
    ///
    /// - Returns: a handle that cancels the request.
    @discardableResult
    public func execute(
        _ request: HTTPRequest, body: HTTPBody? = nil, options: RequestOptions = RequestOptions(),
        completion: @escaping @Sendable (Result<CollectedResponse, TransportError>) -> Void
    ) -> RequestHandle {
        if let observer = self.configuration.observer {
            var request = request
            let completion = Self.observing(completion, of: &request, by: observer)
            return self.executeObserved(request, body: body, options: options, completion: completion)
        }
        return self.executeObserved(request, body: body, options: options, completion: completion)
    }

    /// ``execute(_:body:options:completion:)`` once the observer, if any, has seen the request.
    @inline(__always)
    private func executeObserved(
        _ request: HTTPRequest, body: HTTPBody?, options: RequestOptions,
        completion: @escaping @Sendable (Result<CollectedResponse, TransportError>) -> Void
    ) -> RequestHandle {
        var prepared: PreparedRequest
        do {
            prepared = try self.prepare(request, body: body, options: options)
        } catch {
            // Reported on a loop thread like every other outcome, or here if none runs.
            if !self.group.next().tryExecute({ completion(.failure(error)) }) {
                completion(.failure(error))
            }
            return RequestHandle(owner: nil)
        }
        let loop = self.place(&prepared)
        let limit = options.maxBodySize ?? self.configuration.maxBodySize
        let owner = RequestOwner(consume prepared, client: self, loop: loop, delivery: .completion(completion), maxBodySize: limit)
        // From a completion handler on this loop: no hop, no closure at all.
        self.start(owner, on: loop)
        return RequestHandle(owner: owner)
    }
}

extension HTTPClient {
    /// `call` with the request as the observer saw it, the observer told how it ended.
    nonisolated(nonsending) static func observed<Response>(
        _ request: HTTPRequest, by observer: any EngineObserver, head: (Response) -> HTTPResponse,
        _ call: (HTTPRequest) async throws(TransportError) -> Response
    ) async throws(TransportError) -> Response {
        var request = request
        let observation = observer.requestStarting(&request)
        do {
            let response = try await call(request)
            observation?.ended(.success(head(response)))
            return response
        } catch {
            observation?.ended(.failure(error))
            throw error
        }
    }

    /// `completion`, telling the observer (if any) how the request ended before it runs.
    static func observing(_ completion: @escaping @Sendable (Result<CollectedResponse, TransportError>) -> Void,
                          of request: inout HTTPRequest, by observer: any EngineObserver)
        -> @Sendable (Result<CollectedResponse, TransportError>) -> Void {
        guard let observation = observer.requestStarting(&request) else { return completion }
        return { result in
            observation.ended(result.map(\.head))
            completion(result)
        }
    }
}

/// Cancels a request started with a completion handler.
///
/// Cheap to keep: once the request has ended it holds none of it — not the response, the
/// request's body, the completion handler, nor the client — and `cancel()` does nothing.
/// (A prepared call's handle keeps a reference to what the call shares with its other
/// calls — its template's options — which the ``PreparedCall`` keeps anyway; and to the
/// object that owned the call, which may own a later call of the same ``PreparedCall`` by
/// then: the handle names its own call only, and cancels nothing of the later one.)
///
/// ```swift
/// let handle = client.execute(request) { result in print(result.map(\.status)) }
/// // later, from any thread:
/// handle.cancel()   // the completion handler gets .cancelled, unless the response came first
/// ```
public struct RequestHandle: Sendable {
    /// The request's owner (nil when the request could not even be prepared).
    let owner: RequestOwner?
    /// Which of the owner's calls this handle is for (a prepared call's owner serves several
    /// in turn; see ``RemotePlace/generation``).
    let generation: UInt32

    init(owner: RequestOwner?, generation: UInt32 = 0) {
        self.owner = owner
        self.generation = generation
    }

    /// Ends the request with `.cancelled` if it is still running. Safe from any thread.
    public func cancel() {
        self.owner?.cancel(generation: self.generation)
    }
}

/// The engine as the typed layer's (or anyone's) transport: the streaming call.
extension HTTPClient: Transport {
    /// Sends `request` and returns once the head has arrived; see ``stream(_:body:options:)``.
    nonisolated(nonsending) public func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(TransportError) -> TransportResponse {
        try await self.stream(request, body: body, options: RequestOptions(options))
    }

    /// Sends `request` and collects the response; see ``execute(_:body:options:)``.
    nonisolated(nonsending) public func sendCollecting(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions,
                                                       maxBodySize: Int) async throws(TransportError) -> CollectedResponse {
        try await self.execute(request, body: body, options: RequestOptions(options, maxBodySize: maxBodySize))
    }
}

/// Preparing, placing and starting a request: what every call above does before its request
/// is its owner's.
extension HTTPClient {
    // MARK: Placement

    /// The loop a request runs on: the caller's loop when it is one of ours (no thread hop),
    /// else the least loaded for its host (an idle connection first). Wherever it lands, it can have any free place of the host's limit: a loop without
    /// one borrows it from a loop with an idle connection (see ``PoolCoordinator``).
    func place(_ prepared: inout PreparedRequest) -> EventLoop {
        if let current = EventLoop.current, current.index < self.group.loops.count, self.group.loops[current.index] === current {
            return current
        }
        let (loop, arrival) = self.coordinator.place(prepared.key)
        prepared.arrival = arrival
        return loop
    }

    func pool(on loop: EventLoop) -> PoolShard {
        self.pools[loop.index].value
    }

    /// The pool object for holding on to from any thread (use it only on `loop`).
    func poolReference(on loop: EventLoop) -> PoolShard {
        self.pools[loop.index].unsafeValue
    }

    // MARK: Starting requests

    /// `request` prepared under this client's configuration (unless the client is shut down);
    /// a request that cannot be prepared is over, and its body is told so.
    func prepare(_ request: HTTPRequest, body: HTTPBody?, options: RequestOptions) throws(TransportError) -> PreparedRequest {
        do throws(TransportError) {
            return try self.preparer.prepare(request, body: body, options: options)
        } catch {
            body?.requestEnded()
            throw error
        }
    }

    /// Starts `owner` on `loop`: at once when this thread is the loop's (no hop, no closure),
    /// else through the loop's queue.
    func start(_ owner: RequestOwner, on loop: EventLoop) {
        if loop.inEventLoop {
            self.launch(owner, on: loop)
            return
        }
        // The caller touches the owner no more once it is handed over (an owner the queue
        // refused is the caller's again, never the loop's).
        if !loop.tryExecute({ self.launch(owner, on: loop) }) {
            // The loop has stopped (the client or its group shut down meanwhile): the request
            // never reached it and is still this thread's; its placement and body are let go here.
            if owner.settleArrival() { self.coordinator.placementAbandoned(owner.key) }
            owner.fail(TransportError(.shutdown, phase: .request))
        }
    }

    /// Hands `owner` to the pool of `loop`, whose thread this is.
    private func launch(_ owner: RequestOwner, on loop: EventLoop) {
        let placed = owner.settleArrival()
        if owner.isCancelled {
            if placed { self.coordinator.placementAbandoned(owner.key) }
            owner.fail(.cancelled(.caller, phase: .request))
            return
        }
        self.pool(on: loop).submit(owner)
    }
}

extension HTTPClient {
    /// Builds the TLS context an https request needs, or loads its trust store, when that is
    /// still to do — on the global executor, not the caller's (which may be the main actor):
    /// it takes milliseconds, once per client and configuration. Errors are left for
    /// preparing the request to report; everything else costs one atomic load.
    fileprivate nonisolated(nonsending) func setUpTLS(for request: HTTPRequest, options: RequestOptions) async {
        guard request.scheme != "http", self.tlsContexts.needsSetUp(for: options.tls) else { return }
        await self.setUpTLSConcurrently(options.tls)
    }

    @concurrent private func setUpTLSConcurrently(_ configuration: TLSConfiguration?) async {
        _ = try? self.tlsContexts.context(for: configuration)
    }
}
