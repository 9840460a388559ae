import Foundation

/// One part of a `@Multipart` endpoint's body. Its name is the parameter's unless it gives
/// its own; a file part is streamed from disk when the request is sent.
///
/// ```swift
/// @Multipart
/// @POST("/attachments")
/// func upload(avatar: Part, note: Part) async throws
///
/// try await api.upload(avatar: try .file(path: "me.png"), note: Part(text: "hello"))
/// ```
public struct Part: Sendable {
    /// The part's name; `nil` takes the parameter's.
    public var name: String?
    /// The file name the part announces, if any.
    public var fileName: String?
    /// The part's media type; text parts are `text/plain; charset=utf-8` unless set.
    public var mimeType: String?
    let content: MultipartPart.Content

    /// Bytes, with an optional file name and media type.
    public init(data: Data, name: String? = nil, fileName: String? = nil, mimeType: String? = nil) {
        self.init(content: .bytes(Array(data)), name: name, fileName: fileName, mimeType: mimeType)
    }

    /// Bytes, with an optional file name and media type.
    public init(bytes: [UInt8], name: String? = nil, fileName: String? = nil, mimeType: String? = nil) {
        self.init(content: .bytes(bytes), name: name, fileName: fileName, mimeType: mimeType)
    }

    /// Text, sent as UTF-8.
    public init(text: String, name: String? = nil) {
        self.init(content: .bytes(Array(text.utf8)), name: name, fileName: nil, mimeType: nil)
    }

    /// A file, read when the request is sent; its file name is the path's last component
    /// unless given, its media type guessed from the extension unless given.
    public static func file(path: String, name: String? = nil, fileName: String? = nil,
                            mimeType: String? = nil) throws(ClientError) -> Part {
        let part = try MultipartPart.file(path: path, name: name ?? "file", filename: fileName,
                                          contentType: mimeType.map { MediaType($0) })
        return Part(content: part.content, name: name, fileName: part.filename, mimeType: mimeType ?? part.contentType?.description)
    }

    init(content: MultipartPart.Content, name: String?, fileName: String?, mimeType: String?) {
        self.content = content
        self.name = name
        self.fileName = fileName
        self.mimeType = mimeType
    }

    /// The part as the multipart encoder takes it, named `key` unless it has a name.
    public func multipartPart(named key: String) -> MultipartPart {
        MultipartPart(name: self.name ?? key, filename: self.fileName, contentType: self.mimeType.map { MediaType($0) },
                      content: self.content)
    }
}
