import HTTPTypes

/// What a response may carry besides its head, body and metrics — the redirects that led to
/// it, interim responses, a decoded content coding — which most responses do not have.
///
/// Kept behind one reference, nil while all of it is empty: a response is copied, moved into
/// a `Result`, handed to a continuation and freed at least once on its way to the caller, and
/// each of those touches one pointer here instead of a dozen.
package struct ExchangeExtras: Sendable {
    package struct Values: Sendable {
        package var redirectChain: [String] = []
        package var unfollowedRedirect: String?
        package var redirects: [RedirectHop] = []
        package var effectiveRequest: HTTPRequest?
        package var interimResponses: [HTTPResponse] = []
        package var decodedContentEncoding: String?
        /// How an HTTP cache answered (nil: no cache took part).
        package var cacheStatus: CacheStatus?

        package init() {}

        var isEmpty: Bool {
            self.redirectChain.isEmpty && self.unfollowedRedirect == nil && self.redirects.isEmpty
                && self.effectiveRequest == nil && self.interimResponses.isEmpty && self.decodedContentEncoding == nil
                && self.cacheStatus == nil
        }
    }

    /// Immutable: a change stores a new box, so a copied response never sees another's edit.
    private final class Storage: Sendable {
        let values: Values
        init(_ values: Values) { self.values = values }
    }

    private var storage: Storage?

    package init() {}

    package init(_ values: Values) {
        self.values = values
    }

    /// All of it; setting stores a new box (or none, when it is all empty).
    package var values: Values {
        get { self.storage?.values ?? Values() }
        set { self.storage = newValue.isEmpty ? nil : Storage(newValue) }
    }
}
