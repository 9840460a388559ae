/// The decisions of a walk through pages, without I/O: which request comes next, when the
/// walk is over, and when it must stop with an error. ``PageSequence``'s iterator sends the
/// requests; this value only reads the pages it is given.
///
/// Theory of operation. The walk starts ready to send the caller's request, then alternates
/// between sending one and reading the page that answers it:
///
/// | step         | event                                   | next step, what the caller gets     |
/// |--------------|-----------------------------------------|-------------------------------------|
/// | `.send(r)`   | `nextRequest()`, fewer pages than bound | `.waiting`; `r` to send             |
/// | `.send(r)`   | `nextRequest()`, bound reached          | `.finished`; `.pageLimitExceeded`   |
/// | `.waiting`   | `received(page)`, no next page          | `.finished`                         |
/// | `.waiting`   | `received(page)`, a next request        | `.send(next)`                       |
/// | `.waiting`   | `received(page)`, next off origin/seen  | `.failed(error)`                    |
/// | `.failed(e)` | `nextRequest()`                         | `.finished`; `e`                    |
/// | `.finished`  | `nextRequest()`                         | `.finished`; nil                    |
/// | any          | `stop()` (a call failed, a cancel)      | `.finished`                         |
///
/// An error found while reading a page is held until the next request is asked for, so the
/// page itself is delivered first: everything before the fault reaches the caller.
///
/// Loops: every request sent is remembered by method, URL as sent (origin normalized, query
/// pairs sorted) and in-memory body; a next request equal to one of them is a loop. For
/// links, both the URL the page came from (after redirects) and the link's own URL count, so
/// a middleware that changes each URL (a signature, a timestamp) does not hide a loop.
struct PaginationState<R: Request>: Sendable {
    /// How the request after a page is found.
    enum Following: Sendable {
        /// The page response's `Link` with `rel="next"`.
        case links
        /// The caller's closure, from the page.
        case closure(@Sendable (Page<R>) -> R?)
    }

    /// A request as the loop check knows it.
    struct Key: Hashable, Sendable {
        var method: String
        var url: String
        var body: [UInt8] = []
    }

    private enum Step: Sendable {
        case send(PageRequest<R>)
        case waiting
        case failed(ClientError)
        case finished
    }

    private var step: Step
    private var seen: Set<Key> = []
    /// Pages read so far.
    private(set) var pagesReceived = 0
    let first: R
    let following: Following
    let maxPages: Int
    let baseURL: BaseURL
    let baseOrigin: Origin?
    let coders: Coders
    /// The client's own query items, encoded (`name=value` each), added to every request.
    let clientQuery: [String]

    init(first: R, following: Following, maxPages: Int, baseURL: BaseURL, configuration: Client.Configuration) {
        self.first = first
        self.following = following
        self.maxPages = max(1, maxPages)
        self.baseURL = baseURL
        self.baseOrigin = Origin(baseURL)
        self.coders = configuration.coders
        let encoded = QueryItem.encode(configuration.queryItems)
        self.clientQuery = encoded.isEmpty ? [] : encoded.split(separator: "&").map(String.init)
        self.step = .send(PageRequest(request: first, link: nil))
        if case .closure = following, let key = self.key(of: first) { self.seen.insert(key) }
    }

    /// The request to send for the next page; nil when there is none.
    ///
    /// - Throws: the error found after the last page (`.nextPageOffOrigin`, `.pageLoop`), or
    ///   `.pageLimitExceeded`; once, after which there is no next request.
    mutating func nextRequest() throws(ClientError) -> PageRequest<R>? {
        switch self.step {
        case .finished, .waiting:
            return nil
        case .failed(let error):
            self.step = .finished
            throw error
        case .send(let request):
            guard self.pagesReceived < self.maxPages else {
                self.step = .finished
                throw ClientError(.pageLimitExceeded, detail: "there is a page after \(self.maxPages), the most this sequence reads (maxPages)")
            }
            self.step = .waiting
            return request
        }
    }

    /// The walk is over: a page's call failed, or the caller cancelled.
    mutating func stop() {
        self.step = .finished
    }

    /// Reads `page` and decides what comes after it.
    mutating func received(_ page: Page<R>) {
        self.pagesReceived += 1
        switch self.following {
        case .links:
            self.step = self.stepFollowingLink(of: page)
        case .closure(let next):
            guard let request = next(page) else {
                self.step = .finished
                return
            }
            if let key = self.key(of: request) {
                guard self.seen.insert(key).inserted else {
                    self.step = .failed(self.loop("the request after page \(page.number), \(key.method) \(key.url), was already sent", page))
                    return
                }
            }
            self.step = .send(PageRequest(request: request, link: nil))
        }
    }

    private mutating func stepFollowingLink(of page: Page<R>) -> Step {
        let pageURL = URIReference(page.response.urlString)
        self.seen.insert(self.key(ofSent: page.response.request))
        if let key = self.key(ofURL: pageURL) { self.seen.insert(key) }
        // A link with an anchor is about another resource than this page, unless the anchor
        // names the page itself (RFC 8288 §3.2).
        let next = page.response.links.first { link in
            guard link.hasRelation("next") else { return false }
            guard let anchor = link.anchor else { return true }
            return self.key(ofURL: URIReference(anchor).resolved(against: pageURL)) == self.key(ofURL: pageURL)
        }
        guard let next, let url = next.url else { return .finished }
        var target = URIReference(url)
        target.fragment = nil
        guard let origin = Origin(scheme: target.scheme, authority: target.authority) else {
            return .failed(self.offOrigin("the next link of page \(page.number), <\(next.target)>, is not an http or https URL", page))
        }
        guard origin == self.baseOrigin else {
            return .failed(self.offOrigin("the next link of page \(page.number), \(target), leaves \(self.baseURL.scheme)://\(self.baseURL.authority)", page))
        }
        // The same origin, so the request goes where the client's others go, spelled as the
        // base URL spells it: a link's `HOST:443` or its userinfo (credentials are the
        // client's middleware's business) never reach the head.
        let authority = self.baseURL.authority
        let path = target.path.isEmpty ? "/" : target.path
        let query = self.removingClientQuery(from: target.query)
        let link = PageRequest<R>.LinkTarget(scheme: self.baseURL.scheme, authority: authority, target: path + (query.map { "?" + $0 } ?? ""))
        let sent = self.key(ofURL: URIReference(scheme: self.baseURL.scheme, authority: authority, path: path,
                                                query: self.addingClientQuery(to: query)))
        if let sent {
            guard self.seen.insert(sent).inserted else {
                return .failed(self.loop("the next link of page \(page.number), \(target), leads to a page already read", page))
            }
        }
        return .send(PageRequest(request: self.first, link: link))
    }

    // MARK: Errors

    private func offOrigin(_ detail: String, _ page: Page<R>) -> ClientError {
        page.response.annotated(ClientError(.nextPageOffOrigin, detail: detail))
    }

    private func loop(_ detail: String, _ page: Page<R>) -> ClientError {
        page.response.annotated(ClientError(.pageLoop, detail: detail))
    }

    // MARK: Queries and keys

    /// `query` without one occurrence of each of the client's own items.
    private func removingClientQuery(from query: String?) -> String? {
        guard let query, !self.clientQuery.isEmpty else { return query }
        var pairs = query.split(separator: "&", omittingEmptySubsequences: false).map(String.init)
        for item in self.clientQuery {
            if let index = pairs.firstIndex(of: item) { pairs.remove(at: index) }
        }
        return pairs.isEmpty ? nil : pairs.joined(separator: "&")
    }

    /// `query` as the client sends it: its own items after the request's.
    private func addingClientQuery(to query: String?) -> String? {
        guard !self.clientQuery.isEmpty else { return query }
        return ((query.map { [$0] } ?? []) + self.clientQuery).joined(separator: "&")
    }

    /// The key of a caller's request (closures): nil when its head cannot be made — sending
    /// it will say why — or its body is a stream, whose bytes cannot be compared.
    private func key(of request: R) -> Key? {
        guard let head = try? request.makeHTTPRequest(baseURL: self.baseURL, coders: self.coders) else { return nil }
        var key = self.key(ofSent: head)
        switch (try? request.encodeBody(with: self.coders))?.content {
        case nil: break
        case .bytes(let bytes): key.body = bytes
        case .stream: return nil
        }
        return key
    }

    private func key(ofSent head: HTTPRequest) -> Key {
        let url = URIReference("\(head.scheme ?? "http")://\(head.authority ?? "")\(head.path ?? "/")")
        return Key(method: head.method.rawValue, url: self.key(ofURL: url)?.url ?? url.description)
    }

    /// A GET of `url`, its origin normalized and its query pairs sorted: two spellings of one
    /// page's URL get one key. nil for a URL without an http(s) origin.
    private func key(ofURL url: URIReference) -> Key? {
        guard let origin = Origin(scheme: url.scheme, authority: url.authority) else { return nil }
        var text = origin.description + (url.path.isEmpty ? "/" : url.path)
        if let query = url.query {
            text += "?" + query.split(separator: "&", omittingEmptySubsequences: false).sorted().joined(separator: "&")
        }
        return Key(method: "GET", url: text)
    }
}
