/// One link of a `Link` header field (RFC 8288): a target, the relation types that say what
/// it is to the resource the response came from (`next`, `prev`, `last`, `alternate`…), and
/// its other parameters.
///
/// ```swift
/// // Link: <https://api.github.com/repositories/1/issues?page=2>; rel="next", <…?page=5>; rel="last"
/// let links = try await client.send(Endpoint<[Issue]>.get("/repos/o/r/issues")).links
/// if let next = links.first(rel: "next") {
///     print(next.url ?? next.target)      // the target, resolved against the response's URL
/// }
/// ```
///
/// Links come from ``Links``, which parses field values; a link is a plain value you can
/// also make yourself.
public struct Link: Sendable, Hashable {
    /// One parameter of a link: its name, lowercased, and its value, unquoted (`""` for a
    /// parameter without one).
    public struct Parameter: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The target as written between `<` and `>`: a URI reference, often relative.
    public var target: String
    /// The target resolved against the URL of the response that carried it (RFC 3986 §5.2);
    /// nil when the target is relative and there was no such URL.
    public var url: String?
    /// The relation types, lowercased, in the order given: `rel="next last"` is
    /// `["next", "last"]`. Registered types are words, extension types URIs.
    public var relations: [String]
    /// The `anchor` parameter as written, when there is one: the link is then about that
    /// resource (the context), not about the response that carried it.
    public var anchor: String?
    /// The other parameters (`title`, `type`, `hreflang`, extensions…), names lowercased, in
    /// order. A `title*` in RFC 8187's form (`UTF-8''caf%C3%A9`) is decoded and given as the
    /// `title`, in place of a plain one.
    public var parameters: [Parameter]

    public init(target: String, url: String? = nil, relations: [String], anchor: String? = nil, parameters: [Parameter] = []) {
        self.target = target
        self.url = url
        self.relations = relations
        self.anchor = anchor
        self.parameters = parameters
    }

    /// Whether `relation` is one of the link's relation types, compared without regard to
    /// case (RFC 8288 §2.1).
    public func hasRelation(_ relation: String) -> Bool {
        let wanted = LinkFieldParser.lowercased(relation.utf8)
        return self.relations.contains(wanted)
    }

    /// The value of the first parameter named `name` (any case), or nil.
    ///
    /// ```swift
    /// link[parameter: "title"]   // "Next page"
    /// ```
    public subscript(parameter name: String) -> String? {
        let wanted = LinkFieldParser.lowercased(name.utf8)
        return self.parameters.first { $0.name == wanted }?.value
    }
}

extension Link {
    /// The link a parsed link-value stands for, by Appendix B.2 of RFC 8288: the first `rel`
    /// and `anchor` count; `media`, `title`, `title*` and `type` count once, the first time;
    /// a `name*` that decodes replaces every plain `name`, and one that does not is dropped.
    init(_ raw: LinkFieldParser.RawLink, base: URIReference?) {
        var relations: String?
        var anchor: String?
        var parameters: [Parameter] = []
        for (name, value) in raw.parameters {
            switch name {
            case "rel":
                if relations == nil { relations = value }
            case "anchor":
                if anchor == nil { anchor = value }
            case "media", "title", "title*", "type":
                if !parameters.contains(where: { $0.name == name }) { parameters.append(Parameter(name: name, value: value)) }
            default:
                parameters.append(Parameter(name: name, value: value))
            }
        }
        for starred in Set(parameters.map(\.name).filter { $0.hasSuffix("*") }) {
            let plain = String(starred.dropLast())
            let decoded = parameters.filter { $0.name == starred }.map { LinkFieldParser.decodeExtendedValue($0.value) }
            if decoded.contains(where: { $0 != nil }) {
                parameters.removeAll { $0.name == plain }
            }
            var remaining = decoded[...]
            parameters = parameters.compactMap { parameter in
                guard parameter.name == starred else { return parameter }
                let value = remaining.removeFirst()
                return value.map { Parameter(name: plain, value: $0) }
            }
        }
        let reference = URIReference(raw.target)
        var resolved: URIReference?
        if let base, base.isAbsolute {
            resolved = reference.resolved(against: base)
        } else if reference.isAbsolute {
            resolved = reference.resolved(against: reference)
        }
        self.init(target: raw.target, url: resolved?.description,
                  relations: (relations ?? "").split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" })
                      .map { LinkFieldParser.lowercased($0.utf8) },
                  anchor: anchor, parameters: parameters)
    }
}
