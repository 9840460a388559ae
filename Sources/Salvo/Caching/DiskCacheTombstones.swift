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
/// File times are read as the kernel keeps them (to a clock tick): a tombstone within 10 ms
/// of a writer's start counts as after it — the safe side, a miss later at worst. Old
/// tombstones are removed by the sweep with the dead writers' files.
enum Tombstones {
    static let name = "invalidated"
    static let margin = 0.01

    /// Marks `directory` (made if missing) invalidated now.
    static func mark(_ directory: String) {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { return }
        let fd = open(directory + "/" + self.name, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        _ = futimens(fd, nil)
        close(fd)
    }

    /// Whether the key's directory or the store's was invalidated at or after `started`.
    static func invalidated(keyDirectory: String, storeDirectory: String, since started: Double) -> Bool {
        [keyDirectory, storeDirectory].contains { directory in
            var info = stat()
            return stat(directory + "/" + self.name, &info) == 0 && Files.modificationTime(info) >= started - self.margin
        }
    }
}
