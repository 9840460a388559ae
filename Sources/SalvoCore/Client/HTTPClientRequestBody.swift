/// What a request sends after its head.
public struct HTTPClientRequestBody: Sendable {
    enum Storage: Sendable {
        case bytes([UInt8])
    }

    let storage: Storage

    /// Whether the body can be sent again (after a redirect, or on a fresh connection).
    var isReplayable: Bool {
        switch self.storage {
        case .bytes: true
        }
    }

    /// Bytes held in memory, sent with a Content-Length.
    public static func bytes(_ bytes: [UInt8]) -> HTTPClientRequestBody {
        HTTPClientRequestBody(storage: .bytes(bytes))
    }

    /// UTF-8 text, sent with a Content-Length.
    public static func string(_ text: String) -> HTTPClientRequestBody {
        HTTPClientRequestBody(storage: .bytes(Array(text.utf8)))
    }
}
