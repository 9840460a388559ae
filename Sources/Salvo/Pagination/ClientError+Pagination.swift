// Why a walk through pages stops with an error rather than just ending: the caller would
// otherwise take a partial list for the whole one. Each case says what was refused, after
// every page before it has been delivered.
extension ClientError.Code {
    /// A page's `next` link leads to another origin (scheme, host or port) than the client's
    /// base URL, or is no http or https URL: it is not followed, so no request — nor the
    /// credentials the client's middleware add — goes where the client was not pointed.
    public static let nextPageOffOrigin = ClientError.Code(name: "next page is on another origin")
    /// A page's next request is one already made (a link back to an earlier page, a cursor
    /// that repeats): following it would go round for ever.
    public static let pageLoop = ClientError.Code(name: "pages loop")
    /// There is another page after as many as the sequence allows (`maxPages`).
    public static let pageLimitExceeded = ClientError.Code(name: "too many pages")
}
