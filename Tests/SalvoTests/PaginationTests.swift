import Foundation
@testable import Salvo
import SalvoTestSupport
import Synchronization
import Testing

private struct Item: Codable, Sendable, Equatable {
    var id: Int
}

private let linkName = HTTPField.Name("Link")!

/// A mock API whose `/api/items?page=N` answers three ids a page and, as `Link`, whatever
/// `link(N)` says (nil: none). Pages are numbered from 1; a missing page number is 1.
private func pagedMock(pages: Int = 3, link: @escaping @Sendable (Int) -> String?) -> MockTransport {
    let mock = MockTransport()
    mock.fallback { request in
        guard request.path == "/api/items" else { return .status(.notFound) }
        let query = request.target.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
        let page = query.split(separator: "&").first { $0.hasPrefix("page=") }.flatMap { Int($0.dropFirst(5)) } ?? 1
        guard page >= 1, page <= pages else { return .status(.notFound) }
        var reply = try MockTransport.Reply.json((1...3).map { Item(id: (page - 1) * 3 + $0) })
        if let value = link(page) { reply.headerFields[linkName] = value }
        return reply
    }
    return mock
}

/// GitHub's way: absolute links, `next` until the last page.
private func githubLinks(pages: Int = 3, host: String = "https://api.example.test") -> @Sendable (Int) -> String? {
    { page in
        var links: [String] = []
        if page < pages { links.append("<\(host)/api/items?page=\(page + 1)>; rel=\"next\"") }
        links.append("<\(host)/api/items?page=\(pages)>; rel=\"last\"")
        return links.joined(separator: ", ")
    }
}

/// Pagination over a `MockTransport`: links, closures, the limits that end a walk with an
/// error, cancellation, and the client's policies on every page.
@Suite struct PaginationTests {
    func client(_ mock: MockTransport, _ configuration: Client.Configuration = .init()) throws -> Client {
        try Client(baseURL: "https://api.example.test/api", transport: mock, configuration: configuration)
    }

    /// Every value the pages yield, and the error that ended them if one did.
    func walk<R: Request>(_ pages: Pages<R>) async -> (values: [R.SuccessResponseBody], error: ClientError?) {
        var values: [R.SuccessResponseBody] = []
        do {
            for try await value in pages { values.append(value) }
            return (values, nil)
        } catch {
            return (values, error)
        }
    }

    @Test func followsNextLinksToTheEnd() async throws {
        let mock = pagedMock(link: githubLinks())
        let client = try self.client(mock)
        var pages: [[Item]] = []
        for try await page in client.pages(Endpoint<[Item]>.get("/items")) {
            pages.append(page)
        }
        #expect(pages.map { $0.map(\.id) } == [[1, 2, 3], [4, 5, 6], [7, 8, 9]])
        #expect(mock.requests.map(\.target) == ["/api/items", "/api/items?page=2", "/api/items?page=3"])
        #expect(mock.requests.allSatisfy { $0.head.authority == "api.example.test" && $0.head.scheme == "https" })
        let items = try await client.pages(Endpoint<[Item]>.get("/items")).items.collect()
        #expect(items.map(\.id) == Array(1...9))
    }

    @Test func relativeLinksResolveAgainstEachPage() async throws {
        // `?page=N` relative to the page, then a path from the root, then a dot segment.
        let mock = pagedMock(pages: 4) { page in
            switch page {
            case 1: "<?page=2>; rel=next"
            case 2: "</api/items?page=3>; rel=\"next\""
            case 3: "<./items?page=4>; rel=next"
            default: nil
            }
        }
        let ids = try await self.client(mock).pages(Endpoint<[Item]>.get("/items")).items.collect()
        #expect(ids.map(\.id) == Array(1...12))
        #expect(mock.requests.map(\.target) == ["/api/items", "/api/items?page=2", "/api/items?page=3", "/api/items?page=4"])
    }

    @Test func pagesWithTheirResponses() async throws {
        let mock = pagedMock { page in
            githubLinks()(page)
        }
        var numbers: [Int] = []
        var lastLinks: [String?] = []
        for try await page in try self.client(mock).pages(Endpoint<[Item]>.get("/items")).withResponses {
            numbers.append(page.number)
            lastLinks.append(page.response.links.first(rel: "last")?.url)
            #expect(page.value.count == 3)
            #expect(page.request.path == "/items", "the request of a linked page is the first one, sent at the link's URL")
            #expect(page.response.status == .ok)
        }
        #expect(numbers == [1, 2, 3])
        #expect(Set(lastLinks) == ["https://api.example.test/api/items?page=3"])
    }

    @Test func anEnvelopeGivesItsItemsThroughAClosure() async throws {
        struct Envelope: Codable, Sendable { var data: [Item] }
        let mock = MockTransport()
        mock.fallback { request in
            let page = request.target.hasSuffix("page=2") ? 2 : 1
            var reply = try MockTransport.Reply.json(Envelope(data: [Item(id: page * 10), Item(id: page * 10 + 1)]))
            if page == 1 { reply.headerFields[linkName] = "<items?page=2>; rel=next" }
            return reply
        }
        let pages = try self.client(mock).pages(Endpoint<Envelope>.get("/items"))
        #expect(try await pages.items(\.data).collect().map(\.id) == [10, 11, 20, 21])
        #expect(try await pages.items { $0.data.filter { $0.id % 2 == 0 } }.collect().map(\.id) == [10, 20])
    }

    @Test func linkedPagesKeepTheRequestsHeadersAndTheClientsPolicies() async throws {
        let mock = pagedMock(link: githubLinks())
        let operations = Mutex<[String]>([])
        let client = try self.client(mock, .init(
            headerFields: [.userAgent: "pager/1"],
            middleware: [InterceptMiddleware { request, next in
                operations.withLock { $0.append(request.operationName) }
                var request = request
                request.head.headerFields[HTTPField.Name("X-Trace")!] = "t"
                return try await next(request)
            }]))
        let endpoint = Endpoint<[Item]>.get("/items", headers: [.accept: "application/json"])
        _ = try await client.pages(endpoint).collect()
        #expect(mock.requests.count == 3)
        for request in mock.requests {
            #expect(request.method == .get)
            #expect(request.headerFields[.accept] == "application/json")
            #expect(request.headerFields[.userAgent] == "pager/1")
            #expect(request.headerFields[HTTPField.Name("X-Trace")!] == "t")
        }
        #expect(operations.withLock { $0 } == Array(repeating: "GET /items", count: 3))
    }

    @Test func theClientsQueryItemsAreSentOnceOnLinkedPages() async throws {
        // The server echoes the client's api_version in its links, in another place.
        let mock = pagedMock { page in
            page < 3 ? "</api/items?api_version=3&page=\(page + 1)&per_page=3>; rel=next" : nil
        }
        let client = try self.client(mock, .init(queryItems: [QueryItem("api_version", "3")]))
        _ = try await client.pages(Endpoint<[Item]>.get("/items", query: [QueryItem("per_page", "3")])).collect()
        #expect(mock.requests.map(\.target) == [
            "/api/items?per_page=3&api_version=3",
            "/api/items?page=2&per_page=3&api_version=3",
            "/api/items?page=3&per_page=3&api_version=3",
        ])
    }

    @Test func aFailedPageEndsTheSequenceWithItsError() async throws {
        let mock = pagedMock(pages: 1) { page in "</api/items?page=\(page + 1)>; rel=next" }
        let (pages, error) = await self.walk(try self.client(mock).pages(Endpoint<[Item]>.get("/items")))
        #expect(error?.code == .unacceptableStatus)
        #expect(error?.status == .notFound)
        #expect(pages.flatMap { $0.map(\.id) } == [1, 2, 3], "the page before the failure was delivered")
    }

    @Test(arguments: [
        "https://elsewhere.test/api/items?page=2",     // another host
        "http://api.example.test/api/items?page=2",    // another scheme
        "https://api.example.test:8443/api/items?page=2",   // another port
        "//evil.test/api/items?page=2",                // another host, scheme-relative
        "ftp://api.example.test/api/items?page=2",     // no http(s) at all
        "mailto:someone@example.test",
    ])
    func aNextLinkToAnotherOriginIsNotFollowed(target: String) async throws {
        let mock = pagedMock { page in page == 1 ? "<\(target)>; rel=\"next\"" : nil }
        let (pages, error) = await self.walk(try self.client(mock).pages(Endpoint<[Item]>.get("/items")))
        #expect(error?.code == .nextPageOffOrigin)
        #expect(error?.detail?.contains("page 1") == true, "\(String(describing: error))")
        #expect(error?.responseHead?.headerFields[linkName] != nil, "the error carries the page that linked away")
        #expect(pages.flatMap { $0.map(\.id) } == [1, 2, 3])
        #expect(mock.requests.count == 1, "nothing was sent off the origin")
    }

    @Test func theSameOriginSpelledOtherwiseIsFollowed() async throws {
        let mock = pagedMock { page in
            switch page {
            case 1: "<HTTPS://API.Example.TEST:443/api/items?page=2>; rel=next"
            case 2: "<https://user:secret@api.example.test/api/items?page=3#frag>; rel=next"
            default: nil
            }
        }
        let ids = try await self.client(mock).pages(Endpoint<[Item]>.get("/items")).items.collect()
        #expect(ids.count == 9)
        #expect(mock.requests.map(\.target) == ["/api/items", "/api/items?page=2", "/api/items?page=3"])
        #expect(mock.requests.allSatisfy { $0.head.authority == "api.example.test" && $0.head.scheme == "https" },
                "sent as the base URL spells its origin, without the link's userinfo")
        #expect(mock.requests.last?.headerFields[.authorization] == nil)
    }

    @Test func aLinkBackToAPageAlreadyReadIsALoop() async throws {
        let mock = pagedMock { page in
            page < 3 ? "</api/items?page=\(page + 1)>; rel=next" : "</api/items?page=1>; rel=next"
        }
        let (pages, error) = await self.walk(try self.client(mock).pages(Endpoint<[Item]>.get("/items", query: [QueryItem("page", "1")])))
        #expect(error?.code == .pageLoop)
        #expect(error?.detail?.contains("page 3") == true, "\(String(describing: error))")
        #expect(pages.count == 3)
        #expect(mock.requests.count == 3)
    }

    @Test func aPageThatLinksToItselfIsALoop() async throws {
        // The query in another order and an explicit default port are the same page.
        let mock = pagedMock { _ in "<https://api.example.test:443/api/items?b=2&a=1>; rel=next" }
        let pages = try self.client(mock).pages(Endpoint<[Item]>.get("/items", query: [QueryItem("a", "1"), QueryItem("b", "2")]))
        await #expect(throws: ClientError.self) { _ = try await pages.collect() }
        #expect(mock.requests.count == 1)
        let selfLink = pagedMock { _ in "<>; rel=next" }
        let again = try self.client(selfLink).pages(Endpoint<[Item]>.get("/items"))
        let error = await #expect(throws: ClientError.self) { _ = try await again.collect() }
        #expect(error?.code == .pageLoop)
        #expect(selfLink.requests.count == 1)
    }

    @Test func aLinkAboutAnotherResourceIsNotTheNextPage() async throws {
        let mock = pagedMock { page in
            page == 1 ? "</api/items?page=2>; rel=next; anchor=\"/api/other\", </api/items?page=3>; rel=next; anchor=\"\"" : nil
        }
        let ids = try await self.client(mock).pages(Endpoint<[Item]>.get("/items")).items.collect()
        #expect(ids.map(\.id) == [1, 2, 3, 7, 8, 9], "the anchored link was skipped, the one anchored to the page followed")
    }

    @Test func thePageBoundEndsAWalkThatGoesOn() async throws {
        // Links that never end, each to a new page.
        let mock = MockTransport()
        mock.fallback { request in
            let page = Int(request.target.split(separator: "=").last ?? "1") ?? 1
            var reply = try MockTransport.Reply.json([Item(id: page)])
            reply.headerFields[linkName] = "</api/items?page=\(page + 1)>; rel=next"
            return reply
        }
        let (pages, error) = await self.walk(try self.client(mock).pages(Endpoint<[Item]>.get("/items"), maxPages: 5))
        #expect(error?.code == .pageLimitExceeded)
        #expect(pages.flatMap { $0.map(\.id) } == [1, 2, 3, 4, 5])
        #expect(mock.requests.count == 5, "the page past the bound was not requested")

        // A walk that fits its bound exactly ends without an error.
        let three = pagedMock(link: githubLinks())
        #expect(try await self.client(three).pages(Endpoint<[Item]>.get("/items"), maxPages: 3).collect().count == 3)
    }

    @Test func aCursorFromEachPage() async throws {
        struct Feed: Codable, Sendable { var items: [Item]; var nextCursor: String? }
        let mock = MockTransport()
        mock.fallback { request in
            let after = request.target.components(separatedBy: "cursor=").dropFirst().first.flatMap { Int($0) } ?? 0
            let items = (after + 1...min(after + 4, 10)).map { Item(id: $0) }
            let last = items.last!.id
            return try .json(Feed(items: items, nextCursor: last < 10 ? String(last) : nil))
        }
        let client = try self.client(mock)
        let feed = Endpoint<Feed>.get("/feed", query: [QueryItem("limit", "4")])
        let items = try await client.pages(feed) { page in
            page.value.nextCursor.map { feed.query(QueryItem("cursor", $0)) }
        }.items(\.items).collect()
        #expect(items.map(\.id) == Array(1...10))
        #expect(mock.requests.map(\.target) == ["/api/feed?limit=4", "/api/feed?limit=4&cursor=4", "/api/feed?limit=4&cursor=8"])
    }

    @Test func pageNumbersUntilAnEmptyPage() async throws {
        let mock = pagedMock(pages: 3) { _ in nil }
        mock.on(.get, "/api/items?page=4", reply: try .json([Item]()))
        let client = try self.client(mock)
        let ids = try await client.pages(Endpoint<[Item]>.get("/items", query: [QueryItem("page", "1")])) { page in
            page.value.isEmpty ? nil : .get("/items", query: [QueryItem("page", "\(page.number + 1)")])
        }.items.collect()
        #expect(ids.map(\.id) == Array(1...9))
        #expect(mock.requests.count == 4)
    }

    @Test func aCursorThatRepeatsIsALoop() async throws {
        struct Feed: Codable, Sendable { var items: [Item]; var nextCursor: String? }
        let mock = MockTransport(always: try .json(Feed(items: [Item(id: 1)], nextCursor: "same")))
        let feed = Endpoint<Feed>.get("/feed")
        let (pages, error) = await self.walk(try self.client(mock).pages(feed) { page in
            page.value.nextCursor.map { feed.query(QueryItem("cursor", $0)) }
        })
        #expect(error?.code == .pageLoop)
        #expect(pages.count == 2, "the first page and the first with the cursor; the same cursor again is not sent")
        #expect(mock.requests.count == 2)
    }

    @Test func aCursorInTheBodyIsNoLoop() async throws {
        // Same method and URL, another body each time: POST-style cursors.
        struct Query: Codable, Sendable { var after: Int }
        let mock = MockTransport()
        mock.fallback { request in
            let after = try request.decode(Query.self).after
            return try .json(after < 3 ? [Item(id: after + 1)] : [])
        }
        let search: @Sendable (Int) -> Endpoint<[Item]> = { after in .post("/search", body: Query(after: after)) }
        let ids = try await self.client(mock).pages(search(0)) { page in
            page.value.last.map { search($0.id) }
        }.items.collect()
        #expect(ids.map(\.id) == [1, 2, 3])
        #expect(mock.requests.allSatisfy { $0.method == .post })
    }

    @Test func cancellingTheTaskStopsBetweenPages() async throws {
        let mock = pagedMock(link: githubLinks())
        let client = try self.client(mock)
        let task = Task { () async throws(ClientError) -> [Int] in
            var ids: [Int] = []
            for try await page in client.pages(Endpoint<[Item]>.get("/items")) {
                ids += page.map(\.id)
                withUnsafeCurrentTask { $0?.cancel() }
            }
            return ids
        }
        let result = await task.result
        guard case .failure(let error) = result else {
            Issue.record("a cancelled walk ended quietly: \(result)")
            return
        }
        #expect((error as? ClientError)?.code == .cancelled, "\(error)")
        #expect(mock.requests.count == 1, "no page was requested after the cancel")
    }

    @Test func cancellingTheTaskStopsAPageInFlight() async throws {
        let mock = MockTransport()
        let firstPage = try MockTransport.Reply.json([Item(id: 1)])
        var withLink = firstPage
        withLink.headerFields[linkName] = "</api/items?page=2>; rel=next"
        mock.on(.get, "/api/items", reply: withLink)
        mock.on(.get, "/api/items?page=2", reply: firstPage.delayed(by: .seconds(30)))
        let client = try self.client(mock)
        let firstArrived = AsyncStream<Void>.makeStream()
        let task = Task { () async throws(ClientError) -> Int in
            var pages = 0
            for try await _ in client.pages(Endpoint<[Item]>.get("/items")) {
                pages += 1
                firstArrived.continuation.yield()
            }
            return pages
        }
        for await _ in firstArrived.stream { break }
        // Let the second request reach the mock's delay, then cancel.
        while mock.requests.count < 2 { try await Task.sleep(for: .milliseconds(5)) }
        let start = ContinuousClock.now
        task.cancel()
        let result = await task.result
        #expect(ContinuousClock.now - start < .seconds(10))
        guard case .failure(let error) = result else {
            Issue.record("a cancelled page ended quietly: \(result)")
            return
        }
        #expect((error as? ClientError)?.code == .cancelled, "\(error)")
    }

    @Test func eachIterationWalksAnew() async throws {
        let mock = pagedMock(link: githubLinks())
        let pages = try self.client(mock).pages(Endpoint<[Item]>.get("/items"))
        #expect(try await pages.collect().count == 3)
        #expect(try await pages.collect().count == 3)
        #expect(mock.requests.count == 6)
    }

    @Test func aRequestTypeWorksAsAnEndpointDoes() async throws {
        struct ListItems: Request {
            typealias SuccessResponseBody = [Item]
            var path: String { "/items" }
            var headerFields: HTTPFields { [.accept: "application/json"] }
        }
        let mock = pagedMock(link: githubLinks())
        var numbers: [Int] = []
        for try await page in try self.client(mock).pages(ListItems()).withResponses {
            numbers.append(page.number)
        }
        #expect(numbers == [1, 2, 3])
        #expect(mock.requests.allSatisfy { $0.headerFields[.accept] == "application/json" })
    }

    /// The examples of docs/typed-layer.md's Pagination section, as written there.
    @Test func theGuidesExamples() async throws {
        struct Repo: Codable, Sendable { var id: Int }
        let mock = MockTransport()
        mock.fallback { request in
            switch request.path {
            case "/user/repos":
                let page = request.target.hasSuffix("page=2") ? 2 : 1
                var reply = try MockTransport.Reply.json([Repo(id: page * 10), Repo(id: page * 10 + 1)])
                reply.headerFields[HTTPField.Name("X-RateLimit-Remaining")!] = "\(5000 - page)"
                if page == 1 {
                    reply.headerFields[linkName] = "<https://api.github.com/user/repos?per_page=100&page=2>; rel=\"next\", <https://api.github.com/user/repos?per_page=100&page=2>; rel=\"last\""
                }
                return reply
            case "/feed":
                struct Feed: Encodable { var items: [Item]; var nextCursor: String? }
                let cursor = request.target.contains("cursor=") ? 2 : 1
                return try .json(Feed(items: [Item(id: cursor)], nextCursor: cursor == 1 ? "x" : nil))
            default:
                let page = Int(request.target.split(separator: "=").last ?? "") ?? 1
                return try .json(page < 3 ? [Item(id: page)] : [])
            }
        }
        let token = "t"
        let github = try Client(baseURL: "https://api.github.com", transport: mock, configuration: .init(
            headerFields: [.authorization: "Bearer \(token)"]))
        let repos = Endpoint<[Repo]>.get("/user/repos", query: [QueryItem("per_page", "100")])

        var counts: [Int] = []
        for try await page in github.pages(repos) {
            counts.append(page.count)
        }
        #expect(counts == [2, 2])
        let all = try await github.pages(repos).items.collect()
        #expect(all.map(\.id) == [10, 11, 20, 21])
        var remaining: [String] = []
        for try await page in github.pages(repos).withResponses {
            remaining.append(page.response.headerFields[HTTPField.Name("X-RateLimit-Remaining")!] ?? "?")
        }
        #expect(remaining == ["4999", "4998"])
        #expect(mock.requests.allSatisfy { $0.headerFields[.authorization] == "Bearer t" })

        struct Feed: Decodable, Sendable { var items: [Item]; var nextCursor: String? }
        let client = try Client(baseURL: "https://api.example.test", transport: mock, coders: .json(keys: .snakeCase))
        let feed = Endpoint<Feed>.get("/feed", query: [QueryItem("limit", "50")])
        let items = try await client.pages(feed) { page in
            page.value.nextCursor.map { feed.query(QueryItem("cursor", $0)) }
        }.items(\.items).collect()
        #expect(items.map(\.id) == [1, 2])

        let numbered = client.pages(Endpoint<[Item]>.get("/items", query: [QueryItem("page", "1")])) { page in
            page.value.isEmpty ? nil : .get("/items", query: [QueryItem("page", "\(page.number + 1)")])
        }
        #expect(try await numbered.items.collect().map(\.id) == [1, 2])

        let response = try await github.send(repos)
        #expect(response.links.first(rel: "last")?.url == "https://api.github.com/user/repos?per_page=100&page=2")
    }
}
