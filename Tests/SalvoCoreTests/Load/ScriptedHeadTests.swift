import Foundation
import HTTPTypes
import Testing
@testable import SalvoCore
@testable import SalvoLoad
import SalvoTransport

/// A scripted call's request as written on the wire, and what is refused, without sockets.
@Suite struct ScriptedHeadTests {
    func head(_ url: String = "http://127.0.0.1:8080/", _ adjust: (inout LoadConfiguration) -> Void = { _ in }) throws -> ScriptedHead {
        var configuration = LoadConfiguration(url: try RequestURL(url))
        configuration.headerFields[.accept] = "text/plain"
        adjust(&configuration)
        return try ScriptedHead(configuration: configuration)
    }

    func text(_ head: ScriptedHead, _ request: ScriptedRequest) -> (String, String?) {
        let buffer = ScriptBuffer(capacity: 16)
        guard case .failure(let failure) = head.encode(request, into: buffer) else {
            return (String(decoding: buffer.bytes, as: UTF8.self), nil)
        }
        return (String(decoding: buffer.bytes, as: UTF8.self), failure.message)
    }

    @Test func callsAreWrittenAroundTheRunsFields() throws {
        let head = try self.head()
        var request = ScriptedRequest(method: .get, path: "/items/7?full=1")
        request.headerFields[.authorization] = "Bearer x"
        #expect(self.text(head, request) == ("GET /items/7?full=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: text/plain\r\n"
            + "User-Agent: salvo-bench/0.1\r\nAuthorization: Bearer x\r\n\r\n", nil))
        var post = ScriptedRequest(method: .post, path: "/cart")
        #expect(self.text(head, post).0.hasSuffix("User-Agent: salvo-bench/0.1\r\nContent-Length: 0\r\n\r\n"))
        post.setBody("{\"id\":1}")
        #expect(self.text(head, post).0.hasSuffix("Content-Length: 8\r\n\r\n{\"id\":1}"))
        #expect(self.text(head, ScriptedRequest(method: .options, path: "*")).1 == nil)
    }

    @Test func aForwardingProxyGetsTheAbsoluteForm() throws {
        let head = try self.head("http://origin.test:81/") { $0.proxy = try? HTTPProxy("http://u:p@127.0.0.1:3128") }
        let (text, failure) = self.text(head, ScriptedRequest(method: .get, path: "/x"))
        #expect(failure == nil)
        #expect(text.hasPrefix("GET http://origin.test:81/x HTTP/1.1\r\n"))
        #expect(text.contains("Proxy-Authorization: Basic dTpw\r\n"))
        #expect(self.text(head, ScriptedRequest(method: .options, path: "*")).1 != nil, "OPTIONS * has no absolute form")
    }

    @Test(arguments: ["", "x", "/a b", "/a\u{7F}", "/caf\u{E9}", "/#frag", "/a\r\nb", "*"])
    func badTargetsAreRefused(_ path: String) throws {
        let (_, failure) = self.text(try self.head(), ScriptedRequest(method: .get, path: path))
        #expect(failure != nil)
    }

    @Test func fieldsTheRunOwnsOrSendsAreRefused() throws {
        let head = try self.head()
        for (name, value) in [(HTTPField.Name("Host")!, "h"), (.contentLength, "1"), (.connection, "close"), (.transferEncoding, "chunked"),
                              (.accept, "again"), (.userAgent, "mine")] {
            var request = ScriptedRequest(method: .get, path: "/")
            request.headerFields[name] = value
            #expect(self.text(head, request).1 != nil, "\(name): \(value)")
        }
        // A value cannot end its line (HTTPFields turns CR, LF and NUL into spaces before us).
        var request = ScriptedRequest(method: .get, path: "/")
        request.headerFields[.authorization] = "a\r\nX-Injected: 1"
        let (text, failure) = self.text(head, request)
        #expect(failure != nil || !text.contains("\r\nX-Injected"))
    }

    /// Over HTTP/2 a call is a header list: its pseudo-fields first, the run's fields and the
    /// call's with lowercase names, no Host, a Content-Length for a body; refused as over HTTP/1.1.
    @Test func callsOverHTTP2AreHeaderLists() throws {
        let head = try self.head("http://127.0.0.1:8080/") { $0.http2 = true }
        let buffer = ScriptBuffer(capacity: 16)
        var list = ScriptedHTTP2Request()
        var request = ScriptedRequest(method: .post, path: "/items?x=1")
        request.headerFields[.authorization] = "Bearer x"
        request.setBody("hello")
        guard case .success(let isHead) = head.encodeHTTP2(request, into: buffer, list: &list) else {
            Issue.record("refused")
            return
        }
        let bytes = buffer.bytes
        let pairs = list.spans.map { (String(decoding: bytes[$0.name], as: UTF8.self), String(decoding: bytes[$0.value], as: UTF8.self)) }
        #expect(!isHead)
        #expect(pairs.map(\.0) == [":method", ":scheme", ":authority", ":path", "accept", "user-agent", "authorization", "content-length"])
        #expect(pairs[0].1 == "POST" && pairs[1].1 == "http" && pairs[2].1 == "127.0.0.1:8080" && pairs[3].1 == "/items?x=1")
        #expect(pairs[6].1 == "Bearer x" && pairs[7].1 == "5")
        #expect(String(decoding: bytes[list.bodyStart...], as: UTF8.self) == "hello")
        var refused = ScriptedRequest(method: .get, path: "/")
        refused.headerFields[.accept] = "text/html"
        guard case .failure = head.encodeHTTP2(refused, into: buffer, list: &list) else {
            Issue.record("a field the run sends, sent twice")
            return
        }
        guard case .success(true) = head.encodeHTTP2(ScriptedRequest(method: .head, path: "/"), into: buffer, list: &list) else {
            Issue.record("a HEAD")
            return
        }
    }

    @Test func decimals() {
        let buffer = ScriptBuffer(capacity: 1)
        for value in [0, 7, -12, Int.max, Int.min] {
            buffer.count = 0
            buffer.appendDecimal(value)
            #expect(String(decoding: buffer.bytes, as: UTF8.self) == String(value))
        }
    }

    /// The usual checks, on a response made by hand.
    @Test func checksReadTheLentResponse() {
        var fields = FieldRecords()
        fields.append(name: "Content-Type", value: "application/json; charset=utf-8")
        fields.append(name: "X-Count", value: "42")
        let body = Array(#"{"id": 42}"#.utf8)
        withUnsafePointer(to: fields) { fields in body.withUnsafeBytes { bytes in
            let response = ScriptedResponse(statusCode: 201, latency: .milliseconds(3), fields: fields, body: bytes, bodyCount: bytes.count)
            let passed = { (check: Check) in Self.passes(check, response) }
            #expect(passed(.status(201)) && !passed(.status(200)))
            #expect(passed(.status(200..<300)) && !passed(.status(300..<400)))
            #expect(!passed(.status(201..<201)) && !passed(.status(Int.max)))
            #expect(passed(Check("custom") { $0.statusCode == 201 && $0.value(of: .contentType) != nil }))
            #expect(passed(.field(.contentType, contains: "json")))
            #expect(!passed(.field(.contentType, equals: "application/json")))
            #expect(passed(.field(HTTPField.Name("x-count")!)) && !passed(.field(HTTPField.Name("ETag")!)))
            #expect(passed(.body(contains: "\"id\": 42")) && !passed(.body(contains: "43")))
            let number = response.number(of: HTTPField.Name("X-Count")!)
            let text = response.bodyText
            #expect(number == 42 && text == #"{"id": 42}"#)
            let cut = ScriptedResponse(statusCode: 200, latency: .zero, fields: fields, body: UnsafeRawBufferPointer(rebasing: bytes[..<4]), bodyCount: bytes.count)
            let kept = cut.isBodyKept
            let found = Self.passes(.body(contains: "{"), cut)
            #expect(!kept && !found)
        } }
    }

    /// `check` as a scenario's runtime tests it.
    static func passes(_ check: Check, _ response: borrowing ScriptedResponse) -> Bool {
        let runtime = ScenarioRuntime(Scenario<Void>("one check", checks: [check]), index: 0, checkNumbers: [0])
        return runtime.passes(runtime.checks[0], response)
    }

    /// A run records only the fields a scenario's checks and hook read; a check or a hook that
    /// does not say which it reads gets them all.
    @Test func scenariosRecordTheFieldsTheyRead() {
        // The runtime keeps the names its selection points into.
        func selection(_ scenario: Scenario<Void>) -> ScenarioRuntime {
            ScenarioRuntime(scenario, index: 0, checkNumbers: scenario.checks.map { _ in 0 })
        }
        func wants(_ runtime: ScenarioRuntime, _ name: String) -> Bool {
            Array(name.utf8).withUnsafeBytes { runtime.fields.wants($0) }
        }
        let statusOnly = selection(Scenario("a", checks: [.status(200), .body(contains: "x")]))
        #expect(!wants(statusOnly, "Content-Type"))
        let named = selection(Scenario("b", checks: [.status(200), .field(.contentType, equals: "text/plain"), .field(.eTag)]))
        #expect(wants(named, "content-type") && wants(named, "ETAG") && !wants(named, "Date") && !wants(named, "Content-Typ"))
        let custom = selection(Scenario("c", checks: [Check("mine") { _ in true }]))
        #expect(wants(custom, "Date"))
        let declared = selection(Scenario("d", checks: [Check("mine", readsFields: [.location]) { _ in true }]))
        #expect(wants(declared, "Location") && !wants(declared, "Date"))
        let hook = selection(Scenario("e", checks: [.status(200)], response: { _, _ in }))
        #expect(wants(hook, "Date"))
        let narrowHook = selection(Scenario("f", checks: [.field(.eTag)], readsFields: [.lastModified], response: { _, _ in }))
        #expect(wants(narrowHook, "Last-Modified") && wants(narrowHook, "ETag") && !wants(narrowHook, "Date"))
    }

    /// A target is checked eight bytes at a time (the last eight overlapping): each byte a
    /// request line cannot carry is found at every place of a long target, and every byte is
    /// judged as the byte-by-byte rule would.
    @Test func targetsAreCheckedWordByWord() {
        func byByte(_ bytes: [UInt8]) -> Bool { !bytes.contains { $0 <= 0x20 || $0 >= 0x7F || $0 == UInt8(ascii: "#") } }
        for byte in UInt8.min...UInt8.max {
            for length in [1, 7, 8, 9, 16, 17, 30] {
                for place in Set([0, length / 2, length - 1]) {
                    var target = Array(repeating: UInt8(ascii: "a"), count: length)
                    target[place] = byte
                    let carriable = target.withUnsafeBytes { ScriptedHead.carriable($0) }
                    #expect(carriable == byByte(target), "byte \(byte) at \(place) of \(length)")
                }
            }
        }
    }

    /// A HEAD is known by its method's bytes, and only POST, PUT and PATCH announce an empty body.
    @Test func encodingSaysWhatTheMethodMeans() throws {
        let head = try self.head()
        let buffer = ScriptBuffer(capacity: 16)
        func isHead(_ method: HTTPRequest.Method) -> Bool? {
            guard case .success(let isHead) = head.encode(ScriptedRequest(method: method, path: "/"), into: buffer) else { return nil }
            return isHead
        }
        #expect(isHead(.head) == true && isHead(.get) == false && isHead(HTTPRequest.Method("HEADS")!) == false)
        #expect(self.text(head, ScriptedRequest(method: .patch, path: "/")).0.contains("Content-Length: 0\r\n"))
        #expect(!self.text(head, ScriptedRequest(method: .delete, path: "/")).0.contains("Content-Length"))
        #expect(self.text(head, ScriptedRequest(method: .connect, path: "/")).1 != nil, "CONNECT is refused")
        #expect(self.text(head, ScriptedRequest(method: .options, path: "*")).1 == nil, "OPTIONS * goes direct")
        #expect(self.text(head, ScriptedRequest(method: .get, path: "*")).1 != nil, "only OPTIONS has the * target")
    }

    @Test func theReportShowsChecksScenariosAndErrors() throws {
        var statistics = LoadStatistics()
        statistics.requests = 10
        var script = ScriptStatistics()
        script.checks = ["status is 200": .init(passed: 9, failed: 1)]
        script.scenarios = ["home": 10]
        script.scriptErrors = 2
        script.firstScriptError = "scenario \"home\": boom"
        statistics.script = script
        let report = LoadReport(configuration: LoadConfiguration(url: try RequestURL("http://127.0.0.1:1/")), statistics: statistics)
        let text = report.text(latencyDistribution: false)
        #expect(text.contains("FAIL status is 200") && text.contains("Scenarios: home 10"))
        #expect(text.contains("Script errors: 2 (first: scenario \"home\": boom)"))
        let json = try report.jsonText()
        #expect(json.contains("\"script_errors\":2") && json.contains("\"failed\":1"))
        // A report saved without a script still reads back.
        var plain = LoadStatistics()
        plain.requests = 1
        let data = try JSONEncoder().encode(plain)
        #expect(try JSONDecoder().decode(LoadStatistics.self, from: data).script == nil)
        // Merged runs add up.
        var merged = statistics
        merged.add(statistics)
        #expect(merged.script?.checks["status is 200"] == .init(passed: 18, failed: 2) && merged.script?.scriptErrors == 4)
    }
}
