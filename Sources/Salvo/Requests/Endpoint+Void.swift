/// The builders of an endpoint whose success body is not read: `Endpoint<Void>.delete("/items/7")`
/// (its failure body, if it declares one, is decoded as for any endpoint).
extension TypedEndpoint where Success == Void {
    public static func get(_ path: String, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .get, path: path, query: query, headers: headers)
    }

    public static func delete(_ path: String, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .delete, path: path, query: query, headers: headers)
    }

    public static func head(_ path: String, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .head, path: path, query: query, headers: headers)
    }

    public static func options(_ path: String, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .options, path: path, query: query, headers: headers)
    }

    /// POST with `body` as JSON.
    public static func post<Body: Encodable & Sendable>(_ path: String, body: Body, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .post, path: path, query: query, headers: headers, body: .json(body))
    }

    /// POST with `body` as it is (form, multipart, bytes, a file…), or none.
    public static func post(_ path: String, body: HTTPBody? = nil, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .post, path: path, query: query, headers: headers, body: body.map { .raw($0) } ?? .none)
    }

    public static func put<Body: Encodable & Sendable>(_ path: String, body: Body, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .put, path: path, query: query, headers: headers, body: .json(body))
    }

    public static func put(_ path: String, body: HTTPBody? = nil, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .put, path: path, query: query, headers: headers, body: body.map { .raw($0) } ?? .none)
    }

    public static func patch<Body: Encodable & Sendable>(_ path: String, body: Body, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .patch, path: path, query: query, headers: headers, body: .json(body))
    }

    public static func patch(_ path: String, body: HTTPBody? = nil, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        Self(method: .patch, path: path, query: query, headers: headers, body: body.map { .raw($0) } ?? .none)
    }

    public static func get(_ path: some EndpointPath, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        .get(path.rawValue, query: query, headers: headers)
    }

    public static func delete(_ path: some EndpointPath, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        .delete(path.rawValue, query: query, headers: headers)
    }

    public static func post<Body: Encodable & Sendable>(_ path: some EndpointPath, body: Body, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        .post(path.rawValue, body: body, query: query, headers: headers)
    }

    public static func put<Body: Encodable & Sendable>(_ path: some EndpointPath, body: Body, query: [QueryItem] = [], headers: HTTPFields = [:]) -> Self {
        .put(path.rawValue, body: body, query: query, headers: headers)
    }
}
