import Foundation

/// A response's URL as a Foundation `URL`.
enum FoundationURL {
    /// `text` as a `URL`. A URL the transport requested always parses; should one not (a
    /// character Foundation refuses), it is percent-encoded first, never dropped.
    static func make(_ text: String) -> URL {
        if let url = URL(string: text) { return url }
        let encoded = text.addingPercentEncoding(withAllowedCharacters: .urlFragmentAllowed.union(["#", "%"])) ?? ""
        return URL(string: encoded) ?? URL(string: "about:blank")!
    }
}
