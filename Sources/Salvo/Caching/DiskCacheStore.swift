import Foundation
import SalvoTransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An ``HTTPCacheStore`` that keeps its entries in files in a directory: they survive
/// restarts, and several processes may share the directory.
///
/// ```swift
/// let store = try DiskCacheStore(directory: cachesDirectory + "/salvo-http",
///                                capacity: 200 << 20, maxEntrySize: 20 << 20)
/// // A cache over it stores and reads bodies as streams:
/// if let writer = await store.makeWriter(for: response) {
///     for try await chunk in body { try await writer.write(chunk) }
///     try await writer.commit(replacing: [])
/// }
/// if let body = await store.body(of: response) {
///     for try await chunk in body { consume(chunk) }
/// }
/// ```
///
/// **Files.** Each entry is one file, `k<hash of key>/<hash of id>.entry`, holding a
/// versioned header with checksums, the body, and the ``StoredResponse`` with its key (see
/// the format in `DiskCacheFormat.swift`). A writer writes a temporary file beside it,
/// syncs it and renames it into place, so an entry name always names a whole entry: a
/// process killed mid-write leaves only a temporary file, which no reader opens and which a
/// later sweep removes. Every open checks the header, the length, the metadata's checksum
/// and that the key and id stored are the ones asked for (a hash collision is a miss);
/// the body's checksum is checked as it streams, before its last chunk. A damaged file is
/// removed as it is found, and never served.
///
/// **Several processes, many tasks.** There is no index: the files are the truth, looked up
/// on every call, so nothing another process does can make this store lie. Writers never
/// share a file; the only lock (`flock` on `lock`) serializes sweeps, is never waited for,
/// and is never held across an await.
///
/// **Capacity.** The store counts the bytes it writes; when it believes itself over
/// `capacity` (and every 32 commits, to learn of other processes' writes) it sweeps the
/// directory: the least recently used entries (reading an entry touches its file) are
/// removed until the total is at most nine tenths of `capacity`. Between sweeps, other
/// processes' writes may take the directory past `capacity` for a while.
///
/// **Blocking.** `entries(for:)`, `body(of:)`, the body's chunks, `write` and the removals
/// run their system calls on the caller's thread: a few short calls on a local disk
/// (a directory listing, a header and metadata read per entry, one chunk of at most
/// 64 KiB). What can wait on the disk for long — the fsyncs of `commit`, the body copy of
/// `update`, a sweep — runs on a thread of its own, off Swift's cooperative pool. Do not
/// put the directory on a network file system.
public final class DiskCacheStore: HTTPCacheStore {
    /// The directory the entries live in.
    public let directory: String
    /// The total size of the entry files the store keeps itself within, in bytes.
    public let capacity: Int
    /// The largest body an entry may have, in bytes.
    public let maxEntrySize: Int

    private struct Accounting {
        /// The entry files' total size as last swept, plus what this store wrote since.
        var bytes = 0
        var commitsSinceSweep = 0
    }

    private let accounting = Mutex(Accounting())
    /// What this store read of its files, so that a hit decodes no metadata.
    let memo = StampedMemo<FileIdentity, EntryHeader, StoredResponse>()
    /// The last listing of each key's directory, while the directory is unchanged.
    let listings = StampedMemo<String, DirectoryStamp, [StoredResponse]>()
    /// How old a temporary file must be for a sweep to take it for a dead writer's.
    let temporaryAge: Double

    /// Opens (creating it if needed, mode 0700) the store in `directory`. Temporary files
    /// left by a writer that died are removed, and the directory brought within `capacity`,
    /// by a sweep started in the background.
    ///
    /// - Throws: ``DiskCacheError`` when the directory cannot be created or is not one.
    public convenience init(directory: String, capacity: Int, maxEntrySize: Int = 16 << 20) throws {
        try self.init(directory: directory, capacity: capacity, maxEntrySize: maxEntrySize, temporaryAge: 60, sweepAtOpen: true)
    }

    init(directory: String, capacity: Int, maxEntrySize: Int, temporaryAge: Double, sweepAtOpen: Bool) throws {
        var path = directory
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        self.directory = path
        self.capacity = max(0, capacity)
        self.maxEntrySize = max(0, min(maxEntrySize, capacity))
        self.temporaryAge = temporaryAge
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw DiskCacheError("cannot create the cache directory \(path) (\(error.localizedDescription))")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue,
              access(path, R_OK | W_OK | X_OK) == 0 else {
            throw DiskCacheError("the cache directory \(path) is not a directory this process can write to")
        }
        if sweepAtOpen {
            let (directory, capacity, age) = (self.directory, self.capacity, temporaryAge)
            Thread { [weak self] in
                let result = Sweeper.sweep(directory: directory, capacity: capacity, target: capacity / 10 * 9, temporaryAge: age)
                if let result, let self { self.swept(result) }
            }.start()
        }
    }

    // MARK: - Reading

    /// The entries under `key`, most recently stored (committed) first: each file in the
    /// key's directory opened and checked, damaged ones removed on the way.
    ///
    /// A listing is kept and given again while the key's directory is unchanged: every
    /// change to an entry (stored, replaced, updated, removed, evicted — by this process or
    /// another) adds, renames or removes a file there, which changes the directory's times.
    /// A listing taken within a second of the directory's last change is not kept, since a
    /// change in the same clock tick would leave its times as they were.
    public func entries(for key: String) async -> [StoredResponse] {
        let keyDirectory = self.directory + "/" + EntryNames.keyDirectory(key)
        // Read before the stat: a listing is kept only when the directory's last change is
        // older than the coarsest file-system clock (2 s) by then.
        let before = Date().timeIntervalSince1970
        var info = stat()
        guard stat(keyDirectory, &info) == 0 else { return [] }
        let stamp = DirectoryStamp(info)
        // By key, not by directory: two keys whose names hash alike share a directory, not a
        // listing.
        if let listed = self.listings.value(key, stamp) { return listed }
        var found: [(response: StoredResponse, storedAt: Double)] = []
        for name in Files.list(keyDirectory) where name.hasSuffix(EntryFormat.entrySuffix) {
            guard case .success(let entry) = OpenedEntry.open(keyDirectory + "/" + name, key: key, id: nil, memo: self.memo) else { continue }
            close(entry.fd)
            // Its name must be its id's: a file renamed by hand is not an entry.
            guard name == EntryNames.entryFile(id: entry.response.id) else { continue }
            found.append((entry.response, entry.header.storedAt))
        }
        let entries = found.sorted { ($0.storedAt, $0.response.id) > ($1.storedAt, $1.response.id) }.map(\.response)
        if before - stamp.modified >= 2 { self.listings.keep(entries, key, stamp, weight: entries.count) }
        return entries
    }

    /// The body of `entry`, streamed from its file in chunks of at most 64 KiB and checked
    /// against its checksum before its last chunk (a mismatch fails the body with
    /// `.readFailed` and removes the entry). Marks the entry as used now, for eviction. The
    /// body holds the file open: an eviction or removal meanwhile does not cut it short.
    public func body(of entry: StoredResponse) async -> ResponseBody? {
        let path = self.path(key: entry.key, id: entry.id)
        guard case .success(let opened) = OpenedEntry.open(path, key: entry.key, id: entry.id, memo: self.memo) else { return nil }
        // Its use, for eviction, to the second: a file used within the last second is not
        // marked again.
        if Date().timeIntervalSince1970 - opened.modified >= 1 { Files.touch(opened.fd) }
        let length = Int(opened.header.bodyLength)
        guard length <= DiskBodySource.chunkSize else { return ResponseBody(source: DiskBodySource(opened, path: path)) }
        // A small body in one read, checked before it is handed out.
        defer { close(opened.fd) }
        guard case .success(let bytes) = Files.read(opened.fd, count: length, at: EntryFormat.headerSize), bytes.count == length else {
            return nil
        }
        guard CRC32.of(bytes) == opened.header.bodyCRC else {
            Files.remove(path, ifStill: opened.identity)
            return nil
        }
        return .bytes(bytes)
    }

    // MARK: - Writing

    /// A writer for `entry`'s body; nil when `entry.bodySize` is over ``maxEntrySize`` or
    /// the directory cannot be written to. `entry.bodySize` only needs to be a lower bound
    /// (0 when unknown): the writer throws once the bytes written pass the limit, and the
    /// entry committed records the size actually written.
    public func makeWriter(for entry: StoredResponse) async -> (any CacheEntryWriter)? {
        guard entry.bodySize <= self.maxEntrySize else { return nil }
        return DiskEntryWriter.make(store: self, entry: entry, limit: self.maxEntrySize)
    }

    /// Replaces the stored ``StoredResponse`` of `entry` (head, times, vary values), keeping
    /// its body: a new file with the same body (copied, its checksum checked) renamed over
    /// the old one, off the cooperative pool. Readers see the old entry or the new, whole.
    public func update(_ entry: StoredResponse) async {
        let path = self.path(key: entry.key, id: entry.id)
        let keyDirectory = self.directory + "/" + EntryNames.keyDirectory(entry.key)
        let growth = await onOwnThread { EntryRewriter.rewrite(path: path, keyDirectory: keyDirectory, storeDirectory: self.directory, with: entry) }
        if let growth { await self.stored(bytes: growth) }
    }

    // MARK: - Removing

    /// Removes the entry `id` of `key`, if it is there.
    public func remove(id: String, key: String) async {
        let keyDirectory = self.directory + "/" + EntryNames.keyDirectory(key)
        let path = keyDirectory + "/" + EntryNames.entryFile(id: id)
        // Only the entry of this key: another key hashing to the same directory keeps its own.
        switch OpenedEntry.open(path, key: key, id: id) {
        case .success(let opened):
            close(opened.fd)
            Files.remove(path, ifStill: opened.identity)
        case .failure:
            break   // gone, damaged (removed by the open), or another key's
        }
        rmdir(keyDirectory)
    }

    /// Removes every entry of `key`, in this process and every other sharing the directory:
    /// a writer still writing for `key`, or whose request went out before now, takes its
    /// entry back when it commits (`Tombstones`).
    public func removeAll(key: String) async {
        let keyDirectory = self.directory + "/" + EntryNames.keyDirectory(key)
        Tombstones.mark(keyDirectory)
        // A mark for a key never stored leaves a directory behind: sweeps come as for commits.
        await self.stored(bytes: 0)
        for name in Files.list(keyDirectory) where name.hasSuffix(EntryFormat.entrySuffix) {
            let path = keyDirectory + "/" + name
            if case .success(let opened) = OpenedEntry.open(path, key: key, id: nil) {
                close(opened.fd)
                Files.remove(path, ifStill: opened.identity)
            }
        }
        rmdir(keyDirectory)
    }

    /// Removes every entry; writers still writing take theirs back when they commit.
    public func removeAll() async {
        Tombstones.mark(self.directory)
        for keyName in Files.list(self.directory) where keyName.hasPrefix("k") {
            let keyDirectory = self.directory + "/" + keyName
            for name in Files.list(keyDirectory) where name.hasSuffix(EntryFormat.entrySuffix) {
                unlink(keyDirectory + "/" + name)
            }
            rmdir(keyDirectory)
        }
        self.accounting.withLock { $0.bytes = 0 }
    }

    // MARK: - Capacity

    /// Brings the directory within capacity now, and removes dead writers' temporary files;
    /// nil when a sweep was under way elsewhere.
    @discardableResult
    func sweep() async -> SweepResult? {
        let (directory, capacity, age) = (self.directory, self.capacity, self.temporaryAge)
        let result = await onOwnThread {
            Sweeper.sweep(directory: directory, capacity: capacity, target: capacity / 10 * 9, temporaryAge: age)
        }
        if let result { self.swept(result) }
        return result
    }

    /// A writer committed `bytes`: sweeps when the store may be over capacity.
    func stored(bytes: Int) async {
        let due = self.accounting.withLock { accounting in
            accounting.bytes += bytes
            accounting.commitsSinceSweep += 1
            return accounting.bytes > self.capacity || accounting.commitsSinceSweep >= 32
        }
        if due { await self.sweep() }
    }

    private func swept(_ result: SweepResult) {
        self.accounting.withLock { accounting in
            accounting.bytes = result.totalBytes
            accounting.commitsSinceSweep = 0
        }
    }

    func path(key: String, id: String) -> String {
        self.directory + "/" + EntryNames.keyDirectory(key) + "/" + EntryNames.entryFile(id: id)
    }
}
