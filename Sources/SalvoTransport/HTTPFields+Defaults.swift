import HTTPTypes

extension HTTPFields {
    /// Fills in a request's fields from what its body says of itself and from a client's
    /// defaults, in this order of precedence: the request's own fields, then the body's
    /// `Content-Type` and `Content-Encoding` (a multipart body's type carries its boundary),
    /// then each default field whose name is still unset — all its values, when a default is
    /// given more than once (two `Accept` lines). Applying the same defaults again changes
    /// nothing.
    ///
    /// The one rule both layers follow: the typed client applies its defaults this way before
    /// any middleware or transport (a mock included) sees the request, and the engine its
    /// own configuration's under it — with `addingBodyFields: false`, as the engine writes the
    /// body's fields itself, after the framing, where curl writes them. Returns what the body
    /// said that the request did not.
    ///
    /// ```swift
    /// var fields: HTTPFields = [.accept: "application/json"]
    /// fields.addDefaults([.accept: "text/html", .userAgent: "app/1.0"], for: .string("{}", contentType: "application/json"))
    /// // Accept: application/json, Content-Type: application/json, User-Agent: app/1.0
    /// ```
    @discardableResult
    public mutating func addDefaults(_ defaults: HTTPFields, for body: HTTPBody? = nil,
                                     addingBodyFields: Bool = true) -> (contentType: String?, contentEncoding: String?) {
        let said: (contentType: String?, contentEncoding: String?) = body.map { self.unsaid(by: $0) } ?? (nil, nil)
        if addingBodyFields {
            if let contentType = said.contentType { self[.contentType] = contentType }
            if let contentEncoding = said.contentEncoding { self[.contentEncoding] = contentEncoding }
        }
        if !defaults.isEmpty {
            // Decided against the fields as they were (and what the body says), not those
            // added here: a default given twice keeps both of its values.
            let set = self
            for field in defaults where !set.contains(field.name) {
                if field.name == .contentType, said.contentType != nil { continue }
                if field.name == .contentEncoding, said.contentEncoding != nil { continue }
                self.append(field)
            }
        }
        return said
    }

    /// What `body` says of itself that these fields leave unsaid: its `Content-Type` and
    /// `Content-Encoding`, each unless the fields name one.
    public func unsaid(by body: HTTPBody) -> (contentType: String?, contentEncoding: String?) {
        (body.contentType.flatMap { self.contains(.contentType) ? nil : $0 },
         body.contentEncoding.flatMap { self.contains(.contentEncoding) ? nil : $0 })
    }
}
