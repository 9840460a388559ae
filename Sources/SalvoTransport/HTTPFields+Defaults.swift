import HTTPTypes

extension HTTPFields {
    /// Fills in a request's fields from a client's defaults and from what its body says of
    /// itself: every default field whose name the request does not set — all its values, when
    /// a default is given more than once (two `Accept` lines) — then the body's `Content-Type`
    /// and `Content-Encoding`, unless the request names its own. The request's own fields
    /// always win, and applying the same defaults again changes nothing.
    ///
    /// The one rule both layers follow: the typed client applies its defaults this way before
    /// any middleware or transport (a mock included) sees the request, and the engine its
    /// own configuration's under it.
    ///
    /// ```swift
    /// var fields: HTTPFields = [.accept: "application/json"]
    /// fields.addDefaults([.accept: "text/html", .userAgent: "app/1.0"], for: .string("{}", contentType: "application/json"))
    /// // Accept: application/json, User-Agent: app/1.0, Content-Type: application/json
    /// ```
    public mutating func addDefaults(_ defaults: HTTPFields, for body: HTTPBody? = nil) {
        if !defaults.isEmpty {
            // Decided against the request's own fields, not those added here: a default given
            // twice keeps both of its values.
            let own = self
            for field in defaults where !own.contains(field.name) {
                self.append(field)
            }
        }
        if let body {
            let said = self.unsaid(by: body)
            if let contentType = said.contentType { self[.contentType] = contentType }
            if let contentEncoding = said.contentEncoding { self[.contentEncoding] = contentEncoding }
        }
    }

    /// What `body` says of itself that these fields leave unsaid: its `Content-Type` and
    /// `Content-Encoding`, each unless the fields name one. (The engine writes them itself,
    /// after the framing, in curl's order; ``addDefaults(_:for:)`` adds them to the fields.)
    public func unsaid(by body: HTTPBody) -> (contentType: String?, contentEncoding: String?) {
        (body.contentType.flatMap { self.contains(.contentType) ? nil : $0 },
         body.contentEncoding.flatMap { self.contains(.contentEncoding) ? nil : $0 })
    }
}
