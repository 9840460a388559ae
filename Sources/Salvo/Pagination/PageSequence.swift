/// The pages of a paginated request as an `AsyncSequence`: each page is requested when the
/// loop asks for it, through the client like any call, and what the sequence yields is drawn
/// from it — the page's decoded value (``Pages``), the page with its response
/// (``withResponses``), or the items in it (``items``).
///
/// ```swift
/// for try await repos in client.pages(Endpoint<[Repo]>.get("/user/repos", query: [QueryItem("per_page", "100")])) {
///     print(repos.count)
/// }
/// let all = try await client.pages(Endpoint<[Repo]>.get("/user/repos")).items.collect()
/// ```
///
/// The sequence ends after the last page, and throws a ``ClientError`` when a page's call
/// fails, when the next page cannot be followed (``ClientError/Code/nextPageOffOrigin``,
/// ``ClientError/Code/pageLoop``), when there are more pages than `maxPages`
/// (``ClientError/Code/pageLimitExceeded``), or when the task is cancelled (`.cancelled`) —
/// never quietly ending early, so that a collected list is whole or an error. Every element
/// of the pages before an error is delivered first. Each iteration walks the pages anew.
public struct PageSequence<R: Request, Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = ClientError

    let client: Client
    let first: R
    let following: PaginationState<R>.Following
    let maxPages: Int
    let options: Client.CallOptions
    /// What the sequence yields of each page, in order.
    let elements: @Sendable (Page<R>) -> [Element]

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(sequence: self)
    }

    /// The same pages, yielding something else of each.
    func yielding<Other>(_ elements: @escaping @Sendable (Page<R>) -> [Other]) -> PageSequence<R, Other> {
        PageSequence<R, Other>(client: self.client, first: self.first, following: self.following, maxPages: self.maxPages,
                               options: self.options, elements: elements)
    }

    /// Every element, in order, in one array: the whole list, or the error that stopped it.
    ///
    /// ```swift
    /// let users = try await client.pages(Endpoint<[User]>.get("/users")).items.collect()
    /// ```
    public func collect() async throws(ClientError) -> [Element] {
        var all: [Element] = []
        var iterator = self.makeAsyncIterator()
        while let element = try await iterator.next() {
            all.append(element)
        }
        return all
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: PageSequence
        private var state: PaginationState<R>
        /// Elements of the latest page not yielded yet.
        private var pending: [Element] = []
        private var pendingIndex = 0

        init(sequence: PageSequence) {
            self.sequence = sequence
            self.state = PaginationState(first: sequence.first, following: sequence.following, maxPages: sequence.maxPages,
                                         baseURL: sequence.client.baseURL, configuration: sequence.client.configuration)
        }

        public mutating func next() async throws(ClientError) -> Element? {
            try await self.next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ClientError) -> Element? {
            while self.pendingIndex == self.pending.count {
                guard let page = try await self.nextPage() else { return nil }
                self.pending = self.sequence.elements(page)
                self.pendingIndex = 0
            }
            defer { self.pendingIndex += 1 }
            return self.pending[self.pendingIndex]
        }

        /// Sends the next page's request and reads its page; nil after the last.
        nonisolated(nonsending) private mutating func nextPage() async throws(ClientError) -> Page<R>? {
            guard let request = try self.state.nextRequest() else { return nil }
            let number = self.state.pagesReceived + 1
            // A cancelled loop stops between pages too, not only inside a call: a partial
            // list must not look whole.
            if Task.isCancelled {
                self.state.stop()
                throw ClientError(.cancelled, detail: "cancelled before page \(number)")
            }
            let value: R.SuccessResponseBody
            let response: Response<R.SuccessResponseBody, R.FailureResponseBody>
            do {
                (value, response) = try await self.sequence.client.valueAndResponse(request, options: self.sequence.options)
            } catch {
                self.state.stop()
                throw error
            }
            let page = Page(value: value, response: response, request: request.request, number: number)
            self.state.received(page)
            return page
        }
    }
}

/// The decoded values of a paginated request's pages (see `Client.pages(_:maxPages:options:)`).
public typealias Pages<R: Request> = PageSequence<R, R.SuccessResponseBody>

extension PageSequence where Element == R.SuccessResponseBody {
    /// Each page with the response it came in, its request and its number: for header
    /// fields (rate limits, totals) and status.
    ///
    /// ```swift
    /// for try await page in client.pages(Endpoint<[Repo]>.get("/user/repos")).withResponses {
    ///     print(page.number, page.response.headerFields[HTTPField.Name("X-RateLimit-Remaining")!] ?? "?")
    /// }
    /// ```
    public var withResponses: PageSequence<R, Page<R>> {
        self.yielding { [$0] }
    }

    /// The items of every page, one by one, as `extract` takes them out of each page's
    /// value: for a list inside an envelope.
    ///
    /// ```swift
    /// struct Feed: Decodable, Sendable { var entries: [Entry]; var nextCursor: String? }
    /// let entries = try await client.pages(first, next: …).items(\.entries).collect()
    /// ```
    public func items<Item: Sendable>(_ extract: @escaping @Sendable (R.SuccessResponseBody) -> [Item]) -> PageSequence<R, Item> {
        self.yielding { extract($0.value) }
    }
}

extension PageSequence where Element == R.SuccessResponseBody, Element: Collection, Element.Element: Sendable {
    /// The items of every page, one by one, when a page is itself a list (`[User]`).
    ///
    /// ```swift
    /// for try await user in client.pages(Endpoint<[User]>.get("/users")).items { print(user.name) }
    /// ```
    public var items: PageSequence<R, Element.Element> {
        self.yielding { Array($0.value) }
    }
}
