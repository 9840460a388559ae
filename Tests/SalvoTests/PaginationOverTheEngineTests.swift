import Foundation
import Salvo
import SalvoTestSupport
import Testing

/// Pagination over Salvo's engine against `scripts/demo-api.py`: `/pages` writes GitHub's
/// `Link` field (absolute or relative, looping or leaving the origin on request), `/cursor`
/// pages by a cursor in the body.
@Suite struct PaginationOverTheEngineTests {
    struct Item: Codable, Sendable, Equatable { var id: Int }
    struct Feed: Codable, Sendable { var items: [Item]; var nextCursor: String? }

    static let snakeCase = Client.Configuration(coders: .json(keys: .snakeCase))

    func pages(_ query: [QueryItem]) -> Endpoint<[Item]> {
        .get("/pages", query: query)
    }

    @Test func githubsLinksToTheLastPage() async throws {
        let client = try await SharedAPI.client()
        var numbers: [Int] = []
        var ids: [Int] = []
        for try await page in client.pages(self.pages([QueryItem("total", "10"), QueryItem("per_page", "3")])).withResponses {
            numbers.append(page.number)
            ids += page.value.map(\.id)
            #expect(page.response.links.first(rel: "last")?.url?.hasSuffix("/pages?total=10&per_page=3&page=4") == true)
            if page.number > 1 {
                #expect(page.response.urlString.hasSuffix("/pages?total=10&per_page=3&page=\(page.number)"))
            }
        }
        #expect(numbers == [1, 2, 3, 4])
        #expect(ids == Array(1...10))
    }

    @Test func relativeLinks() async throws {
        let client = try await SharedAPI.client()
        let items = try await client.pages(self.pages([QueryItem("total", "7"), QueryItem("per_page", "2"), QueryItem("links", "relative")]))
            .items.collect()
        #expect(items.map(\.id) == Array(1...7))
    }

    @Test func aLoopEndsWithAnError() async throws {
        let client = try await SharedAPI.client()
        var pages = 0
        let error = await #expect(throws: ClientError.self) {
            for try await _ in client.pages(self.pages([QueryItem("total", "6"), QueryItem("loop", "1")])) { pages += 1 }
        }
        #expect(error?.code == .pageLoop)
        // The first page was asked for without `page=1`, so the link to `page=1` is news once:
        // that copy of the first page is read, and its link to page 2 is the loop.
        #expect(pages == 3)
    }

    @Test func aLinkToAnotherHostOrPortIsNotFollowed() async throws {
        let server = try await SharedAPI.server.get()
        let client = try await SharedAPI.client()
        // The same server under another name, then another port: other origins all the same.
        for offsite in ["http://localhost:\(server.port)/pages", "http://127.0.0.1:\(server.port == 65535 ? 1 : server.port + 1)/pages"] {
            var ids: [Int] = []
            let error = await #expect(throws: ClientError.self) {
                for try await page in client.pages(self.pages([QueryItem("total", "2"), QueryItem("offsite", offsite)])) { ids += page.map(\.id) }
            }
            #expect(error?.code == .nextPageOffOrigin)
            #expect(error?.detail?.contains(offsite) == true, "\(String(describing: error))")
            #expect(ids == [1, 2])
        }
    }

    @Test func aCursorFromEachPagesBody() async throws {
        let client = try await SharedAPI.client(Self.snakeCase)
        let feed = Endpoint<Feed>.get("/cursor", query: [QueryItem("limit", "4")])
        let items = try await client.pages(feed) { page in
            page.value.nextCursor.map { feed.query(QueryItem("after", $0)) }
        }.items(\.items).collect()
        #expect(items.map(\.id) == Array(1...10))

        let stuck = Endpoint<Feed>.get("/cursor", query: [QueryItem("stuck", "1")])
        let error = await #expect(throws: ClientError.self) {
            _ = try await client.pages(stuck) { page in page.value.nextCursor.map { stuck.query(QueryItem("after", $0)) } }.collect()
        }
        #expect(error?.code == .pageLoop)
    }

    @Test func cancellingWhileAPageIsOnItsWay() async throws {
        let client = try await SharedAPI.client()
        // Every page after the first waits 30 s on the server.
        let endpoint = self.pages([QueryItem("total", "9"), QueryItem("ms", "30000")])
        let (firstPage, arrived) = AsyncStream<Void>.makeStream()
        let walk = Task { () async throws -> Int in
            var pages = 0
            for try await _ in client.pages(endpoint) {
                pages += 1
                arrived.yield()
            }
            return pages
        }
        for await _ in firstPage { break }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        walk.cancel()
        let result = await walk.result
        #expect(ContinuousClock.now - start < .seconds(15), "the page in flight was cancelled, not awaited")
        guard case .failure(let error) = result else {
            Issue.record("a cancelled walk ended quietly: \(result)")
            return
        }
        #expect((error as? ClientError)?.code == .cancelled, "\(error)")
    }
}
