import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// When a key — or the whole store — was last invalidated, as a file every process sharing
/// the directory sees: `invalidated` in the key's directory (or the store's), its
/// modification time the moment. A writer that began before an invalidation (its request
/// may have been answered before the change that invalidated the key) takes back what it
/// committed: it renames first and looks after, so no order of two processes lets a stale
/// entry stay.
///
/// The moment is written in the file (eight bytes, seconds since 1970), not read from its
/// time, which the file system may keep only to the second. Marks are kept an hour (as long as
/// a writer's request may be older than its commit), then removed by the sweep.
enum Tombstones {
    static let name = "invalidated"
    /// How long a mark is kept.
    static let lifetime: Double = 3600

    /// Marks `directory` (made if missing) invalidated now; false when it could not be.
    @discardableResult
    static func mark(_ directory: String) -> Bool {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { return false }
        let path = directory + "/" + self.name
        let temporary = path + "-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        var moment = Date().timeIntervalSince1970.bitPattern.littleEndian
        let written = withUnsafeBytes(of: &moment) { Files.writeAll(fd, $0) } == nil
        close(fd)
        // Renamed into place: a reader sees the old moment or the new, never half of one.
        guard written, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }

    /// When `directory` was last marked, nil when it was not (or the mark cannot be read).
    static func moment(_ directory: String) -> Double? {
        let fd = open(directory + "/" + self.name, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard case .success(let bytes) = Files.read(fd, count: 8, at: 0), bytes.count == 8 else { return nil }
        return Double(bitPattern: bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) })
    }

    /// Whether the key's directory or the store's was invalidated at or after `started`.
    static func invalidated(keyDirectory: String, storeDirectory: String, since started: Double) -> Bool {
        [keyDirectory, storeDirectory].contains { self.moment($0).map { $0 >= started } ?? false }
    }
}
