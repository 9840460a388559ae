import HTTPTypes
import SalvoCore

/// The closed loop through a prepared call (``ClientAPI/preparedAsync`` and its siblings):
/// the same callers as the other APIs, each response lent to a handler that keeps its status
/// and body length only.
extension ClientLoad {
    /// The run's request as a template: no parameters, the run's fields, its body (if any)
    /// sent by each call.
    func template(request: HTTPRequest, timeout: Duration) -> RequestTemplate {
        var template = RequestTemplate(request.method, self.configuration.url.description, headerFields: request.headerFields,
                                       sendsBody: !self.configuration.body.isEmpty, maxBodySize: .max)
        template.options.timeout = timeout
        return template
    }

    func runPrepared(_ call: PreparedCall, group: EventLoopGroup, callers: Int, plan: Plan,
                     latencies: SharedLatencies) async -> CallerCounts {
        let body: [UInt8]? = self.configuration.body.isEmpty ? nil : self.configuration.body
        if self.api == .preparedCallbacks {
            return await Self.runChains(callers: callers) { done in
                PreparedChain(call: call, body: body, plan: plan, latencies: latencies, done: done).next()
            }
        }
        return await Self.runTasks(callers: callers, latencies: latencies,
                                   onLoops: self.api == .preparedAsyncOnLoop ? group.loops : []) { tally in
            var now = Deadline.now()
            while plan.take(at: now) {
                let began = now
                do {
                    let (status, count) = try await call.send(body: body) { ($0.status.code, $0.bodyCount) }
                    now = tally.record(status: status, bodyCount: count, since: began)
                } catch {
                    tally.record(error as? TransportError ?? TransportError(.invalidResponse))
                    now = Deadline.now()
                }
            }
        }
    }
}

/// One closed loop of prepared calls through completion handlers: each handler (on the loop
/// thread) records its response and sends the next call.
final class PreparedChain: @unchecked Sendable {
    // @unchecked Sendable: after next() is first called, the chain is touched only from its
    // calls' completion handlers, which run one at a time on one loop thread.
    private let call: PreparedCall
    private let body: [UInt8]?
    private let plan: Plan
    private let done: @Sendable (CallerCounts) -> Void
    private var tally: CallerTally
    private var began = Deadline.now()

    init(call: PreparedCall, body: [UInt8]?, plan: Plan, latencies: SharedLatencies,
         done: @escaping @Sendable (CallerCounts) -> Void) {
        self.call = call
        self.body = body
        self.plan = plan
        self.tally = CallerTally(latencies: latencies)
        self.done = done
    }

    func next(at now: Deadline = .now()) {
        guard self.plan.take(at: now) else {
            self.done(self.tally.finished())
            return
        }
        self.began = now
        self.call.send(body: self.body, handler: { ($0.status.code, $0.bodyCount) }) { result in
            switch result {
            case .success(let (status, count)):
                self.next(at: self.tally.record(status: status, bodyCount: count, since: self.began))
            case .failure(let error):
                self.tally.record(error as? TransportError ?? TransportError(.invalidResponse))
                self.next()
            }
        }
    }
}
