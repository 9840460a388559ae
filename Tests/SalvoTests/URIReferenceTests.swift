@testable import Salvo
import Testing

/// The typed layer's URI resolver against RFC 3986 §5.4, every example, and §5.2.4's.
@Suite struct URIReferenceTests {
    static let base = URIReference("http://a/b/c/d;p?q")

    func resolve(_ reference: String) -> String {
        URIReference(reference).resolved(against: Self.base).description
    }

    /// §5.4.1.
    @Test(arguments: [
        ("g:h", "g:h"), ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"), ("g#s", "http://a/b/c/g#s"), ("g?y#s", "http://a/b/c/g?y#s"),
        (";x", "http://a/b/c/;x"), ("g;x", "http://a/b/c/g;x"), ("g;x?y#s", "http://a/b/c/g;x?y#s"),
        ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"), ("./", "http://a/b/c/"), ("..", "http://a/b/"),
        ("../", "http://a/b/"), ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../", "http://a/"),
        ("../../g", "http://a/g"),
    ])
    func normalExamples(reference: String, expected: String) {
        #expect(self.resolve(reference) == expected)
    }

    /// §5.4.2, with the strict reading of `http:g`.
    @Test(arguments: [
        ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"), ("/./g", "http://a/g"), ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"), ("g..", "http://a/b/c/g.."), ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"), ("./g/.", "http://a/b/c/g/"), ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"), ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"), ("g?y/../x", "http://a/b/c/g?y/../x"),
        ("g#s/./x", "http://a/b/c/g#s/./x"), ("g#s/../x", "http://a/b/c/g#s/../x"),
        ("http:g", "http:g"),
    ])
    func abnormalExamples(reference: String, expected: String) {
        #expect(self.resolve(reference) == expected)
    }

    @Test func removingDotSegments() {
        #expect(URIReference.removingDotSegments("/a/b/c/./../../g") == "/a/g")
        #expect(URIReference.removingDotSegments("mid/content=5/../6") == "mid/6")
        #expect(URIReference.removingDotSegments("/..") == "/")
        #expect(URIReference.removingDotSegments("..") == "")
        #expect(URIReference.removingDotSegments("/a/..") == "/")
        #expect(URIReference.removingDotSegments("/a/b/") == "/a/b/")
    }

    @Test func splitsIntoFiveParts() {
        let full = URIReference("https://user@api.example.com:8443/v1/items;x?page=2&q=a:b#top")
        #expect(full.scheme == "https")
        #expect(full.authority == "user@api.example.com:8443")
        #expect(full.path == "/v1/items;x")
        #expect(full.query == "page=2&q=a:b")
        #expect(full.fragment == "top")
        #expect(full.description == "https://user@api.example.com:8443/v1/items;x?page=2&q=a:b#top")
        // A colon after a slash or a question mark is no scheme's; nor is one after a digit.
        #expect(URIReference("/a:b").scheme == nil)
        #expect(URIReference("?x=a:b").scheme == nil)
        #expect(URIReference("1a:b").scheme == nil)
        #expect(URIReference("urn:isbn:0451450523").scheme == "urn")
        #expect(URIReference("mailto:a@b").path == "a@b")
        #expect(URIReference("").description == "")
        #expect(URIReference("//host").authority == "host")
        #expect(URIReference("//host").path == "")
    }

    @Test func aBaseWithAnAuthorityAndNoPathGetsASlash() {
        let base = URIReference("https://api.example.com")
        #expect(URIReference("items?page=2").resolved(against: base).description == "https://api.example.com/items?page=2")
        #expect(URIReference("?page=2").resolved(against: base).description == "https://api.example.com?page=2")
    }

    @Test func bytesNoURIMayHoldArePercentEncoded() {
        #expect(URIReference("/a b/café").path == "/a%20b/caf%C3%A9")
        #expect(URIReference("/x?q=\"<>\"").query == "q=%22%3C%3E%22")
        #expect(URIReference("/already%20encoded").path == "/already%20encoded")
    }
}
