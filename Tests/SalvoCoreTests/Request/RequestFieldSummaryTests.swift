import HTTPTypes
import Testing
@testable import SalvoCore

@Suite struct RequestFieldSummaryTests {
    func summary(_ fields: [(String, String)]) -> RequestFieldSummary {
        var headerFields = HTTPFields()
        for (name, value) in fields { headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return RequestFieldSummary(headerFields)
    }

    @Test func eachFieldIsKnownInAnyCase() {
        let all = self.summary([("USER-AGENT", "a"), ("Content-Type", "text/plain"), ("content-ENCODING", "gzip"),
                                ("Accept-Encoding", "br"), ("Proxy-Authorization", "Basic x")])
        #expect(all.hasUserAgent && all.hasAcceptEncoding && all.hasProxyFields)
        #expect(all.expect == nil && !all.asksClose)
        #expect(self.summary([("proxy-connection", "keep-alive")]).hasProxyFields)
        let none = self.summary([("X-User-Agent", "a"), ("Content-Types", "b"), ("Accept", "*/*"), ("Expects", "x"),
                                 ("Connections", "close"), ("Proxy", "p")])
        #expect(!none.hasUserAgent && !none.hasAcceptEncoding)
        #expect(!none.hasProxyFields && none.expect == nil && !none.asksClose)
    }

    @Test func listsAreReadOverEveryLine() {
        let expect = self.summary([("Expect", "100-continue"), ("Accept", "*/*"), ("expect", "x-other")])
        #expect(expect.expect == "100-continue, x-other")
        // Connection is a list: `close` anywhere in it, in any line, in any case.
        #expect(self.summary([("Connection", "keep-alive"), ("Connection", " Close ")]).asksClose)
        #expect(self.summary([("Connection", "Upgrade, close")]).asksClose)
        #expect(!self.summary([("Connection", "keep-alive, closed")]).asksClose)
        #expect(!self.summary([]).asksClose)
    }
}
