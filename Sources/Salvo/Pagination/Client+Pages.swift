extension Client {
    /// The pages of `request`, following each response's `Link: <…>; rel="next"` (RFC 8288)
    /// until a page has none — the pagination of GitHub's API and many others. Yields each
    /// page's decoded value; `.withResponses` adds the response, `.items` flattens lists.
    ///
    /// ```swift
    /// for try await issues in client.pages(Endpoint<[Issue]>.get("/repos/o/r/issues", query: [QueryItem("per_page", "100")])) {
    ///     print(issues.count)
    /// }
    /// let everyone = try await client.pages(Endpoint<[User]>.get("/users")).items.collect()
    /// ```
    ///
    /// Each page is a call like any other: the client's middleware, validators and coders
    /// apply, and `options` is given to each (its `deadline`, if any, bounds them all). A
    /// next link is resolved against the URL of the page that carried it and requested with
    /// GET and the request's header fields; it must stay on the origin (scheme, host, port)
    /// of the client's base URL. The sequence throws, after the pages before, when the link
    /// leads elsewhere (``ClientError/Code/nextPageOffOrigin``), back to a page already read
    /// (``ClientError/Code/pageLoop``), or past `maxPages` (``ClientError/Code/pageLimitExceeded``).
    ///
    /// - Parameters:
    ///   - request: the first page's request; its response type is the page type.
    ///   - maxPages: the most pages read; 1,000 by default (100,000 items at 100 a page).
    ///   - options: given to each page's call.
    public func pages<R: Request>(_ request: R, maxPages: Int = 1000, options: CallOptions = CallOptions()) -> Pages<R> {
        Pages(client: self, first: request, following: .links, maxPages: maxPages, options: options, elements: { [$0.value] })
    }

    /// The pages of `request`, each next request made by `next` from the page before — for
    /// cursor, offset and page-number pagination. `next` returns nil after the last page.
    ///
    /// ```swift
    /// struct Feed: Decodable, Sendable { var items: [Item]; var nextCursor: String? }
    /// let feed = Endpoint<Feed>.get("/feed", query: [QueryItem("limit", "50")])
    /// let items = try await client.pages(feed) { page in
    ///     page.value.nextCursor.map { feed.query(QueryItem("cursor", $0)) }
    /// }.items(\.items).collect()
    ///
    /// // Page numbers, until an empty page:
    /// let pages = client.pages(Endpoint<[Item]>.get("/items", query: [QueryItem("page", "1")])) { page in
    ///     page.value.isEmpty ? nil : .get("/items", query: [QueryItem("page", "\(page.number + 1)")])
    /// }
    /// ```
    ///
    /// A next request equal to one already sent (same method, URL and body) ends the
    /// sequence with ``ClientError/Code/pageLoop``: a cursor that repeats would go round for ever.
    public func pages<R: Request>(_ request: R, maxPages: Int = 1000, options: CallOptions = CallOptions(),
                                  next: @escaping @Sendable (Page<R>) -> R?) -> Pages<R> {
        Pages(client: self, first: request, following: .closure(next), maxPages: maxPages, options: options, elements: { [$0.value] })
    }

    // Endpoint values by implicit member: `client.pages(.issues(of: repo))`.

    public func pages<Success, Failure>(_ endpoint: TypedEndpoint<Success, Failure>, maxPages: Int = 1000,
                                        options: CallOptions = CallOptions()) -> Pages<TypedEndpoint<Success, Failure>> {
        Pages(client: self, first: endpoint, following: .links, maxPages: maxPages, options: options, elements: { [$0.value] })
    }

    public func pages<Success, Failure>(_ endpoint: TypedEndpoint<Success, Failure>, maxPages: Int = 1000,
                                        options: CallOptions = CallOptions(),
                                        next: @escaping @Sendable (Page<TypedEndpoint<Success, Failure>>) -> TypedEndpoint<Success, Failure>?)
        -> Pages<TypedEndpoint<Success, Failure>> {
        Pages(client: self, first: endpoint, following: .closure(next), maxPages: maxPages, options: options, elements: { [$0.value] })
    }
}
