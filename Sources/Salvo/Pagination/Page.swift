/// One page of a paginated response: its decoded value, the response it came in (for
/// headers such as rate limits), the request it answers and its number.
///
/// ```swift
/// for try await page in client.pages(Endpoint<[Repo]>.get("/user/repos")).withResponses {
///     print(page.number, page.value.count, page.response.headerFields[HTTPField.Name("X-RateLimit-Remaining")!] ?? "")
/// }
/// ```
public struct Page<R: Request>: Sendable {
    /// The success body, decoded (after the client's validators accepted the response).
    public let value: R.SuccessResponseBody
    /// The response, with its status, header fields, URL and raw body.
    public let response: Response<R.SuccessResponseBody, R.FailureResponseBody>
    /// The request this page answers. A page reached through a `Link` was sent as this
    /// request with GET at the link's URL: `response.url` says where.
    public let request: R
    /// 1 for the first page, then 2, 3…
    public let number: Int
}
