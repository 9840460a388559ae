// typed-load: closed-loop load through Salvo's typed client, or through the engine's raw
// API with a JSONDecoder, decoding every response into the same struct as ahc-load's
// --decode-json. Run by ../compare.py for the "json" scenarios.
//
//   typed-load --url URL --connections N --duration SECONDS --mode typed|typed-mw5|raw
//   typed-load --url URL --duration SECONDS --mode decode
//
// --mode typed-mw5 is the typed client with five middleware that only pass the request on:
// what the middleware chain costs.
// --mode chain sends through an in-process transport that answers at once with the fetched
// document (no network), with no middleware and with five, and prints the nanoseconds per
// call of each: the typed layer's own cost and the chain's.
// --mode decode fetches the document once, then only decodes it, in a loop, with Salvo's
// decoder and with JSONDecoder, and prints the nanoseconds per decode of each.
// --mode cache sends calls one after another through three clients — no cache (each call a
// round trip to the server), a memory cache and a disk cache holding a fresh copy of the
// document — and prints the CPU time (user+sys of the process) per call of each and the
// hits' ratios to the round trip: what a cache hit costs next to going to the network.
//
// One engine client with one event loop thread (like the other clients' -t1), N tasks.
// Prints one JSON line: {"requests":R,"errors":E,"bytes":B,"seconds":S}; requests count
// decoded 2xx responses; bytes, their bodies.
import Foundation
import Salvo
import SalvoCore

/// The ~1 KB document the benchmark's nginx serves as /user.json (see compare.py).
struct Profile: Decodable, Sendable {
    struct Address: Decodable, Sendable {
        var street: String
        var city: String
        var postcode: String
        var country: String
    }
    struct Project: Decodable, Sendable {
        var id: Int
        var title: String
        var stars: Int
        var updated: String
        var archived: Bool
    }
    var id: Int
    var name: String
    var email: String
    var active: Bool
    var score: Double
    var tags: [String]
    var address: Address
    var projects: [Project]
}

/// The document of `--mode chain` with `CHAIN_TINY=1`.
struct Tiny: Decodable, Sendable {
    var id: Int
    var name: String
}

struct Options {
    var url = ""
    var connections = 64
    var duration = 5.0
    var mode = "typed"

    static let usage = "usage: typed-load --url URL --connections N --duration SECONDS --mode typed|typed-mw5|raw|decode|chain|cache"

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data("typed-load: \(message)\n\(usage)\n".utf8))
            exit(2)
        }
        func value(for flag: String) -> String {
            guard let value = rest.popFirst() else { fail("\(flag) needs a value") }
            return value
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--url": options.url = value(for: flag)
            case "--connections", "-c":
                guard let count = Int(value(for: flag)), count > 0 else { fail("bad --connections") }
                options.connections = count
            case "--duration", "-d":
                guard let seconds = Double(value(for: flag).replacingOccurrences(of: "s", with: "")), seconds > 0 else {
                    fail("bad --duration")
                }
                options.duration = seconds
            case "--mode":
                options.mode = value(for: flag)
                guard ["typed", "typed-mw1", "typed-mw5", "raw", "decode", "chain", "cache"].contains(options.mode) else { fail("bad --mode") }
            default: fail("unknown argument \(flag)")
            }
        }
        if options.url.isEmpty { fail("--url is required") }
        return options
    }
}

/// A middleware that only passes the request on.
struct PassOn: Middleware {
    func intercept(_ request: ClientRequest, next: MiddlewareNext) async throws(ClientError) -> ClientResponse {
        try await next(request)
    }
}

/// Answers every request at once with the same document.
struct Canned: Transport {
    let document: [UInt8]
    func send(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions) async throws(TransportError) -> TransportResponse {
        TransportResponse(head: HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]), body: .bytes(self.document))
    }
    func sendCollecting(_ request: HTTPRequest, body: HTTPBody?, options: TransportOptions,
                        maxBodySize: Int) async throws(TransportError) -> CollectedResponse {
        CollectedResponse(head: HTTPResponse(status: .ok, headerFields: [.contentType: "application/json"]), body: self.document)
    }
}

struct Tally: Sendable {
    var requests = 0
    var errors = 0
    var bytes = 0
}

@main
struct TypedLoad {
    static func main() async throws {
        let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
        guard let split = options.url.range(of: "://").map({ options.url[$0.upperBound...] }),
              let slash = split.firstIndex(of: "/") else {
            FileHandle.standardError.write(Data("typed-load: the URL needs a path\n".utf8))
            exit(2)
        }
        let base = String(options.url[..<slash])
        let path = String(options.url[slash...])

        var configuration = HTTPClient.Configuration()
        configuration.threads = 1
        configuration.maxConnectionsPerHost = options.connections
        let engine = try HTTPClient(configuration: configuration)
        let middleware: [any Middleware] = Array(repeating: PassOn(), count: options.mode == "typed-mw5" ? 5 : options.mode == "typed-mw1" ? 1 : 0)
        let typed = try Client(baseURL: base, transport: engine, configuration: .init(middleware: middleware))
        let endpoint = Endpoint<Profile>.get(path)
        let request = try HTTPRequest(method: .get, url: options.url)
        let decoder = JSONDecoder()
        if options.mode == "chain" {
            // CHAIN_TINY=1: a two-field document instead of the fetched one, so that what is
            // measured is the client and its chain rather than the decoder.
            let tiny = ProcessInfo.processInfo.environment["CHAIN_TINY"] == "1"
            let document = tiny ? Array(#"{"id":7,"name":"x"}"#.utf8) : try await engine.execute(request).body
            engine.shutdown()
            let counts = ProcessInfo.processInfo.environment["CHAIN_ONLY"].flatMap { Int($0) }.map { [$0] } ?? [0, 1, 5, 0, 1, 5]
            for count in counts {
                let client = try Client(baseURL: base, transport: Canned(document: document),
                                        configuration: .init(middleware: Array(repeating: PassOn(), count: count)))
                let slice = options.duration / Double(counts.count)
                let ns = tiny ? try await Self.timeCalls(client, Endpoint<Tiny>.get(path), seconds: slice)
                    : try await Self.timeCalls(client, endpoint, seconds: slice)
                print("{\"middleware\":\(count),\"ns_per_call\":\(Int(ns))}")
            }
            return
        }
        if options.mode == "cache" {
            try await CacheCost.run(engine: engine, base: base, path: path, url: options.url, seconds: options.duration)
            engine.shutdown()
            return
        }
        if options.mode == "decode" {
            let document = try await engine.execute(request).body
            engine.shutdown()
            let coders = Coders()
            func measure(_ decode: () throws -> Profile) rethrows -> Double {
                let start = ContinuousClock.now
                let end = start + .nanoseconds(Int64(options.duration * 1e9 / 2))
                var count = 0
                while ContinuousClock.now < end {
                    for _ in 0..<100 { _ = try decode() }
                    count += 100
                }
                let elapsed = ContinuousClock.now - start
                return (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9) / Double(count)
            }
            let salvo = try measure { try coders.decodeJSON(Profile.self, from: document) }
            let foundation = try measure { try decoder.decode(Profile.self, from: Data(document)) }
            print("{\"salvo_ns\":\(Int(salvo)),\"foundation_ns\":\(Int(foundation)),\"bytes\":\(document.count)}")
            return
        }

        let started = ContinuousClock.now
        let deadline = started + .nanoseconds(Int64(options.duration * 1e9))
        let total = await withTaskGroup(of: Tally.self) { tasks in
            for _ in 0..<options.connections {
                tasks.addTask {
                    var tally = Tally()
                    while ContinuousClock.now < deadline {
                        if options.mode != "raw" {
                            do {
                                let (profile, response) = try await typed.valueAndResponse(endpoint)
                                tally.requests += profile.id == 0 ? 0 : 1
                                tally.bytes += response.body.count
                            } catch {
                                tally.errors += 1
                            }
                        } else {
                            do {
                                let response = try await engine.execute(request)
                                guard response.status.kind == .successful else {
                                    tally.errors += 1
                                    continue
                                }
                                let profile = try decoder.decode(Profile.self, from: Data(response.body))
                                tally.requests += profile.id == 0 ? 0 : 1
                                tally.bytes += response.body.count
                            } catch {
                                tally.errors += 1
                            }
                        }
                    }
                    return tally
                }
            }
            var sum = Tally()
            for await part in tasks {
                sum.requests += part.requests
                sum.errors += part.errors
                sum.bytes += part.bytes
            }
            return sum
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        engine.shutdown()
        print("{\"requests\":\(total.requests),\"errors\":\(total.errors),\"bytes\":\(total.bytes),\"seconds\":\(seconds)}")
        if total.requests == 0 { exit(1) }
    }

    /// Nanoseconds per `client.value(endpoint)`, called in a loop for `seconds` off the main
    /// actor, as a server's tasks are (no hop per call).
    static func timeCalls<T: Decodable & Sendable>(_ client: Client, _ endpoint: Endpoint<T>, seconds: Double) async throws -> Double {
        try await Task.detached {
            let start = ContinuousClock.now
            let end = start + .nanoseconds(Int64(seconds * 1e9))
            var calls = 0
            while ContinuousClock.now < end {
                for _ in 0..<100 { _ = try await client.value(endpoint) }
                calls += 100
            }
            let elapsed = ContinuousClock.now - start
            return (Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9) / Double(calls)
        }.value
    }
}
