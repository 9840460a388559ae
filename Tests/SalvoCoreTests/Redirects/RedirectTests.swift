import HTTPTypes
import Testing
@testable import SalvoCore

@Suite struct RedirectTests {
    /// RFC 3986 §5.4: every normal and abnormal example, fragments dropped.
    @Test(arguments: [
        ("g:h", "g:h"), ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q"), ("g#s", "http://a/b/c/g"), ("g?y#s", "http://a/b/c/g?y"), (";x", "http://a/b/c/;x"),
        ("g;x", "http://a/b/c/g;x"), ("g;x?y#s", "http://a/b/c/g;x?y"), ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"), ("..", "http://a/b/"), ("../", "http://a/b/"), ("../g", "http://a/b/g"), ("../..", "http://a/"),
        ("../../", "http://a/"), ("../../g", "http://a/g"),
        ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"), ("/./g", "http://a/g"), ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"), ("g..", "http://a/b/c/g.."), ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"), ("./g/.", "http://a/b/c/g/"), ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"), ("g;x=1/../y", "http://a/b/c/y"), ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g?y/../x", "http://a/b/c/g?y/../x"), ("g#s/./x", "http://a/b/c/g"), ("HTTPS://Other:8443/x", "https://Other:8443/x"),
    ])
    func resolvesReferences(reference: String, expected: String) {
        #expect(URLReference.resolve(reference, against: "http://a/b/c/d;p?q") == expected)
    }

    /// As curl reads a Location: one or three slashes after http(s): still lead to the host.
    @Test func locationsWithOddSlashes() {
        #expect(URLReference.resolve("http:///foo.example/x", against: "http://h/") == "http://foo.example/x")
        #expect(URLReference.resolve("https:/foo.example/x", against: "http://h/") == "https://foo.example/x")
        #expect(URLReference.resolve("http:////foo.example/x", against: "http://h/") == "http:////foo.example/x")
        #expect((try? RequestURL(URLReference.resolve("http:////foo.example/x", against: "http://h/"))) == nil)
    }

    @Test func sloppyLocationsArePercentEncoded() {
        // As curl encodes them: lower-case hex, a space in the query as "+".
        #expect(URLReference.resolve("/a b/ü", against: "http://h/") == "http://h/a%20b/%c3%bc")
        #expect(URLReference.resolve("../x/?name=d a niel&t=/1", against: "http://h/a/b/c") == "http://h/a/x/?name=d+a+niel&t=/1")
    }

    func decide(_ state: inout RedirectState, _ method: HTTPRequest.Method = .get, url: String = "http://a.test/x",
                status: Int, location: String?, body: Bool = false, replayable: Bool = true,
                headers: HTTPFields = [:]) throws(TransportError) -> RedirectState.Outcome {
        let request = try HTTPRequest(method: method, url: url, headerFields: headers)
        return try state.decide(request: request, status: status, location: location, hasBody: body, replayableBody: replayable)
    }

    @Test func methodRewrites() throws {
        func next(_ method: HTTPRequest.Method, _ status: Int, body: Bool = true) throws -> (HTTPRequest.Method, Bool) {
            var state = RedirectState(policy: .follow)
            guard case .follow(let request, let keep) = try decide(&state, method, status: status, location: "/y", body: body) else {
                Issue.record("not followed")
                return (method, false)
            }
            return (request.method, keep)
        }
        #expect(try next(.post, 301) == (.get, false))
        #expect(try next(.post, 302) == (.get, false))
        #expect(try next(.put, 302) == (.put, true))
        #expect(try next(.post, 303) == (.get, false))
        #expect(try next(.put, 303) == (.get, false))
        #expect(try next(.head, 303, body: false) == (.head, false))
        #expect(try next(.post, 307) == (.post, true))
        #expect(try next(.post, 308) == (.post, true))
        #expect(try next(.delete, 308, body: false) == (.delete, false))
    }

    @Test func notFollowed() throws {
        var state = RedirectState(policy: .follow)
        #expect(try decide(&state, status: 200, location: "/y") == .deliver)
        #expect(try decide(&state, status: 304, location: "/y") == .deliver)
        #expect(try decide(&state, status: 300, location: "/y") == .deliver)
        #expect(try decide(&state, status: 302, location: nil) == .deliver)
        var off = RedirectState(policy: .disabled)
        #expect(try decide(&off, status: 302, location: "/y") == .deliver)
        var streamed = RedirectState(policy: .follow)
        guard case .deliverUnfollowed(let why) = try decide(&streamed, .post, status: 307, location: "/y", body: true, replayable: false) else {
            Issue.record("a streamed body was to be replayed")
            return
        }
        #expect(why.contains("cannot be replayed"))
        // A 303 drops the body, so a streamed one is no obstacle.
        guard case .follow = try decide(&streamed, .post, status: 303, location: "/z", body: true, replayable: false) else {
            Issue.record("303 not followed")
            return
        }
    }

    @Test func limitsLoopsAndRefusals() throws {
        var state = RedirectState(policy: RedirectPolicy(maxRedirects: 2))
        _ = try decide(&state, url: "http://a.test/1", status: 302, location: "/2")
        _ = try decide(&state, url: "http://a.test/2", status: 302, location: "/3")
        #expect(throws: TransportError(.tooManyRedirects, phase: .readHead, detail: "more than 2 redirects, the last to /4")) {
            try decide(&state, url: "http://a.test/3", status: 302, location: "/4")
        }
        // Back to a URL already requested is followed (servers do it after setting state),
        // as often as the count allows (curl's test 3032: the same URL three times, then an
        // answer); a loop ends at the count, with the count's error.
        var same = RedirectState(policy: .follow)
        for _ in 0..<4 {
            guard case .follow = try decide(&same, url: "http://a.test/x", status: 302, location: "/x") else {
                Issue.record("a redirect to the same URL not followed")
                return
            }
        }
        var loop = RedirectState(policy: RedirectPolicy(maxRedirects: 3))
        _ = try decide(&loop, url: "http://a.test/1", status: 302, location: "/2")
        _ = try decide(&loop, url: "http://a.test/2", status: 302, location: "/1")
        _ = try decide(&loop, url: "http://a.test/1", status: 302, location: "/2")
        #expect(performing: { try decide(&loop, url: "http://a.test/2", status: 302, location: "/1") },
                throws: { ($0 as? TransportError)?.code == .tooManyRedirects })
        // The same URL with another method is no loop (POST /login → 303 → GET /login).
        var login = RedirectState(policy: .follow)
        guard case .follow = try decide(&login, .post, url: "http://a.test/login", status: 303, location: "/login") else {
            Issue.record("303 to the same URL not followed")
            return
        }
        for location in ["ftp://a.test/file", "javascript:alert(1)", "http://[::1/", "http://a.test:99999/"] {
            var refused = RedirectState(policy: .follow)
            #expect("\(location)", performing: { try decide(&refused, status: 302, location: location) },
                    throws: { ($0 as? TransportError)?.code == .redirectRefused })
        }
        var down = RedirectState(policy: .follow)
        #expect(performing: { try decide(&down, url: "https://a.test/", status: 302, location: "http://a.test/") },
                throws: { ($0 as? TransportError)?.code == .redirectRefused })
        var allowed = RedirectState(policy: RedirectPolicy(allowHTTPSToHTTP: true))
        guard case .follow = try decide(&allowed, url: "https://a.test/", status: 302, location: "http://a.test/") else {
            Issue.record("allowed downgrade not followed")
            return
        }
    }

    @Test func credentialsStayWithTheOrigin() throws {
        let secret = HTTPField.Name("X-Secret")!
        var headers = HTTPFields()
        headers[.authorization] = "Bearer t"
        headers[.cookie] = "a=b"
        headers[.proxyAuthorization] = "Basic x"
        headers[HTTPField.Name("X-Api-Key")!] = "k"
        headers[secret] = "s"
        headers[.accept] = "text/plain"
        let policy = RedirectPolicy(credentialFields: .standard.adding([secret]))
        var same = RedirectState(policy: policy)
        guard case .follow(let sameOrigin, _) = try decide(&same, url: "http://a.test:8080/x", status: 302,
                                                           location: "/y", headers: headers) else { return }
        #expect(sameOrigin.headerFields[.authorization] == "Bearer t")
        #expect(sameOrigin.headerFields[secret] == "s")
        for location in ["http://b.test:8080/y", "http://a.test:8081/y", "https://a.test:8080/y"] {
            var other = RedirectState(policy: policy)
            guard case .follow(let crossOrigin, _) = try decide(&other, url: "http://a.test:8080/x", status: 302,
                                                               location: location, headers: headers) else { continue }
            #expect(crossOrigin.headerFields[.authorization] == nil, "\(location)")
            #expect(crossOrigin.headerFields[.cookie] == nil)
            #expect(crossOrigin.headerFields[HTTPField.Name("X-Api-Key")!] == nil, "an API key is a credential too")
            #expect(crossOrigin.headerFields[secret] == nil, "the caller's own credential field")
            #expect(crossOrigin.headerFields[.accept] == "text/plain")
            // The proxy's, decided by the proxy that carries the next request (RequestPreparerTests).
            #expect(crossOrigin.headerFields[.proxyAuthorization] == "Basic x")
        }
    }

    /// A Location's userinfo becomes credentials only for the origin the call began with, and
    /// only when the caller gave no Authorization of their own (curl's rule).
    @Test func aLocationsUserinfoIsUsedOnlyForTheFirstOriginAndNeverOverTheCallers() throws {
        var bare = RedirectState(policy: .follow)
        guard case .follow(let sameHost, _) = try decide(&bare, url: "http://a.test:8080/x", status: 302,
                                                         location: "http://bob:pw@a.test:8080/y") else {
            Issue.record("not followed")
            return
        }
        #expect(sameHost.headerFields[.authorization] == "Basic Ym9iOnB3")
        var own = RedirectState(policy: .follow)
        guard case .follow(let kept, _) = try decide(&own, url: "http://a.test:8080/x", status: 302,
                                                     location: "http://mallory:x@a.test:8080/y",
                                                     headers: [.authorization: "Basic YWxpY2U6cHc="]) else {
            Issue.record("not followed")
            return
        }
        #expect(kept.headerFields[values: .authorization] == ["Basic YWxpY2U6cHc="], "the caller's own wins")
        for location in ["http://bob:pw@b.test:8080/y", "http://bob:pw@a.test:9090/y"] {
            var other = RedirectState(policy: .follow)
            guard case .follow(let elsewhere, _) = try decide(&other, url: "http://a.test:8080/x", status: 302,
                                                              location: location) else {
                Issue.record("not followed")
                continue
            }
            #expect(elsewhere.headerFields[.authorization] == nil, "\(location): credentials chosen by the redirect")
        }
    }

    /// Credentials travel with the origin the call began with: dropped on the way to another,
    /// given back when the chain returns (A → B → A), never sent to B even when B's own
    /// Location carries userinfo.
    @Test func credentialsComeBackWithTheFirstOrigin() throws {
        var state = RedirectState(policy: .follow)
        let first = try HTTPRequest(method: .get, url: "http://a.test/start",
                                    headerFields: [.authorization: "Bearer t", .cookie: "s=1", .accept: "*/*"])
        guard case .follow(let toB, _) = try state.decide(request: first, status: 302, location: "http://b.test/hop",
                                                          hasBody: false, replayableBody: true) else {
            Issue.record("not followed")
            return
        }
        #expect(toB.headerFields[.authorization] == nil && toB.headerFields[.cookie] == nil && toB.headerFields[.accept] == "*/*")
        guard case .follow(let toBWithUser, _) = try state.decide(request: toB, status: 302, location: "http://bob:x@b.test/again",
                                                                  hasBody: false, replayableBody: true) else {
            Issue.record("not followed")
            return
        }
        #expect(toBWithUser.headerFields[.authorization] == nil, "B is not where the call began")
        guard case .follow(let backToA, _) = try state.decide(request: toBWithUser, status: 302, location: "http://a.test/end",
                                                              hasBody: false, replayableBody: true) else {
            Issue.record("not followed")
            return
        }
        #expect(backToA.headerFields[.authorization] == "Bearer t" && backToA.headerFields[.cookie] == "s=1")
    }
}

extension RedirectTests {
    /// `trustsEveryHost` keeps the credential fields on the way to another host (not a `Host`),
    /// and A → B → A does not send them twice.
    @Test func trustingEveryHost() throws {
        var state = RedirectState(policy: RedirectPolicy(trustsEveryHost: true))
        var headers = HTTPFields()
        headers[.authorization] = "Basic YTpi"
        headers[.cookie] = "a=1"
        headers[HTTPField.Name("Host")!] = "internal"
        guard case .follow(let away, _) = try decide(&state, status: 302, location: "http://b.test/y", headers: headers) else {
            Issue.record("not followed"); return
        }
        #expect(away.headerFields[.authorization] == "Basic YTpi" && away.headerFields[.cookie] == "a=1")
        #expect(away.headerFields[HTTPField.Name("Host")!] == nil)
        guard case .follow(let back, _) = try state.decide(request: away, status: 302, location: "http://a.test/z",
                                                         hasBody: false, replayableBody: true) else {
            Issue.record("not followed"); return
        }
        #expect(back.headerFields[values: .authorization] == ["Basic YTpi"])
        #expect(back.headerFields[HTTPField.Name("Host")!] == "internal")
    }

    /// Per-host credentials: another host gets its own (or the default), never the first one's;
    /// the first origin gets its own back.
    @Test func perHostAuthorization() throws {
        let policy = RedirectPolicy(authorizationByHost: ["b.test": "Basic Yg=="], authorizationForOtherHosts: "Basic ZA==")
        var headers = HTTPFields()
        headers[.authorization] = "Basic YQ=="
        var state = RedirectState(policy: policy)
        guard case .follow(let b, _) = try decide(&state, status: 302, location: "http://B.test/y", headers: headers) else {
            Issue.record("not followed"); return
        }
        #expect(b.headerFields[values: .authorization] == ["Basic Yg=="])
        guard case .follow(let c, _) = try state.decide(request: b, status: 302, location: "http://c.test/",
                                                      hasBody: false, replayableBody: true) else {
            Issue.record("not followed"); return
        }
        #expect(c.headerFields[values: .authorization] == ["Basic ZA=="])
        guard case .follow(let a, _) = try state.decide(request: c, status: 302, location: "http://a.test/",
                                                      hasBody: false, replayableBody: true) else {
            Issue.record("not followed"); return
        }
        #expect(a.headerFields[values: .authorization] == ["Basic YQ=="])
        var none = RedirectState(policy: RedirectPolicy(authorizationByHost: ["a.test": "Basic YQ=="]))
        guard case .follow(let elsewhere, _) = try decide(&none, status: 302, location: "http://b.test/", headers: headers) else {
            Issue.record("not followed"); return
        }
        #expect(elsewhere.headerFields[.authorization] == nil)
    }
}
