import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a sweep of a ``DiskCacheStore``'s directory found and did.
struct SweepResult: Sendable, Equatable {
    /// The bytes of the entry files left.
    var totalBytes: Int
    var entriesLeft: Int
    var evicted: Int
    var temporariesRemoved: Int
}

/// Keeps a store's directory within its capacity: sums the entry files' sizes, removes the
/// least recently used (oldest modification time: a read touches its entry) until the total
/// is at most `target`, removes temporary files older than `temporaryAge` (left by a writer
/// that died) and empty key directories.
///
/// One sweep at a time across every process sharing the directory: each takes an exclusive
/// `flock` on `lock` in the directory, without waiting (a sweep under way elsewhere does the
/// work), and releases it before returning — never across an await. Files may vanish at any
/// point under a sweep (another process's remove or write); a file gone is simply not
/// counted. Blocking (a `stat` per file): runs off the cooperative pool.
enum Sweeper {
    static let lockName = "lock"

    /// nil when another sweep holds the lock, or the lock cannot be taken.
    static func sweep(directory: String, capacity: Int, target: Int, temporaryAge: Double) -> SweepResult? {
        let lock = open(directory + "/" + lockName, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { return nil }
        defer { close(lock) }   // releases the flock
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { return nil }

        let now = Date().timeIntervalSince1970
        var files: [(path: String, size: Int, used: Double)] = []
        var result = SweepResult(totalBytes: 0, entriesLeft: 0, evicted: 0, temporariesRemoved: 0)
        for keyName in Files.list(directory) where keyName.hasPrefix("k") {
            let keyDirectory = directory + "/" + keyName
            var left = 0
            for name in Files.list(keyDirectory) {
                let path = keyDirectory + "/" + name
                var info = stat()
                guard lstat(path, &info) == 0 else { continue }   // gone meanwhile
                left += 1
                guard (info.st_mode & S_IFMT) == S_IFREG else { continue }
                if name.hasSuffix(EntryFormat.temporarySuffix) || name.hasPrefix(Tombstones.name) {
                    // A dead writer's file, or an invalidation mark no writer still under way
                    // can predate (a mark's own temporary file too).
                    let age = name.hasPrefix(Tombstones.name) ? max(temporaryAge, Tombstones.lifetime) : temporaryAge
                    if now - Files.modificationTime(info) > age, unlink(path) == 0 {
                        result.temporariesRemoved += 1
                        left -= 1
                    }
                } else if name.hasSuffix(EntryFormat.entrySuffix) {
                    files.append((path, Int(info.st_size), Files.modificationTime(info)))
                }
            }
            if left == 0 { rmdir(keyDirectory) }   // fails harmlessly if a writer just came
        }
        result.totalBytes = files.reduce(0) { $0 + $1.size }
        result.entriesLeft = files.count
        if result.totalBytes > capacity {
            files.sort { $0.used < $1.used }
            for file in files where result.totalBytes > target {
                // Gone already (another process evicted or removed it): not ours to count.
                _ = unlink(file.path)
                result.totalBytes -= file.size
                result.entriesLeft -= 1
                result.evicted += 1
                rmdir((file.path as NSString).deletingLastPathComponent)   // only when empty
            }
        }
        return result
    }
}
