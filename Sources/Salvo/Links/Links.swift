/// The links of a response's `Link` header fields (RFC 8288), in order, targets resolved
/// against the response's URL.
///
/// ```swift
/// let response = try await client.send(Endpoint<[Repo]>.get("/user/repos"))
/// let next = response.links.first(rel: "next")?.url   // "https://api.github.com/user/repos?page=2"
///
/// let links = Links("<https://api.example.com/items?page=3>; rel=\"next\", </items?page=1>; rel=first",
///                   base: "https://api.example.com/items?page=2")
/// links.first(rel: "FIRST")?.url                      // "https://api.example.com/items?page=1"
/// ```
///
/// Parsing never fails: a link-value that cannot be read is left out and the others are kept
/// (see `LinkFieldParser` for what is tolerated). Relation types and parameter names compare
/// without regard to case.
public struct Links: Sendable, Hashable, RandomAccessCollection {
    private var links: [Link]

    /// The links of `fieldValues` — the values of every `Link` field of a message, each a
    /// comma-separated list — with targets resolved against `base` (the URL of the response)
    /// when it is an absolute URI.
    public init(_ fieldValues: some Sequence<String>, base: String? = nil) {
        let base = base.map { URIReference($0) }
        self.links = fieldValues.flatMap { value in
            LinkFieldParser.parse(value).map { Link($0, base: base) }
        }
    }

    /// The links of one `Link` field value.
    public init(_ fieldValue: String, base: String? = nil) {
        self.init(CollectionOfOne(fieldValue), base: base)
    }

    /// The links of the `Link` fields among `fields`.
    public init(_ fields: HTTPFields, base: String? = nil) {
        self.init(fields[values: .link], base: base)
    }

    /// Links as they are.
    public init(_ links: [Link]) {
        self.links = links
    }

    /// The first link with `relation` among its relation types (any case).
    ///
    /// ```swift
    /// links.first(rel: "next")
    /// ```
    public func first(rel relation: String) -> Link? {
        self.links.first { $0.hasRelation(relation) }
    }

    public var startIndex: Int { self.links.startIndex }
    public var endIndex: Int { self.links.endIndex }
    public subscript(position: Int) -> Link { self.links[position] }
}

extension Response {
    /// The links of the response's `Link` header fields, targets resolved against its
    /// ``url`` (see ``Links``).
    public var links: Links { Links(self.headerFields, base: self.urlString) }
}

extension HTTPField.Name {
    /// `Link` (RFC 8288 §3).
    static let link = HTTPField.Name("Link")!
}
