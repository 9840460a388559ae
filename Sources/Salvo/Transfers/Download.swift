import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A response body saved to a file by ``Client/download(_:to:options:progress:)``.
public struct DownloadedFile: Sendable {
    /// The request as sent.
    public let request: HTTPRequest
    public let head: HTTPResponse
    /// The URL the body came from (after redirects), as text.
    public let urlString: String
    /// The URL the body came from (after redirects).
    public var url: URL { FoundationURL.make(self.urlString) }
    /// Where the body now is.
    public let path: String
    /// Its size in bytes.
    public let size: Int

    public var status: HTTPResponse.Status { self.head.status }
}

extension Client {
    /// Saves `request`'s response body to `path`, streamed: memory stays flat whatever the size.
    ///
    /// ```swift
    /// let file = try await client.download(Endpoint<Empty>.get("/exports/2026.csv"), to: "/tmp/2026.csv") { progress in
    ///     print("\(progress.completedBytes) of \(progress.totalBytes ?? 0)")
    /// }
    /// ```
    ///
    /// The body goes to a hidden file next to `path` and is moved into place (`rename`,
    /// atomic) only once it is whole and flushed: on any failure — a refused status, a body
    /// cut short, a full disk, cancellation — nothing is left at `path` (a file already there
    /// stays as it was) and the partial file is removed. A refused status throws as
    /// `value(_:options:)` does, with the failure body. The call's total timeout, if any,
    /// covers the whole download.
    public func download<R: Request>(_ request: R, to path: String, options: CallOptions = CallOptions(),
                                     progress: ProgressHandler? = nil) async throws(ClientError) -> DownloadedFile {
        // Cancellable by id over the whole download, not only until the head (its stream,
        // made inside, is the same call: middleware see the same id).
        try await self.calls.run(options.id) { () async throws(ClientError) in
            try await self.save(request, to: path, options: options, progress: progress)
        }
    }

    private func save<R: Request>(_ request: R, to path: String, options: CallOptions,
                                  progress: ProgressHandler?) async throws(ClientError) -> DownloadedFile {
        let response = try await self.stream(request, options: options)
        let total = response.headerFields[.contentLength].flatMap { Int($0) }
        var file: PartialFile
        do {
            file = try PartialFile(destination: path)
        } catch {
            response.cancel()
            throw error
        }
        do throws(ClientError) {
            var written = 0
            progress?(TransferProgress(completedBytes: 0, totalBytes: total))
            var chunks = response.body.makeAsyncIterator()
            while true {
                let chunk: [UInt8]?
                do {
                    chunk = try await chunks.next()
                } catch {
                    var failure = ClientError.transport(error)
                    failure.responseHead = response.head
                    throw failure
                }
                guard let chunk else { break }
                try file.write(chunk)
                written += chunk.count
                progress?(TransferProgress(completedBytes: written, totalBytes: total))
            }
            // The engine checks the length itself; a transport of another kind might not. A
            // HEAD, 204 or 304 announces a length it does not send.
            let bodiless = response.request.method == .head || [204, 304].contains(response.status.code)
            if let total, response.decodedContentEncoding == nil, !bodiless, written != total {
                let detail = written < total ? "\(written) of \(total) bytes" : "\(written) bytes, \(total) announced"
                var failure = ClientError.transport(TransportError(written < total ? .truncatedBody : .invalidResponse, detail: detail))
                failure.responseHead = response.head
                throw failure
            }
            // A cancelled call never leaves a file in place, whatever its body said: a
            // transport's body that ended because of the cancel may report a clean end.
            if Task.isCancelled {
                var failure = ClientError.transport(.cancelled(.caller, phase: .readBody))
                failure.responseHead = response.head
                throw failure
            }
            try file.commit()
            return DownloadedFile(request: response.request, head: response.head, urlString: response.urlString, path: path, size: written)
        } catch {
            response.cancel()
            file.discard()
            throw error
        }
    }
}

/// A file being written next to its destination, moved into place when complete.
struct PartialFile {
    let destination: String
    let temporary: String
    private var fd: Int32

    init(destination: String) throws(ClientError) {
        let slash = destination.lastIndex(of: "/")
        let directory = slash.map { String(destination[..<$0]) } ?? "."
        let name = slash.map { String(destination[destination.index(after: $0)...]) } ?? destination
        guard !name.isEmpty, name != ".", name != ".." else {
            throw ClientError(.fileFailed, detail: "\(destination) names a directory, not a file")
        }
        var generator = SystemRandomNumberGenerator()
        let suffix = String(generator.next() & 0xFFFF_FFFF, radix: 16)
        self.destination = destination
        self.temporary = "\(directory.isEmpty ? "" : directory)/.\(name).\(suffix).download"
        self.fd = open(self.temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard self.fd >= 0 else {
            throw ClientError(.fileFailed, detail: "cannot create a file in \(directory.isEmpty ? "/" : directory): \(Self.reason())")
        }
    }

    mutating func write(_ bytes: [UInt8]) throws(ClientError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(self.fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ClientError(.fileFailed, detail: "cannot write \(self.temporary): \(Self.reason())")
            }
            offset += n
        }
    }

    /// Flushes, closes and moves the file into place.
    mutating func commit() throws(ClientError) {
        guard fsync(self.fd) == 0 else {
            throw ClientError(.fileFailed, detail: "cannot flush \(self.temporary): \(Self.reason())")
        }
        let closed = close(self.fd)
        self.fd = -1
        guard closed == 0 else {
            throw ClientError(.fileFailed, detail: "cannot close \(self.temporary): \(Self.reason())")
        }
        guard rename(self.temporary, self.destination) == 0 else {
            throw ClientError(.fileFailed, detail: "cannot move the download to \(self.destination): \(Self.reason())")
        }
    }

    /// Removes the partial file.
    mutating func discard() {
        if self.fd >= 0 {
            close(self.fd)
            self.fd = -1
        }
        unlink(self.temporary)
    }

    private static func reason() -> String {
        String(cString: strerror(errno))
    }
}
