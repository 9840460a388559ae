#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Files streamed from disk.
extension HTTPBody {
    /// A file read from disk as it is sent, never whole into memory.
    ///
    /// A regular file goes with a Content-Length of its size now, and is replayable (each
    /// attempt reads it again); if it grows or shrinks while it is sent, the request fails
    /// (`.requestBodyFailed`) rather than send a body that is not the file. A file whose size
    /// is not known up front — a pipe, a device, the files of /proc and /sys (which say 0) — is
    /// read to its end and sent chunked; only a regular one can be replayed.
    ///
    /// Without a `contentType`, the body's type comes from the file name's extension: the
    /// common ones (`json`, `txt`, `html`, `css`, `js`, `csv`, `xml`, `pdf`, `zip`, `gz`,
    /// `png`, `jpg`/`jpeg`, `gif`, `webp`, `svg`, `mp4`, `mp3`, `wav` and a few more), and
    /// `application/octet-stream` for any other.
    ///
    /// - Throws: `.requestBodyFailed` when the file cannot be opened, or is a directory.
    public static func file(path: String, contentType: String? = nil) throws(TransportError) -> HTTPBody {
        let contentType = contentType ?? FileMediaTypes.type(forFileNamed: path)
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw TransportError(.requestBodyFailed, phase: .request, errno: errno, detail: "cannot read \(path)")
        }
        let type = info.st_mode & S_IFMT
        guard type != S_IFDIR else {
            throw TransportError(.requestBodyFailed, phase: .request, detail: "\(path) is a directory")
        }
        guard access(path, R_OK) == 0 else {
            throw TransportError(.requestBodyFailed, phase: .request, errno: errno, detail: "cannot read \(path)")
        }
        let size = Int(info.st_size)
        if type == S_IFREG && size > 0 {
            return HTTPBody(.stream(length: size, replayable: true) { writer in
                try await FileBodyReader.send(path: path, size: size) { (chunk) throws(TransportError) in try await writer.write(chunk) }
            }, contentType: contentType)
        }
        return HTTPBody(.stream(length: nil, replayable: type == S_IFREG) { writer in
            try await FileBodyReader.send(path: path, size: nil) { (chunk) throws(TransportError) in try await writer.write(chunk) }
        }, contentType: contentType)
    }

}

/// Reads a file in 64 KiB pieces into a request body.
package enum FileBodyReader {
    /// Delivers `size` bytes of the file and checks it ends there, or (size nil) all of it.
    package static func send(path: String, size: Int?,
                             deliver: ([UInt8]) async throws(TransportError) -> Void) async throws(TransportError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TransportError(.requestBodyFailed, phase: .write, errno: errno, detail: "cannot open \(path)")
        }
        defer { close(fd) }
        var sent = 0
        while true {
            let piece = size.map { min($0 - sent, 64 * 1024) } ?? 64 * 1024
            // One byte past the announced size: a file that grew must not go out cut short.
            var chunk = [UInt8](repeating: 0, count: max(piece, 1))
            let n = chunk.withUnsafeMutableBytes { buffer -> Int in
                while true {
                    let n = read(fd, buffer.baseAddress, buffer.count)
                    if n >= 0 || errno != EINTR { return n }
                }
            }
            guard n >= 0 else {
                throw TransportError(.requestBodyFailed, phase: .write, errno: errno, detail: "cannot read \(path)")
            }
            if let size, piece == 0 {
                guard n == 0 else {
                    throw TransportError(.requestBodyFailed, phase: .write, detail: "\(path) grew past its \(size) bytes while it was sent")
                }
                return
            }
            if n == 0 {
                guard let size else { return }
                throw TransportError(.requestBodyFailed, phase: .write, detail: "\(path) shrank to \(sent) of its \(size) bytes while it was sent")
            }
            if n < chunk.count { chunk.removeLast(chunk.count - n) }
            sent += n
            try await deliver(chunk)
        }
    }
}

