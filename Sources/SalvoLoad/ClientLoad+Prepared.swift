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
                CallbackChain(PreparedSender(call: call, body: body), plan: plan, latencies: latencies, done: done).next()
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

/// A prepared call with a completion handler, its response lent to a handler that keeps
/// the status and body length.
struct PreparedSender: ChainSender {
    let call: PreparedCall
    let body: [UInt8]?

    func send(_ completion: @escaping @Sendable (Result<(status: Int, bodyCount: Int), any Error>) -> Void) {
        self.call.send(body: self.body, handler: { (status: $0.status.code, bodyCount: $0.bodyCount) }, completion: completion)
    }
}
