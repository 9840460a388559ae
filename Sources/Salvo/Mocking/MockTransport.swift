import Foundation
import Synchronization

/// A transport that answers from what you give it, and records every request: for tests and
/// previews, with no network.
///
/// ```swift
/// let mock = MockTransport()
/// mock.on(.get, "/users/7", reply: try .json(User(id: 7, name: "Ada")))
/// mock.on(.post, "/login") { request in
///     request.body.isEmpty ? .status(.badRequest) : try .json(Token(token: "t"))
/// }
/// let client = try Client(baseURL: "https://api.example.com", transport: mock)
/// _ = try await client.value(Endpoint<User>.get("/users/7"))
/// #expect(mock.requests.map(\.path) == ["/users/7"])
/// ```
///
/// Paths are matched as the server would see them (the base URL's path included), without
/// the query unless the rule's path has one. A request that matches no rule fails with
/// `.invalidRequest`, naming the method and path it looked for. A mock can also answer from
/// a directory tree (``init(directory:)``).
public final class MockTransport: Transport {
    /// A request as the mock received it.
    public struct RecordedRequest: Sendable {
        public var head: HTTPRequest
        /// The body, collected.
        public var body: [UInt8]

        public var method: HTTPRequest.Method { self.head.method }
        /// The path without the query.
        public var path: String { String((self.head.path ?? "/").split(separator: "?", maxSplits: 1).first ?? "/") }
        /// The path with the query.
        public var target: String { self.head.path ?? "/" }
        public var headerFields: HTTPFields { self.head.headerFields }
        /// The body as UTF-8 text.
        public var text: String { String(decoding: self.body, as: UTF8.self) }

        /// The body decoded from JSON.
        public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
            try decoder.decode(T.self, from: Data(self.body))
        }
    }

    /// What the mock answers.
    public struct Reply: Sendable {
        public var status: HTTPResponse.Status
        public var headerFields: HTTPFields
        public var body: [UInt8]
        /// Wait this long before answering.
        public var delay: Duration?
        /// Fail instead of answering.
        public var error: TransportError?

        public init(status: HTTPResponse.Status = .ok, headerFields: HTTPFields = [:], body: [UInt8] = [],
                    delay: Duration? = nil, error: TransportError? = nil) {
            self.status = status
            self.headerFields = headerFields
            self.body = body
            self.delay = delay
            self.error = error
        }

        /// `value` as JSON.
        public static func json<Value: Encodable>(_ value: Value, status: HTTPResponse.Status = .ok,
                                                  encoder: JSONEncoder = JSONEncoder()) throws -> Reply {
            Reply(status: status, headerFields: [.contentType: "application/json"], body: Array(try encoder.encode(value)))
        }

        /// Raw bytes.
        public static func bytes(_ bytes: [UInt8], status: HTTPResponse.Status = .ok, contentType: String? = nil) -> Reply {
            Reply(status: status, headerFields: contentType.map { [.contentType: $0] } ?? [:], body: bytes)
        }

        /// UTF-8 text.
        public static func text(_ text: String, status: HTTPResponse.Status = .ok, contentType: String = "text/plain; charset=utf-8") -> Reply {
            .bytes(Array(text.utf8), status: status, contentType: contentType)
        }

        /// A status with no body.
        public static func status(_ status: HTTPResponse.Status) -> Reply {
            Reply(status: status)
        }

        /// The contents of the file at `path` (`application/json` for `.json` files).
        public static func file(_ path: String, status: HTTPResponse.Status = .ok, contentType: String? = nil) throws -> Reply {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw TransportError(.invalidRequest, detail: "mock reply file \(path) cannot be read")
            }
            let type = contentType ?? (path.hasSuffix(".json") ? "application/json" : nil)
            return .bytes(Array(data), status: status, contentType: type)
        }

        /// A failure, as a transport would report it.
        public static func error(_ error: TransportError) -> Reply {
            Reply(error: error)
        }

        /// The same reply, after `delay`.
        public func delayed(by delay: Duration) -> Reply {
            var copy = self
            copy.delay = delay
            return copy
        }
    }

    public typealias Responder = @Sendable (RecordedRequest) async throws -> Reply

    private struct Rule {
        var method: HTTPRequest.Method?
        var path: String
        var responder: Responder

        /// Whether a request matches: the method (nil: any), and the path — with its query
        /// when the rule's path has one.
        func matches(_ request: RecordedRequest) -> Bool {
            (self.method == nil || self.method == request.method)
                && (self.path.contains("?") ? self.path == request.target : self.path == request.path)
        }
    }

    /// Failures to inject before the rules answer again (``fail(_:_:times:with:)``).
    private struct Injection {
        var rule: Rule
        var left: Int
        var error: TransportError
    }

    private struct State {
        var rules: [Rule] = []
        var injections: [Injection] = []
        var fallback: Responder?
        var requests: [RecordedRequest] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// A mock that answers every request with `reply` (add rules for some paths with
    /// ``on(_:_:reply:)``).
    public convenience init(always reply: Reply) {
        self.init()
        self.fallback { _ in reply }
    }

    /// A mock that answers from a directory tree: `GET /users/1` is answered with the file
    /// `<root>/GET/users/1.json` (a path ending in `/` looks for `index.json`), status 200,
    /// `application/json`. A missing file fails the request with a message naming the file
    /// it looked for.
    public convenience init(directory root: String) {
        self.init()
        self.fallback { request in
            var relative = request.path
            if relative.hasSuffix("/") { relative += "index" }
            let file = "\(request.method.rawValue)\(relative).json"
            let path = (root.hasSuffix("/") ? String(root.dropLast()) : root) + "/" + file
            guard FileManager.default.fileExists(atPath: path) else {
                throw TransportError(.invalidRequest, detail: "MockTransport: no file \(file) under \(root)")
            }
            return try .file(path)
        }
    }

    /// Answers `method` requests for `path` with `reply`.
    public func on(_ method: HTTPRequest.Method?, _ path: String, reply: Reply) {
        self.on(method, path) { _ in reply }
    }

    /// Answers `method` requests for `path` (nil: any method) with what `responder` returns.
    public func on(_ method: HTTPRequest.Method?, _ path: String, _ responder: @escaping Responder) {
        self.state.withLock { $0.rules.append(Rule(method: method, path: path, responder: responder)) }
    }

    /// Fails the next `count` requests for `path` (and `method`, nil: any) with `error`;
    /// then the rules — or the fallback — answer again (for retry tests). Kept apart from the
    /// rules, so it works for a path with a rule of its own, one without, or several.
    public func fail(_ method: HTTPRequest.Method?, _ path: String, times count: Int, with error: TransportError) {
        guard count > 0 else { return }
        let matcher = Rule(method: method, path: path, responder: { _ in .status(.ok) })
        self.state.withLock { $0.injections.append(Injection(rule: matcher, left: count, error: error)) }
    }

    /// Answers every request no rule matches.
    public func fallback(_ responder: @escaping Responder) {
        self.state.withLock { $0.fallback = responder }
    }

    /// Every request received, in order.
    public var requests: [RecordedRequest] { self.state.withLock { $0.requests } }

    /// Forgets the requests received so far.
    public func resetRequests() {
        self.state.withLock { $0.requests.removeAll() }
    }

    // MARK: Transport

    public func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(TransportError) -> TransportResponse {
        defer { body?.requestEnded() }
        if Task.isCancelled { throw .cancelled(.caller, phase: .request) }
        let recorded = RecordedRequest(head: request, body: try await Self.collect(body))
        let target = recorded.target
        let (responder, injected): (Responder?, TransportError?) = self.state.withLock { state in
            state.requests.append(recorded)
            if let index = state.injections.firstIndex(where: { $0.left > 0 && $0.rule.matches(recorded) }) {
                state.injections[index].left -= 1
                return (nil, state.injections[index].error)
            }
            // The latest rule that matches wins.
            let rule = state.rules.last { $0.matches(recorded) }
            return (rule?.responder ?? state.fallback, nil)
        }
        if let injected { throw injected }
        guard let responder else {
            throw TransportError(.invalidRequest, detail: "MockTransport has no reply for \(request.method.rawValue) \(target)")
        }
        let reply: Reply
        do {
            reply = try await responder(recorded)
        } catch let error as TransportError {
            throw error
        } catch is CancellationError {
            throw .cancelled(.caller, phase: .readHead)
        } catch {
            throw Self.transportError(for: error, thrownBy: "MockTransport responder for \(request.method.rawValue) \(target)")
        }
        if let delay = reply.delay {
            // A delay longer than the call allows ends as the real transport would.
            // (Zero or less is no bound, as for the engine.)
            let total = options.effectiveTimeout
            let limit = [total, TransportOptions.bound(options.headTimeout)].compactMap { $0 }.min()
            do {
                try await Task.sleep(for: min(delay, limit ?? delay))
            } catch {
                throw .cancelled(.caller, phase: .readHead)
            }
            if let limit, limit < delay {
                throw TransportError(limit == total ? .totalTimeout : .headTimeout, phase: .readHead,
                                      detail: "MockTransport: the reply was delayed by \(delay)")
            }
        }
        if let error = reply.error { throw error }
        var head = HTTPResponse(status: reply.status, headerFields: reply.headerFields)
        if head.headerFields[.contentLength] == nil, request.method != .head {
            head.headerFields[.contentLength] = String(reply.body.count)
        }
        return TransportResponse(head: head, body: .bytes(request.method == .head ? [] : reply.body))
    }

    /// The request body as bytes: a stream is run to its end.
    static func collect(_ body: HTTPBody?) async throws(TransportError) -> [UInt8] {
        switch body?.content {
        case nil: return []
        case .bytes(let bytes): return bytes
        case .stream(_, _, let produce):
            let collected = Mutex<[UInt8]>([])
            do {
                try await produce(HTTPBodyWriter { chunk in collected.withLock { $0 += chunk } })
            } catch let error as TransportError {
                throw error
            } catch {
                throw TransportError.bodySource(threw: error)
            }
            return collected.withLock { $0 }
        }
    }
}
