import HTTPTypes
import SalvoTransport

extension HTTPClient {
    /// Checks and encodes `template` once — its URL, its fields with the client's defaults,
    /// its connection key, TLS context and proxy — for calls that each send only what
    /// changes: parameter values, extra fields, a body.
    ///
    /// ```swift
    /// let user = try client.prepare(RequestTemplate(.get, "http://127.0.0.1:8080/users/{id}"))
    /// let status = try await user.send(["42"]) { response in response.status }
    /// ```
    ///
    /// - Throws: `TransportError` for a template that cannot be sent (a bad URL or field),
    ///   or whose options ask for what prepared calls do not do: follow redirects, decode
    ///   content, or send `Expect: 100-continue`.
    ///
    /// Prepare at start-up and keep the call: for https, the first request a client prepares
    /// (per TLS configuration) loads the system's trust store — tens of milliseconds — on the
    /// calling thread.
    public func prepare(_ template: RequestTemplate) throws(TransportError) -> PreparedCall {
        try PreparedCall(template, client: self)
    }
}

/// A request prepared once and sent many times (``HTTPClient/prepare(_:)``), its response lent
/// to a handler instead of collected into a value: the fast path, for callers who send the
/// same request shape at a high rate — an outbound API call in a hot loop, a load test.
///
/// What a call costs beyond the exchange itself: the parameters encoded into a copy of the
/// head prepared once (no copy at all without parameters or extra fields), its deadlines,
/// and the request's owner. What it saves, next to ``HTTPClient/execute(_:body:options:)``:
/// checking and encoding the request, the pool's lookup of its host, and the response value
/// with its fields — the handler reads them where they were parsed.
///
/// Cancellation (of the calling task, or through the completion form's handle), timeouts
/// and the pool's limits work exactly as for `execute`. Redirects are not followed (a 3xx is
/// lent as it came) and bodies are not decoded (no `Accept-Encoding` is sent for it).
/// Works over HTTP/1.1 and HTTP/2. Safe to share between tasks and threads.
public final class PreparedCall: Sendable {
    /// The template's parameter names, in the order a call gives their values.
    public let parameterNames: [String]
    private let client: HTTPClient
    private let prepared: PreparedRequest
    private let head: PreparedHead
    private let sendsBody: Bool
    private let maxBodySize: Int
    /// The lowercased names of the fields every call sends already (the template's, the
    /// client's defaults, its User-Agent): a call's own fields may not repeat them.
    private let fixedNames: Set<String>
    /// The call's total and head timeouts, from which each call's deadlines are set.
    private let totalLimit: Duration?
    /// Whether the client's observer must see each request: then calls take the full road.
    private let observed: Bool
    private let template: RequestTemplate
    /// Per event loop of the client: the owners of finished calls, to serve the next calls
    /// made on that loop's thread.
    private let recyclers: [OwnerRecycler]

    init(_ template: RequestTemplate, client: HTTPClient) throws(TransportError) {
        func refuse(_ what: String) -> TransportError {
            TransportError(.invalidConfiguration, phase: .request,
                           detail: "a prepared call does not \(what); send it with execute(_:body:options:)")
        }
        var options = template.options
        if options.redirects?.follow == true { throw refuse("follow redirects") }
        if options.decompression?.isEnabled == true { throw refuse("decode content") }
        if options.expectContinue || template.headerFields[.expect] != nil { throw refuse("send Expect: 100-continue") }
        guard (template.maxBodySize ?? 0) >= 0 else {
            throw TransportError(.invalidConfiguration, phase: .request, detail: "maxBodySize must not be negative")
        }
        // Whatever the client's defaults, a prepared call takes the response as it comes.
        options.redirects = RedirectPolicy(follow: false)
        options.decompression = .disabled
        let url = try TemplateURL(template.url)
        let request = try HTTPRequest(method: template.method, url: url.marked, headerFields: template.headerFields)
        let body = template.sendsBody ? HTTPBody(.stream(length: PreparedHead.lengthMarker, replayable: true, produce: { _ in })) : nil
        var prepared = try client.prepare(request, body: body, options: options)
        prepared.stream = nil
        prepared.requestBody = nil
        prepared.shape = prepared.shape.sharedByCalls()
        self.head = try PreparedHead(prepared.head, url: url, sendsBody: template.sendsBody)
        self.prepared = prepared
        self.parameterNames = url.names
        self.client = client
        self.sendsBody = template.sendsBody
        self.maxBodySize = template.maxBodySize ?? template.options.maxBodySize ?? client.configuration.maxBodySize
        var fixed = Set(template.headerFields.map { $0.name.canonicalName })
        for field in client.configuration.headerFields { fixed.insert(field.name.canonicalName) }
        if client.configuration.userAgent != nil { fixed.insert("user-agent") }
        self.fixedNames = fixed
        var bounds = options.transport
        if bounds.timeout == nil { bounds.timeout = client.configuration.requestTimeout }
        self.totalLimit = bounds.effectiveTimeout
        self.observed = client.configuration.observer != nil
        var kept = template
        kept.options = options
        self.template = kept
        self.recyclers = client.group.loops.map { OwnerRecycler(loop: $0) }
    }

    // MARK: Calls

    /// Sends one call and returns what `handler` made of its response.
    ///
    /// - Parameters:
    ///   - parameters: a value for each of ``parameterNames``, in order.
    ///   - fields: fields for this call only, sent after the template's.
    ///   - body: the body — required when the template ``RequestTemplate/sendsBody`` (empty
    ///     is a body of length 0), refused otherwise.
    ///   - handler: runs on the event loop that read the response, which it may read only
    ///     while it runs; what it returns is the call's result, what it throws the call's error.
    /// - Throws: `TransportError` when the exchange fails (the handler does not run), or
    ///   what the handler threw.
    @inlinable
    nonisolated(nonsending) public func send<Value: Sendable>(
        _ parameters: [String] = [], fields: HTTPFields = HTTPFields(), body: [UInt8]? = nil,
        handler: @escaping @Sendable (borrowing LentResponse) throws -> Value
    ) async throws -> Value {
        // Inlinable, as the completion form below: specialized where it is called, the call's
        // generic `LentCall<Value>` is made without looking its type up at run time per call.
        // (`HTTPFields()` for no fields, not `[:]`: the literal allocates.)
        let call = LentCall(handler: handler)
        let started = try self.makeCall(parameters, fields: fields, body: body, sink: call)
        let isolation = #isolation
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                call.deliver(to: continuation, isolation: isolation)
                started.start()
            }
            threadSanitizerSawResume()
        } onCancel: {
            started.cancel()
        }
        // Resumed once the result is held: taken here, where its type is known.
        return try call.takeResult().get()
    }

    /// Sends one call; `completion` gets what `handler` made of its response, or the error,
    /// **on the event loop thread** that ran it (as ``HTTPClient/execute(_:body:options:completion:)``).
    ///
    /// - Returns: a handle that cancels the call.
    @inlinable
    @discardableResult
    public func send<Value: Sendable>(
        _ parameters: [String] = [], fields: HTTPFields = HTTPFields(), body: [UInt8]? = nil,
        handler: @escaping @Sendable (borrowing LentResponse) throws -> Value,
        completion: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> RequestHandle {
        let call = LentCall(handler: handler, completion: completion)
        do {
            return try self.startCall(parameters, fields: fields, body: body, sink: call)
        } catch {
            return self.refused(error, completion: completion)
        }
    }

    /// A call that could not be made: `completion` hears so on a loop thread like every other
    /// outcome, or here if none runs.
    @usableFromInline
    func refused<Value>(_ error: TransportError, completion: @escaping @Sendable (Result<Value, any Error>) -> Void) -> RequestHandle {
        if !self.client.group.next().tryExecute({ completion(.failure(error)) }) {
            completion(.failure(error))
        }
        return RequestHandle(owner: nil)
    }

    /// One call's owner, started on its loop; the handle that cancels it.
    @usableFromInline
    func startCall(_ parameters: [String], fields: HTTPFields, body: [UInt8]?,
                   sink: LentSink) throws(TransportError) -> RequestHandle {
        let (owner, loop) = try self.owner(parameters, fields: fields, body: body, sink: sink)
        let handle = RequestHandle(owner: owner, generation: owner.generation)
        self.client.start(owner, on: loop)
        return handle
    }

    /// One call's owner, placed on its loop, ready to start.
    @usableFromInline
    func makeCall(_ parameters: [String], fields: HTTPFields, body: [UInt8]?,
                  sink: LentSink) throws(TransportError) -> StartedCall {
        let (owner, loop) = try self.owner(parameters, fields: fields, body: body, sink: sink)
        return StartedCall(owner: owner, loop: loop, client: self.client, generation: owner.generation)
    }

    /// The owner of one call, placed on its loop, and that loop.
    private func owner(_ parameters: [String], fields: HTTPFields, body: [UInt8]?,
                       sink: LentSink) throws(TransportError) -> (owner: RequestOwner, loop: EventLoop) {
        guard parameters.count == self.parameterNames.count else {
            throw TransportError(.invalidRequest, phase: .request,
                                 detail: "\(parameters.count) parameter values for \(self.parameterNames.count) parameters (\(self.parameterNames.joined(separator: ", ")))")
        }
        if body != nil && !self.sendsBody {
            throw TransportError(.invalidRequest, phase: .request, detail: "a body for a template that sends none (set sendsBody)")
        }
        guard let body = body ?? (self.sendsBody ? nil : []) else {
            throw TransportError(.invalidRequest, phase: .request, detail: "the template sends a body: give one (send(body:), [] for an empty one)")
        }
        if !fields.isEmpty { try PreparedHead.check(fields, besides: self.fixedNames) }
        var prepared: PreparedRequest
        if self.observed {
            let (full, observation) = try self.preparedForObserver(parameters, fields: fields, body: body)
            sink.observation = observation
            prepared = full
        } else {
            let head = try self.head.head(parameters: parameters, fields: fields, bodyLength: body.count)
            let now = Deadline.now()
            let deadline = self.totalLimit.map { now + $0 } ?? .distantFuture
            let headDeadline = self.prepared.headTimeout.map { now + $0 } ?? .distantFuture
            if let loop = EventLoop.current, let owner = self.recycled(on: loop) {
                // Called on a loop of the client's: an earlier call's owner serves it, there.
                owner.restart(head: head, body: body, startedAt: now, deadline: deadline, headDeadline: headDeadline,
                              delivery: sink, maxBodySize: self.maxBodySize)
                return (owner, loop)
            }
            // Made from its parts: a copy of the prepared request, then each part replaced,
            // would count every reference it holds twice.
            prepared = PreparedRequest(shape: self.prepared.shape, head: head, body: body, stream: nil,
                                       deadline: deadline, startedAt: now, headDeadline: headDeadline,
                                       headTimeout: self.prepared.headTimeout, requestBody: nil)
        }
        let loop = self.client.place(&prepared)
        let owner = RequestOwner(consume prepared, client: self.client, loop: loop, delivery: .lent(sink),
                                 maxBodySize: self.maxBodySize)
        // Kept for later calls once this one is over (not with an observer: each call is then
        // prepared in full, its own shape and all).
        if !self.observed { owner.recycler = self.recyclers[loop.index] }
        return (owner, loop)
    }

    /// An earlier call's owner kept on `loop`, if `loop` is one of the client's (the one a call
    /// made on its thread runs on) and has one.
    private func recycled(on loop: EventLoop) -> RequestOwner? {
        guard loop.index < self.recyclers.count, self.recyclers[loop.index].loop === loop else { return nil }
        return self.recyclers[loop.index].take()
    }

    /// A call prepared in full, for a client whose observer sees (and may edit: a trace
    /// context) each request before it goes; and what hears how it ended.
    private func preparedForObserver(_ parameters: [String], fields: HTTPFields,
                                     body: [UInt8]) throws(TransportError) -> (PreparedRequest, (any RequestObservation)?) {
        var request = try HTTPRequest(method: self.template.method, url: try self.head.url(parameters),
                                      headerFields: self.template.headerFields)
        for field in fields { request.headerFields.append(field) }
        let observation = self.client.configuration.observer?.requestStarting(&request)
        do throws(TransportError) {
            var prepared = try self.client.prepare(request, body: self.sendsBody ? .bytes(body) : nil, options: self.template.options)
            prepared.requestBody = nil
            return (prepared, observation)
        } catch {
            observation?.ended(.failure(error))
            throw error
        }
    }
}

/// A prepared call's owner on its way: started once, cancellable from any thread.
@usableFromInline
struct StartedCall: Sendable {
    let owner: RequestOwner
    let loop: EventLoop
    let client: HTTPClient
    /// Which of the owner's calls this is (an owner serves several in turn).
    let generation: UInt32

    @usableFromInline
    func start() {
        self.client.start(self.owner, on: self.loop)
    }

    @usableFromInline
    func cancel() {
        self.owner.cancel(generation: self.generation)
    }

}
