/// The usual media type of a file, from its name's extension: what a file body or a file
/// part is sent as when the caller names none. One table for the typed layer's `MediaType`
/// and this layer's file bodies.
package enum FileMediaTypes {
    /// `application/octet-stream` when the extension is not one of the common ones.
    package static func type(forFileNamed name: String) -> String {
        guard let dot = name.lastIndex(of: "."), !name[dot...].contains("/") else { return octetStream }
        switch name[name.index(after: dot)...].lowercased() {
        case "json": return "application/json"
        case "ndjson", "jsonl": return "application/x-ndjson"
        case "txt", "text", "log", "md": return "text/plain; charset=utf-8"
        case "html", "htm": return "text/html; charset=utf-8"
        case "css": return "text/css"
        case "js", "mjs": return "text/javascript"
        case "csv": return "text/csv"
        case "xml": return "application/xml"
        case "pdf": return "application/pdf"
        case "zip": return "application/zip"
        case "gz", "tgz": return "application/gzip"
        case "tar": return "application/x-tar"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "svg": return "image/svg+xml"
        case "mp4": return "video/mp4"
        case "mp3": return "audio/mpeg"
        case "wav": return "audio/wav"
        default: return octetStream
        }
    }

    package static let octetStream = "application/octet-stream"
}
