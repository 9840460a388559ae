@testable import Salvo
import SalvoTransport
import Testing

/// `Link` field values (RFC 8288) as servers write them, well and badly.
@Suite struct LinksTests {
    static let github = """
        <https://api.github.com/repositories/1300192/issues?page=2>; rel="prev", \
        <https://api.github.com/repositories/1300192/issues?page=4>; rel="next", \
        <https://api.github.com/repositories/1300192/issues?page=515>; rel="last", \
        <https://api.github.com/repositories/1300192/issues?page=1>; rel="first"
        """

    @Test func githubsPagination() {
        let links = Links(Self.github)
        #expect(links.count == 4)
        #expect(links.map(\.relations) == [["prev"], ["next"], ["last"], ["first"]])
        #expect(links.first(rel: "next")?.url == "https://api.github.com/repositories/1300192/issues?page=4")
        #expect(links.first(rel: "last")?.target == "https://api.github.com/repositories/1300192/issues?page=515")
        #expect(links.first(rel: "NEXT")?.url == links.first(rel: "next")?.url, "relation types compare without case")
        #expect(links.first(rel: "alternate") == nil)
        #expect(links[1].parameters.isEmpty)
    }

    /// The examples of RFC 8288 §3.5.
    @Test func theRFCsExamples() {
        let chapter = Links("<http://example.com/TheBook/chapter2>; rel=\"previous\"; title=\"previous chapter\"")
        #expect(chapter.first?.relations == ["previous"])
        #expect(chapter.first?[parameter: "title"] == "previous chapter")
        #expect(chapter.first?[parameter: "TITLE"] == "previous chapter")

        let root = Links("</>; rel=\"http://example.net/foo\"", base: "http://example.com/x/y")
        #expect(root.first(rel: "http://example.net/foo")?.url == "http://example.com/")
        #expect(root.first(rel: "HTTP://EXAMPLE.NET/FOO") != nil, "extension types compare without case too")

        let terms = Links("</terms>; rel=\"copyright\"; anchor=\"#foo\"", base: "http://example.com/page")
        #expect(terms.first?.anchor == "#foo")
        #expect(terms.first?.parameters.isEmpty == true, "rel and anchor are not target attributes")
        #expect(terms.first?.url == "http://example.com/terms")

        let book = Links("""
            </TheBook/chapter2>; rel="previous"; title*=UTF-8'de'letztes%20Kapitel, \
            </TheBook/chapter4>; rel="next"; title*=UTF-8'de'n%c3%a4chstes%20Kapitel
            """, base: "http://example.com/TheBook/chapter3")
        #expect(book.map { $0[parameter: "title"] } == ["letztes Kapitel", "nächstes Kapitel"])
        #expect(book.first(rel: "next")?.url == "http://example.com/TheBook/chapter4")

        let two = Links("<http://example.org/>; rel=\"start http://example.net/relation/other\"")
        #expect(two.first?.relations == ["start", "http://example.net/relation/other"])
        #expect(two.first(rel: "start") == two.first(rel: "http://example.net/relation/other"))

        let list = Links("<https://example.org/>; rel=\"start\", <https://example.org/index>; rel=\"index\"")
        #expect(list.map(\.target) == ["https://example.org/", "https://example.org/index"])
    }

    @Test func tokensQuotedStringsAndEscapes() {
        let links = Links(#"<https://x.test/a,b;c>; REL = Next ; Title="say \"hi\", then \\ and ; go"; type=text/html; crossorigin"#)
        #expect(links.count == 1)
        let link = links[0]
        #expect(link.target == "https://x.test/a,b;c", "commas and semicolons inside a target are the target's")
        #expect(link.relations == ["next"])
        #expect(link[parameter: "title"] == #"say "hi", then \ and ; go"#)
        #expect(link[parameter: "type"] == "text/html", "a bare value that is no token is read to the next ; or ,")
        #expect(link[parameter: "crossorigin"] == "", "a parameter without a value")
        #expect(link.parameters.map(\.name) == ["title", "type", "crossorigin"])
    }

    @Test func relationListsAndRepeatedParameters() {
        let link = Links("<a>; rel=\"  next\tLAST  \"; rel=prev; title=one; title=two; hreflang=en; hreflang=de; type=a; type=b")[0]
        #expect(link.relations == ["next", "last"], "only the first rel counts; its list splits on any whitespace")
        #expect(link.hasRelation("Last"))
        #expect(!link.hasRelation("prev"))
        #expect(link.parameters.map(\.name) == ["title", "hreflang", "hreflang", "type"])
        #expect(link.parameters.filter { $0.name == "hreflang" }.map(\.value) == ["en", "de"])
        #expect(link[parameter: "title"] == "one")
        #expect(link[parameter: "type"] == "a")
        #expect(Links("<a>")[0].relations == [], "a link without rel")
        #expect(Links("<a>; rel=\"\"")[0].relations == [])
    }

    @Test func extendedValues() {
        let latin = Links("<a>; title=\"plain\"; title*=iso-8859-1'en'%A3%20rates")[0]
        #expect(latin[parameter: "title"] == "£ rates", "a title* that decodes replaces the plain title")
        #expect(latin.parameters.count == 1)
        let broken = Links("<a>; title=\"plain\"; title*=UTF-8''%FF%FE")[0]
        #expect(broken[parameter: "title"] == "plain", "one that is not UTF-8 is dropped")
        #expect(broken.parameters.count == 1)
        let unknownCharset = Links("<a>; title*=KOI8-R''x")[0]
        #expect(unknownCharset.parameters.isEmpty)
        let badEscape = Links("<a>; foo*=UTF-8''%4")[0]
        #expect(badEscape.parameters.isEmpty)
        let other = Links("<a>; foo*=UTF-8''caf%C3%A9")[0]
        #expect(other[parameter: "foo"] == "café")
    }

    @Test func whitespaceEmptyElementsAndSeveralFieldLines() {
        let spaced = Links(" ,\t <a>  ;  rel = next  ,, ,  <b>;rel=prev;  ,")
        #expect(spaced.map(\.target) == ["a", "b"])
        #expect(spaced.map(\.relations) == [["next"], ["prev"]])
        let lines = Links(["<a>; rel=next", "", "<b>; rel=prev, <c>; rel=last"])
        #expect(lines.map(\.target) == ["a", "b", "c"])
        var fields = HTTPFields()
        fields.append(HTTPField(name: HTTPField.Name("Link")!, value: "</p/2>; rel=next"))
        fields.append(HTTPField(name: .contentType, value: "application/json"))
        fields.append(HTTPField(name: HTTPField.Name("link")!, value: "</p/9>; rel=last"))
        let fromFields = Links(fields, base: "https://api.example.test/p/1")
        #expect(fromFields.map(\.url) == ["https://api.example.test/p/2", "https://api.example.test/p/9"])
    }

    /// Malformed link-values are left out; the rest of the field is still read.
    @Test(arguments: [
        ("", []),
        (",,,", []),
        ("garbage", []),
        ("garbage, <b>; rel=next", ["b"]),
        ("<a; rel=next, <b>; rel=prev", ["b"]),                       // a target never closed
        ("<a> rel=next, <b>; rel=prev", ["b"]),                       // no ";" before a parameter
        ("<a>; rel=next; =oops, <b>; rel=last", ["b"]),               // a parameter without a name
        ("<a>; \"quoted\", <b>", ["b"]),
        ("<a>; rel=\"next, <b>; rel=prev", []),                        // a quote never closed swallows the rest
        ("<a>; title=\"x, y\" junk, <b>", ["b"]),                      // junk after a quoted value
        ("<a>; rel=next <b>; rel=prev", ["a"]),                        // a bare value runs to ";" or ","
        ("<a> <b>; rel=prev", ["b"]),
        ("<abc", []),
        ("<>; rel=self", [""]),
        ("<a>;", ["a"]),
        (";;;", []),
        ("<a>; rel=next, garbage \"with, comma\" more, <b>", ["a", "b"]),
        ("<a>; rel=next\\", ["a"]),
        ("<a>; t=\"end\\", []),
    ] as [(String, [String])])
    func malformedValuesAreSkipped(value: String, targets: [String]) {
        #expect(Links(value).map(\.target) == targets, "\(value)")
    }

    @Test func aBareValueKeepsWhatFollowsToTheNextSeparator() {
        // `rel=next <b>` is one bare value: RFC 8288 Appendix B reads it up to ";" or ",".
        #expect(Links("<a>; rel=next <b>; rel=prev")[0].relations == ["next", "<b>"])
    }

    @Test func targetsResolveAgainstTheBase() {
        let base = "https://api.example.test/v1/items?page=2"
        let links = Links("<?page=3>; rel=next, </v1/items?page=1>; rel=first, <items?page=9>; rel=last, <//cdn.example.test/x>; rel=icon, <#top>; rel=up",
                          base: base)
        #expect(links.map(\.url) == [
            "https://api.example.test/v1/items?page=3", "https://api.example.test/v1/items?page=1",
            "https://api.example.test/v1/items?page=9", "https://cdn.example.test/x",
            "https://api.example.test/v1/items?page=2#top",
        ])
        #expect(links.map(\.target) == ["?page=3", "/v1/items?page=1", "items?page=9", "//cdn.example.test/x", "#top"])
        let noBase = Links("<?page=3>; rel=next, <https://x.test/a/../b>; rel=last")
        #expect(noBase.map(\.url) == [nil, "https://x.test/b"], "without a base, only absolute targets have a URL")
        #expect(Links("<?page=3>", base: "not/absolute")[0].url == nil)
        #expect(Links("< https://x.test/caf\u{E9} >; rel=next")[0].url == "https://x.test/caf%C3%A9")
    }

    /// Every prefix of a real field, and bytes of every kind, parse without trapping.
    @Test func neverTraps() {
        let field = Self.github + #", <a>; title*=UTF-8'de'n%c3%a4chstes; title="q\"x"; rel="next last""#
        let bytes = Array(field.utf8)
        for end in 0...bytes.count {
            let links = Links(String(decoding: bytes[..<end], as: UTF8.self))
            #expect(links.count <= 5)
        }
        var generator = SplitMix64(seed: 8288)
        let alphabet = Array("<>;,=\"\\ \t*'%relnxt:/?#a\u{0}\u{FF}".utf8)
        for _ in 0..<2000 {
            let length = Int(generator.next() % 40)
            let noise = (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            _ = Links(String(decoding: noise, as: UTF8.self), base: "http://a/b")
        }
    }

    @Test func aResponseKnowsItsLinks() async throws {
        let mock = MockTransport()
        mock.on(.get, "/api/items", reply: MockTransport.Reply(headerFields: [HTTPField.Name("Link")!: "<?page=2>; rel=\"next\""], body: Array("[]".utf8)))
        let client = try Client(baseURL: "https://api.example.test/api", transport: mock)
        let response = try await client.send(Endpoint<[Int]>.get("/items"))
        #expect(response.links.first(rel: "next")?.url == "https://api.example.test/api/items?page=2")
    }
}

