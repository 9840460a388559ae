// ahc-load: closed-loop load on async-http-client's async/await API.
//
//   ahc-load --url URL --connections N --duration SECONDS [--threads 1] [--decode-json]
//
// With --decode-json every body is decoded with a JSONDecoder into the same struct as
// typed-load's (the benchmark's /user.json); a body that does not decode is an error.
//
// N concurrent tasks share one HTTPClient (pool soft limit N per host). Each task
// sends a GET, collects the whole body, and repeats until the duration is over.
// At the end it prints exactly one JSON line on stdout:
//   {"requests":R,"errors":E,"bytes":B,"seconds":S}
// requests = responses with a 2xx/3xx status; errors = thrown errors and other
// statuses; bytes = body bytes of counted responses; seconds = wall time from the
// first request until the last task finished. TLS certificates are not verified
// (like wrk), so a self-signed test server works. Exit status 1 if no request succeeded.
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOPosix
import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Options {
    var url = ""
    var connections = 16
    var duration = 5.0
    var threads = 1
    var decodeJSON = false

    static let usage = "usage: ahc-load --url URL --connections N --duration SECONDS [--threads 1] [--decode-json]"

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        func fail(_ message: String) -> Never {
            printError("ahc-load: \(message)\n\(usage)\n")
            exit(2)
        }
        func value(for flag: String) -> String {
            guard let v = rest.popFirst() else { fail("\(flag) needs a value") }
            return v
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--url":
                options.url = value(for: flag)
            case "--connections", "-c":
                guard let n = Int(value(for: flag)), n > 0 else { fail("bad --connections") }
                options.connections = n
            case "--duration", "-d":
                var text = value(for: flag)
                if text.hasSuffix("s") { text.removeLast() }
                guard let d = Double(text), d > 0 else { fail("bad --duration") }
                options.duration = d
            case "--threads", "-t":
                guard let n = Int(value(for: flag)), n > 0 else { fail("bad --threads") }
                options.threads = n
            case "--decode-json":
                options.decodeJSON = true
            case "--help", "-h":
                print(usage)
                exit(0)
            default:
                fail("unknown argument \(flag)")
            }
        }
        if options.url.isEmpty { fail("--url is required") }
        return options
    }
}

func printError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = bytes.withUnsafeMutableBytes { buffer in
        #if canImport(Glibc)
        Glibc.write(2, buffer.baseAddress, buffer.count)
        #else
        Darwin.write(2, buffer.baseAddress, buffer.count)
        #endif
    }
}

/// The benchmark's /user.json, as typed-load decodes it too.
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

struct Tally: Sendable {
    var requests = 0
    var errors = 0
    var bytes = 0

    static func + (a: Tally, b: Tally) -> Tally {
        Tally(requests: a.requests + b.requests, errors: a.errors + b.errors, bytes: a.bytes + b.bytes)
    }
}

/// One closed-loop worker: request, collect the body, repeat until `deadline`.
/// `reportsErrors`: print the first error to stderr (one worker does, to avoid N copies).
func worker(client: HTTPClient, url: String, deadline: ContinuousClock.Instant, reportsErrors: Bool,
            decoder: JSONDecoder?) async -> Tally {
    let maxBody = 64 << 20
    var tally = Tally()
    let request = HTTPClientRequest(url: url)
    while ContinuousClock.now < deadline {
        do {
            let response = try await client.execute(request, timeout: .seconds(15))
            let body = try await response.body.collect(upTo: maxBody)
            if let decoder {
                let profile = try decoder.decode(Profile.self, from: body)  // NIOFoundationCompat, as AHC users decode
                if profile.id == 0 { tally.errors += 1 }
            }
            if (200..<400).contains(response.status.code) {
                tally.requests += 1
                tally.bytes += body.readableBytes
            } else {
                tally.errors += 1
            }
        } catch {
            tally.errors += 1
            if reportsErrors && tally.errors == 1 {
                printError("ahc-load: first error: \(error)\n")
            }
        }
    }
    return tally
}

@main
struct AHCLoad {
    static func main() async throws {
        let options = Options.parse(Array(CommandLine.arguments.dropFirst()))

        let group = MultiThreadedEventLoopGroup(numberOfThreads: options.threads)
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60),
            concurrentHTTP1ConnectionsPerHostSoftLimit: options.connections
        )
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        configuration.tlsConfiguration = tls
        let client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)

        let decoder = JSONDecoder()
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + .nanoseconds(Int64(options.duration * 1e9))
        let total = await withTaskGroup(of: Tally.self) { tasks in
            for index in 0..<options.connections {
                tasks.addTask {
                    await worker(client: client, url: options.url, deadline: deadline, reportsErrors: index == 0,
                                 decoder: options.decodeJSON ? decoder : nil)
                }
            }
            var sum = Tally()
            for await tally in tasks { sum = sum + tally }
            return sum
        }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18

        try await client.shutdown()
        try await group.shutdownGracefully()

        print("{\"requests\":\(total.requests),\"errors\":\(total.errors),\"bytes\":\(total.bytes),\"seconds\":\(seconds)}")
        if total.requests == 0 { exit(1) }  // nothing succeeded: say so in the exit status too
    }
}
