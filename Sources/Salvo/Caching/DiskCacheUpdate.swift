import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A revalidation's update of a ``DiskCacheStore`` entry: a new file with the new
/// ``StoredResponse`` and the old body (copied, its checksum checked on the way), renamed
/// over the old one. A reader sees the old entry or the new one, whole; one that opened the
/// old file before the rename reads it to its end.
enum EntryRewriter {
    /// How much larger the new file is than the old one, nil when the entry is gone, damaged (then removed) or the copy
    /// failed. Blocking (copies the body): runs off the cooperative pool.
    static func rewrite(path: String, keyDirectory: String, storeDirectory: String, with entry: StoredResponse) -> Int? {
        let startedAt = Date().timeIntervalSince1970
        guard case .success(let old) = OpenedEntry.open(path, key: entry.key, id: entry.id) else { return nil }
        defer { close(old.fd) }
        let temporary = keyDirectory + "/\(getpid())-\(UInt64.random(in: 0...UInt64.max))" + EntryFormat.temporarySuffix
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        defer { close(fd) }

        // The body, copied in bounded chunks and checked against the old checksum: a damaged
        // body is not given a fresh checksum.
        let bodyLength = Int(old.header.bodyLength)
        var copied = 0
        var crc: UInt32 = 0
        var ok = Files.writeAll(fd, [UInt8](repeating: 0, count: EntryFormat.headerSize), at: 0) == nil
        while ok && copied < bodyLength {
            let count = min(DiskBodySource.chunkSize, bodyLength - copied)
            guard case .success(let chunk) = Files.read(old.fd, count: count, at: EntryFormat.headerSize + copied),
                  chunk.count == count else {
                ok = false
                break
            }
            crc = chunk.withUnsafeBytes { CRC32.update(crc, $0) }
            ok = Files.writeAll(fd, chunk, at: EntryFormat.headerSize + copied) == nil
            copied += count
        }
        guard ok, crc == old.header.bodyCRC else {
            unlink(temporary)
            if ok { Files.remove(path, ifStill: old.identity) }   // read whole, checksum wrong: damaged
            return nil
        }
        guard lseek(fd, off_t(EntryFormat.headerSize + bodyLength), SEEK_SET) >= 0 else {
            unlink(temporary)
            return nil
        }
        var response = entry
        response.bodySize = bodyLength
        // The entry may have been removed, or replaced, while we copied: then the update is
        // dropped rather than bringing it back. (A removal in the instant between this check
        // and the rename is not seen: the entry then outlives it, whole.)
        guard FileIdentity.of(path: path) == old.identity else {
            unlink(temporary)
            return nil
        }
        switch DiskEntryWriter.finish(fd: fd, response: response, bodyCRC: crc, storedAt: old.header.storedAt,
                                      temporary: temporary, destination: path, keyDirectory: keyDirectory,
                                      storeDirectory: storeDirectory, startedAt: startedAt) {
        case .success(let size): return size - (old.header.fileLength ?? 0)
        case .failure: return nil
        }
    }
}
