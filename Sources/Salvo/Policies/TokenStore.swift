import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where a ``TokenAuthorization`` keeps its token between calls and runs.
public protocol TokenStore: Sendable {
    /// The stored token, nil when there is none.
    func load() throws(ClientError) -> AuthToken?
    /// Stores `token`, or removes the stored one for nil.
    func save(_ token: AuthToken?) throws(ClientError)
}

/// A token kept in memory, for one process.
public final class InMemoryTokenStore: TokenStore {
    private let token: Mutex<AuthToken?>

    public init(_ token: AuthToken? = nil) {
        self.token = Mutex(token)
    }

    public func load() -> AuthToken? { self.token.withLock { $0 } }
    public func save(_ token: AuthToken?) { self.token.withLock { $0 = token } }
}

/// A token kept in a JSON file readable by its owner only (mode 0600) — Linux's stand-in for
/// a keychain. Each save writes a new file beside it and renames it into place, so the file
/// is always a whole token or none: a crash mid-save leaves the previous one.
///
/// A file that cannot be read or does not hold a token fails ``load()`` with
/// `.authorizationFailed` naming the file; ``TokenAuthorization`` then goes on as if there
/// were no token (it refreshes, or asks its `refresh` for one), and the next save replaces
/// the broken file.
public final class FileTokenStore: TokenStore {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public func load() throws(ClientError) -> AuthToken? {
        guard FileManager.default.fileExists(atPath: self.path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: self.path))
        } catch {
            throw ClientError(.authorizationFailed, detail: "the token file \(self.path) cannot be read: \(error)")
        }
        do {
            return try JSONDecoder().decode(AuthToken.self, from: data)
        } catch {
            throw ClientError(.authorizationFailed, detail: "the token file \(self.path) does not hold a token")
        }
    }

    public func save(_ token: AuthToken?) throws(ClientError) {
        guard let token else {
            if unlink(self.path) != 0 && errno != ENOENT {
                throw ClientError(.authorizationFailed, detail: "the token file \(self.path) cannot be removed: errno \(errno)")
            }
            return
        }
        let bytes: [UInt8]
        do {
            bytes = Array(try JSONEncoder().encode(token))
        } catch {
            throw ClientError.encoding(error, of: AuthToken.self)
        }
        let temporary = self.path + ".\(UInt32.random(in: 0 ... .max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ClientError(.authorizationFailed, detail: "cannot create \(temporary): errno \(errno)")
        }
        var written = 0
        var failure: Int32 = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            written += count
        }
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        if close(fd) != 0 && failure == 0 { failure = errno }
        if failure == 0 && rename(temporary, self.path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw ClientError(.authorizationFailed, detail: "cannot write the token file \(self.path): errno \(failure)")
        }
        // The rename itself survives a crash once the directory is on disk too.
        let directory = (self.path as NSString).deletingLastPathComponent
        let dirfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
    }
}
