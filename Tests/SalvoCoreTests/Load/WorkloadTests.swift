import SalvoTestSupport
import Foundation
import HTTPTypes
import Synchronization
import Testing
@testable import SalvoCore
@testable import SalvoLoad

/// Scripted runs (``Workload``) against nginx and the demo API: requests built per call,
/// checks counted, scenarios weighted, script errors counted and never sent, setup and
/// teardown, think time and a constant rate. Each run is bounded by a request count.
@Suite struct WorkloadTests {
    func configuration(_ url: String, _ adjust: (inout LoadConfiguration) -> Void = { _ in }) throws -> LoadConfiguration {
        var configuration = LoadConfiguration(url: try RequestURL(url))
        configuration.threads = 2
        configuration.connections = 4
        configuration.requestLimit = 800
        configuration.duration = .seconds(60)
        adjust(&configuration)
        return configuration
    }

    struct Counter { var calls = 0 }

    @Test func checksAndScenariosAreCounted() async throws {
        let nginx = try await Shared.nginx.get()
        let workload = Workload<Void, Counter>(user: { _ in Counter() }, scenarios: [
            Scenario("small", weight: 3, checks: [
                .status(200),
                .field(.contentType, equals: "text/plain"),
                .body(contains: "hello, world"),
                Check("a check that fails") { $0.statusCode == 418 },
            ]) { counter, request in
                counter.calls += 1
                request.path = "/small"
            },
            Scenario("missing", checks: [.status(404), .field(.contentType, contains: "html")]) { _, request in
                request.path = "/status/404"
            },
        ])
        let statistics = try await workload.run(try self.configuration(nginx.url("/")))
        let script = try #require(statistics.script)
        #expect(statistics.requests == 800)
        let small = script.scenarios["small"] ?? 0
        let missing = script.scenarios["missing"] ?? 0
        #expect(small + missing == 800)
        #expect(statistics.statusCounts == [200: small, 404: missing])
        // 3 to 1, drawn per call: a quarter, give or take.
        #expect((120...280).contains(missing), "missing: \(missing)")
        #expect(script.checks["status is 200"] == .init(passed: small, failed: 0))
        #expect(script.checks["content-type is text/plain"] == .init(passed: small, failed: 0))
        #expect(script.checks["body contains hello, world"] == .init(passed: small, failed: 0))
        #expect(script.checks["a check that fails"] == .init(passed: 0, failed: small))
        #expect(script.checks["status is 404"] == .init(passed: missing, failed: 0))
        #expect(script.checks["content-type contains html"] == .init(passed: missing, failed: 0))
        #expect(script.scriptErrors == 0 && !script.allPassed)
        #expect(statistics.connectionsOpened == 4 && statistics.errors.total == 0)
    }

    /// What a scenario cannot send is counted as a script error, and nothing goes out for
    /// it; the run ends at its count all the same.
    @Test func scriptErrorsAreCountedAndNotSent() async throws {
        struct Refused: Error {}
        let nginx = try await Shared.nginx.get()
        let workload = Workload<Void, Counter>(user: { _ in Counter() }, scenarios: [
            Scenario("flaky", checks: [.status(200)]) { counter, request in
                counter.calls += 1
                if counter.calls % 2 == 0 { throw Refused() }
                request.path = "/small"
            },
            Scenario("space") { _, request in request.path = "/a b" },
            Scenario("host") { _, request in request.headerFields[HTTPField.Name("Host")!] = "elsewhere" },
            Scenario("engine field") { _, request in request.headerFields[.contentLength] = "5" },
            Scenario("relative") { _, request in request.path = "small" },
        ])
        let statistics = try await workload.run(try self.configuration(nginx.url("/")) { $0.requestLimit = 500 })
        let script = try #require(statistics.script)
        #expect(statistics.requests + script.scriptErrors == 500)
        #expect(statistics.statusCounts == [200: statistics.requests])
        #expect(script.scenarios.keys.sorted() == ["engine field", "flaky", "host", "relative", "space"])
        #expect(script.scenarios["flaky"] == statistics.requests)
        #expect(["space", "host", "engine field", "relative"].allSatisfy { script.scenarios[$0] == 0 })
        #expect(script.scriptErrors > statistics.requests)
        #expect(script.firstScriptError?.hasPrefix("scenario \"") == true)
        #expect(statistics.errors.total == 0)
    }

    /// Set-up logs in once and every user sends the token; each response is matched against
    /// the request its user built (the demo API echoes it).
    @Test func setupSharesATokenAndEachCallIsItsOwn() async throws {
        struct Mismatch: Error {}
        struct Echoer { let token: String; let index: Int; var sent = 0 }
        let api = try await APIServer.start()
        let tornDown = Atomic<Int>(0)
        let workload = Workload<String, Echoer>(
            setup: { context in
                let login = try HTTPRequest(method: .post, url: context.url("/login"))
                let response = try await context.client.execute(login, body: .bytes(Array(#"{"username":"u","password":"secret"}"#.utf8)))
                return String(decoding: response.body, as: UTF8.self).contains("t-u") ? "t-u" : "none"
            },
            teardown: { _, token in tornDown.store(token == "t-u" ? 1 : 2, ordering: .relaxed) },
            user: { index, token in Echoer(token: token, index: index) },
            scenarios: [
                Scenario("echo", method: .post, checks: [.status(200), .body(contains: "Bearer t-u")]) { echoer, request in
                    echoer.sent += 1
                    request.path = "/echo/\(echoer.index)/\(echoer.sent)?q=1"
                    request.headerFields[.authorization] = "Bearer \(echoer.token)"
                    request.setBody("call \(echoer.sent)")
                } response: { echoer, response in
                    let text = response.bodyText
                    guard text.contains("\"/echo/\(echoer.index)/\(echoer.sent)\""), text.contains("call \(echoer.sent)") else { throw Mismatch() }
                },
            ])
        let statistics = try await workload.run(try self.configuration(api.baseURL) {
            $0.requestLimit = 60
            $0.connections = 3
            $0.threads = 1
        })
        let script = try #require(statistics.script)
        #expect(statistics.requests == 60 && statistics.statusCounts == [200: 60])
        #expect(script.scriptErrors == 0, "\(script.firstScriptError ?? "")")
        #expect(script.allPassed && script.checks["body contains Bearer t-u"]?.passed == 60)
        #expect(tornDown.load(ordering: .relaxed) == 1)
    }

    @Test func setupAndTeardownFailuresSayWhich() async throws {
        struct Broken: Error {}
        let nginx = try await Shared.nginx.get()
        let scenarios = [Scenario<Void>("small") { _, request in request.path = "/small" }]
        let failingSetup = Workload<Void, Void>(setup: { _ in throw Broken() }, user: { _, _ in }, scenarios: scenarios)
        let configuration = try self.configuration(nginx.url("/")) { $0.requestLimit = 10 }
        do {
            _ = try await failingSetup.run(configuration)
            Issue.record("a failed setup ran the load")
        } catch {
            #expect(error.phase == .setup && error.statistics == nil && error.underlying is Broken)
        }
        let failingTeardown = Workload<Void, Void>(setup: { _ in }, teardown: { _, _ in throw Broken() }, user: { _, _ in }, scenarios: scenarios)
        do {
            _ = try await failingTeardown.run(configuration)
            Issue.record("a failed teardown went unsaid")
        } catch {
            #expect(error.phase == .teardown && error.statistics?.requests == 10)
        }
    }

    @Test func workloadsThatCannotRunAreRefused() async throws {
        let nginx = try await Shared.nginx.get()
        let one = Scenario<Void>("small") { _, _ in }
        let thinking = Scenario<Void>("thinking", thinkTime: .fixed(.milliseconds(5))) { _, _ in }
        let cases: [(Workload<Void, Void>, (inout LoadConfiguration) -> Void)] = [
            (Workload(scenarios: []), { _ in }),
            (Workload(scenarios: [Scenario("none", weight: 0) { _, _ in }]), { _ in }),
            (Workload(scenarios: [Scenario("huge", weight: Int.max / 2 + 1) { _, _ in }, Scenario("huge too", weight: Int.max / 2 + 1) { _, _ in }]), { _ in }),
            (Workload(scenarios: [one]), { $0.pipeline = 4 }),
            (Workload(scenarios: [one]), { $0.http2 = true; $0.streams = 4 }),
            (Workload(scenarios: [one]), { $0.method = .post }),
            (Workload(scenarios: [thinking]), { $0.rate = 100 }),
            (Workload(scenarios: [Scenario("forever", thinkTime: .fixed(.seconds(7200))) { _, _ in }]), { _ in }),
        ]
        for (workload, adjust) in cases {
            let configuration = try self.configuration(nginx.url("/"), adjust)
            do {
                _ = try await workload.run(configuration)
                Issue.record("ran a workload it should refuse")
            } catch {
                #expect(error.phase == .configuration)
            }
        }
    }

    /// A user thinking 40 ms between calls makes about 25 a second.
    @Test func thinkTimePacesAUser() async throws {
        let nginx = try await Shared.nginx.get()
        let workload = Workload(scenarios: [Scenario("slow", thinkTime: .fixed(.milliseconds(40))) { _, request in request.path = "/small" }])
        let statistics = try await workload.run(try self.configuration(nginx.url("/")) {
            $0.requestLimit = nil
            $0.duration = .milliseconds(600)
            $0.connections = 1
            $0.threads = 1
        })
        // 15 without the machine's own delays; a busy machine makes fewer (2 seen when the
        // whole suite ran beside it), never more.
        #expect((1...16).contains(statistics.requests), "\(statistics.requests) calls in 0.6 s")
    }

    /// At a constant rate each call goes out on schedule, as `salvo bench --rate` does.
    @Test func constantRateSchedulesTheCalls() async throws {
        let nginx = try await Shared.nginx.get()
        let workload = Workload(scenarios: [Scenario("small", checks: [.status(200)]) { _, request in request.path = "/small" }])
        let statistics = try await workload.run(try self.configuration(nginx.url("/")) {
            $0.requestLimit = 100
            $0.rate = 400
            $0.connections = 2
            $0.threads = 1
        })
        #expect(statistics.requests == 100)
        // 100 calls at 400/s: a quarter of a second, not the few milliseconds of a closed loop.
        #expect(statistics.elapsedSeconds > 0.18, "\(statistics.elapsedSeconds)")
    }

    /// HEAD has no body whatever its Content-Length says; a body larger than the run keeps
    /// fails the checks that read it, and only those.
    @Test func headAndBodyLimits() async throws {
        let nginx = try await Shared.nginx.get()
        var workload = Workload(scenarios: [
            Scenario("head", method: .head, checks: [.status(200), .field(.contentLength, equals: "1024")]) { _, request in request.path = "/1k" },
            Scenario("whole", checks: [.status(200), Check("all of it", readsBody: true) { $0.isBodyKept && $0.withBody { $0.count } == 1024 }]) { _, request in
                request.path = "/1k"
            },
        ])
        workload.bodyLimit = 100
        let statistics = try await workload.run(try self.configuration(nginx.url("/")) { $0.requestLimit = 200 })
        let script = try #require(statistics.script)
        #expect(statistics.requests == 200 && statistics.statusCounts == [200: 200])
        #expect(script.checks["status is 200"]?.failed == 0)
        #expect(script.checks["content-length is 1024"] == .init(passed: script.scenarios["head"] ?? -1, failed: 0))
        #expect(script.checks["all of it"] == .init(passed: 0, failed: script.scenarios["whole"] ?? -1))
    }

    /// Fields the engine tracks (Location, Content-Length…) are found through the scripted
    /// parser's records, by check and by hook; a hook keeps the body by default.
    @Test func trackedFieldsAndHooks() async throws {
        struct WrongPlace: Error {}
        let nginx = try await Shared.nginx.get()
        let workload = Workload(scenarios: [
            Scenario("redirect", checks: [.status(302), .field(.location), .field(.contentLength)]) { _, request in
                request.path = "/redirect"
            } response: { _, response in
                guard response.value(of: .location)?.hasSuffix("/small") == true, response.number(of: .contentLength) == response.bodyCount,
                      response.isBodyKept, response.bodyCount > 0 else { throw WrongPlace() }
            },
        ])
        let statistics = try await workload.run(try self.configuration(nginx.url("/")) { $0.requestLimit = 100 })
        let script = try #require(statistics.script)
        #expect(statistics.statusCounts == [302: 100])
        #expect(script.allPassed, "\(script.checks) \(script.firstScriptError ?? "")")
        #expect(script.checks["location is present"]?.passed == 100 && script.checks["content-length is present"]?.passed == 100)
    }

    /// A server that answers before it has read a large body — and closes (413 over the test
    /// nginx's 64 MiB limit), or keeps reading it (`return 200` at 4 MiB): the rest of the
    /// request is never written over by the next call; a new connection carries on.
    @Test(arguments: [(65 << 20, 413), (4 << 20, 200)])
    func earlyAnswersToLargeBodies(_ size: Int, _ status: Int) async throws {
        let nginx = try await Shared.nginx.get()
        let large = [UInt8](repeating: 0x61, count: size)
        let workload = Workload(scenarios: [
            Scenario("large", method: .post, checks: [.status(status)]) { _, request in
                request.path = "/small"
                request.body = large
            },
        ])
        let statistics = try await workload.run(try self.configuration(nginx.url("/")) {
            $0.requestLimit = 12
            $0.connections = 2
            $0.threads = 1
        })
        let script = try #require(statistics.script)
        #expect(statistics.requests == 12 && statistics.statusCounts == [status: 12])
        #expect(script.scriptErrors == 0 && script.checks["status is \(status)"]?.passed == 12)
        #expect(statistics.errors.protocol == 0)
    }

    /// Calls that get no answer in time are counted by scenario and fail its checks.
    @Test func unansweredCallsFailTheirChecks() async throws {
        let api = try await APIServer.start()
        let workload = Workload(scenarios: [
            Scenario("slow", checks: [.status(200)]) { _, request in request.path = "/slow?ms=2000" },
        ])
        let statistics = try await workload.run(try self.configuration(api.baseURL) {
            $0.requestLimit = nil
            $0.duration = .milliseconds(900)
            $0.timeout = .milliseconds(250)
            $0.connections = 1
            $0.threads = 1
        })
        let script = try #require(statistics.script)
        let unanswered = script.unanswered["slow"] ?? 0
        #expect(statistics.requests == 0 && unanswered >= 1 && statistics.errors.timeout == unanswered)
        #expect(script.checks["status is 200"] == .init(passed: 0, failed: unanswered))
    }

    /// Heads and bodies as a server may cut or shape them reach the checks whole: interim
    /// responses before the final one, a head sent a byte at a time (with trailers), a head
    /// larger than a read, a body that ends with the connection, a folded field.
    @Test(arguments: [
        ("/continue", "Content-Length", "5", "final"),
        ("/one-byte", "Transfer-Encoding", "chunked", "hello world"),
        ("/many-headers?n=300&pad=200", "X-Header-299", "value-299" + String(repeating: "p", count: 200), "ok"),
        ("/close-delimited", "Content-Type", nil, "close-delimited body"),
        ("/raw?b=SFRUUC8xLjEgMjAwIE9LDQpYLUZvbGRlZDogb25lDQogdHdvDQpDb250ZW50LUxlbmd0aDogMg0KDQpvaw&then=keep", "X-Folded", "one two", "ok"),
    ] as [(String, String, String?, String)])
    func shapedResponsesReachTheChecks(_ path: String, _ field: String, _ value: String?, _ body: String) async throws {
        let faults = try await Shared.faults.get()
        let name = try #require(HTTPField.Name(field))
        var checks: [Check] = [.status(200), .body(contains: body)]
        if let value { checks.append(.field(name, equals: value)) }
        let workload = Workload(scenarios: [Scenario("shaped", checks: checks) { _, request in request.path = path }])
        let statistics = try await workload.run(try self.shaped(faults, calls: 6))
        let script = try #require(statistics.script)
        #expect(statistics.requests == 6 && statistics.statusCounts == [200: 6])
        #expect(script.allPassed, "\(script.checks)")
    }

    /// A run of `calls` against the fault server, whose shaped responses may be slow: two users
    /// on one loop, a generous timeout.
    func shaped(_ faults: FaultServer, calls: Int) throws -> LoadConfiguration {
        try self.configuration(faults.url("/")) {
            $0.requestLimit = calls
            $0.connections = 2
            $0.threads = 1
            $0.timeout = .seconds(10)
        }
    }

    /// Only the fields someone reads are recorded: the usual checks their names' first
    /// values (the head's walk may stop there), a check or hook that names its fields all of
    /// their values, one that names none everything.
    @Test func onlyTheFieldsReadAreRecorded() async throws {
        let faults = try await Shared.faults.get()
        // X-A: 1, X-B: 2, X-A: 3, Content-Length: 2, base64url.
        let path = "/raw?b=SFRUUC8xLjEgMjAwIE9LDQpYLUE6IDENClgtQjogMg0KWC1BOiAzDQpDb250ZW50LUxlbmd0aDogMg0KDQpvaw&then=keep"
        let a = HTTPField.Name("X-A")!, b = HTTPField.Name("X-B")!
        let workload = Workload(scenarios: [
            Scenario("usual", checks: [
                .field(a, equals: "1"),
                Check("nothing else", readsFields: []) { $0.value(of: b) == nil && $0.values(of: a) == "1" },
            ]) { _, request in request.path = path },
            Scenario("named", checks: [
                Check("every value of what it names", readsFields: [a]) { $0.values(of: a) == "1, 3" && $0.value(of: b) == nil },
            ]) { _, request in request.path = path },
            Scenario("hook", checks: [.field(b)], readsFields: [a]) { _, request in request.path = path } response: { _, response in
                guard response.values(of: a) == "1, 3", response.value(of: b) == "2", response.value(of: .contentLength) == nil else {
                    throw ScriptFailure("the hook saw other fields")
                }
            },
            Scenario("anything", checks: [
                Check("all of them") { $0.values(of: a) == "1, 3" && $0.value(of: .contentLength) == "2" },
            ]) { _, request in request.path = path },
        ])
        let statistics = try await workload.run(try self.shaped(faults, calls: 40))
        let script = try #require(statistics.script)
        #expect(statistics.requests == 40 && script.scriptErrors == 0, "\(script.firstScriptError ?? "")")
        #expect(script.allPassed && script.checks.count == 5, "\(script.checks)")
    }

    @Test func commandExitsAsDocumented() async throws {
        let nginx = try await Shared.nginx.get()
        let passing = Workload(scenarios: [Scenario("small", checks: [.status(200)]) { _, request in request.path = "/small" }])
        let failing = Workload(scenarios: [Scenario("small", checks: [.status(201)]) { _, request in request.path = "/small" }])
        let arguments = ["-n", "20", "-c", "1", "-t", "1"]
        #expect(await passing.command(url: nginx.url("/"), arguments: arguments + ["--strict"]) == 0)
        #expect(await failing.command(url: nginx.url("/"), arguments: arguments) == 0)
        #expect(await failing.command(url: nginx.url("/"), arguments: arguments + ["--strict"]) == 1)
        #expect(await passing.command(url: nil, arguments: arguments) == 2)
        #expect(await passing.command(url: nginx.url("/"), arguments: ["--no-such-option"]) == 2)
        #expect(await passing.command(url: nginx.url("/"), arguments: ["-d", "soon"]) == 2)
    }
}
