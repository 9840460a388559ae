import SalvoTransport
/// Whether responses in gzip or deflate are decoded, and the bounds on what they may
/// decode to.
///
/// When on, a request without its own `Accept-Encoding` gets `Accept-Encoding: gzip, deflate`
/// and its response body arrives decoded, as a stream, never buffered whole. The head keeps
/// the server's `Content-Encoding` and `Content-Length` (which describe the encoded body).
/// A request that sets `Accept-Encoding` itself gets the body exactly as sent.
public struct Decompression: Sendable, Hashable {
    public var isEnabled: Bool
    /// Decoded bytes at most for one body (`.decodedBodyTooLarge`); nil: no bound besides
    /// the collecting APIs' `maxBodySize`.
    public var maxDecodedSize: Int?
    /// Decoded bytes per compressed byte at most (`.compressionRatioExceeded`), checked once
    /// a body has decoded to more than 1 MiB. Default 200: text and JSON come to 5–20:1,
    /// long runs of one byte to about 1000:1, nested codings to far more. Raise it for data
    /// known to be that repetitive.
    public var maxRatio: Int

    public init(isEnabled: Bool = true, maxDecodedSize: Int? = nil, maxRatio: Int = 200) {
        self.isEnabled = isEnabled
        self.maxDecodedSize = maxDecodedSize
        self.maxRatio = maxRatio
    }

    /// Decode gzip and deflate with the default bounds.
    public static let enabled = Decompression()
    /// Hand bodies over as the server sent them.
    public static let disabled = Decompression(isEnabled: false)

    var limits: ContentDecoder.Limits {
        ContentDecoder.Limits(maxDecodedSize: self.maxDecodedSize ?? .max, maxRatio: self.maxRatio)
    }
}
