import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A body on its way into a ``DiskCacheStore``: a temporary file in the key's directory,
/// renamed over the entry's name when committed.
///
/// `write` appends to the temporary file on the caller's thread: one `write(2)` of the
/// chunk it was given, into the page cache, which is short. `commit` syncs and renames on a
/// thread of its own (an fsync may wait on the disk for long).
///
/// A process killed at any point leaves at most a temporary file, which no reader opens
/// (readers open only names ending in `.entry`) and which a later sweep removes.
final class DiskEntryWriter: CacheEntryWriter {
    private struct State {
        /// -1 once committed or aborted.
        var fd: Int32
        var written = 0
        var crc: UInt32 = 0
    }

    private let store: DiskCacheStore
    private let entry: StoredResponse
    private let keyDirectory: String
    private let temporary: String
    private let destination: String
    private let limit: Int
    private let state: Mutex<State>
    /// Since when an invalidation makes this entry stale: its request's time when that is a
    /// plausible time of this clock (an injected test clock's is not), else the writer's
    /// start.
    private let startedAt: Double

    private init(store: DiskCacheStore, entry: StoredResponse, keyDirectory: String, temporary: String, fd: Int32, limit: Int) {
        let now = Date().timeIntervalSince1970
        self.startedAt = (now - 3600...now).contains(entry.requestTime) ? entry.requestTime : now
        self.store = store
        self.entry = entry
        self.keyDirectory = keyDirectory
        self.temporary = temporary
        self.destination = keyDirectory + "/" + EntryNames.entryFile(id: entry.id)
        self.limit = limit
        self.state = Mutex(State(fd: fd))
    }

    /// Creates the temporary file (and the key's directory), nil when that fails.
    static func make(store: DiskCacheStore, entry: StoredResponse, limit: Int) -> DiskEntryWriter? {
        let keyDirectory = store.directory + "/" + EntryNames.keyDirectory(entry.key)
        // Another process's sweep may remove the key's directory, when empty, between our
        // mkdir and our open: a few tries. Once our temporary file is in it, it is not empty.
        for _ in 0..<4 {
            if mkdir(keyDirectory, 0o700) != 0 && errno != EEXIST { return nil }
            let temporary = keyDirectory + "/" + temporaryName()
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd < 0 {
                if errno == ENOENT { continue }
                return nil
            }
            // The header's place: zeros, until the commit writes the real one.
            let placeholder = [UInt8](repeating: 0, count: EntryFormat.headerSize)
            if placeholder.withUnsafeBytes({ Files.writeAll(fd, $0) }) != nil {
                close(fd)
                unlink(temporary)
                return nil
            }
            return DiskEntryWriter(store: store, entry: entry, keyDirectory: keyDirectory, temporary: temporary, fd: fd, limit: limit)
        }
        return nil
    }

    private static func temporaryName() -> String {
        "\(getpid())-\(UInt64.random(in: 0...UInt64.max))" + EntryFormat.temporarySuffix
    }

    deinit {
        // Dropped without commit or abort: nothing becomes visible.
        self.state.withLock { state in
            if state.fd >= 0 {
                close(state.fd)
                unlink(self.temporary)
                state.fd = -1
            }
        }
    }

    func write(_ bytes: [UInt8]) async throws {
        try self.state.withLock { (state: inout State) throws(DiskCacheError) in
            guard state.fd >= 0 else { throw DiskCacheError("the entry was already committed or aborted") }
            guard bytes.count <= self.limit - state.written else {
                self.drop(&state)
                throw DiskCacheError("the body is larger than the store's per-entry limit (\(self.limit) bytes)")
            }
            let failure = bytes.withUnsafeBytes { buffer in
                state.crc = CRC32.update(state.crc, buffer)
                return Files.writeAll(state.fd, buffer)
            }
            if let failure {
                self.drop(&state)
                throw DiskCacheError("cannot write the cache entry", errno: failure)
            }
            state.written += bytes.count
        }
    }

    func commit(replacing: [String]) async throws {
        let taken: State = try self.state.withLock { (state: inout State) throws(DiskCacheError) in
            guard state.fd >= 0 else { throw DiskCacheError("the entry was already committed or aborted") }
            defer { state.fd = -1 }
            return state
        }
        var written = self.entry
        written.bodySize = taken.written
        let response = written
        let header = (temporary: self.temporary, destination: self.destination, keyDirectory: self.keyDirectory,
                      storeDirectory: self.store.directory, startedAt: self.startedAt)
        let outcome: Result<Int, DiskCacheError> = await onOwnThread {
            defer { close(taken.fd) }
            return Self.finish(fd: taken.fd, response: response, bodyCRC: taken.crc, storedAt: Date().timeIntervalSince1970,
                               temporary: header.temporary, destination: header.destination, keyDirectory: header.keyDirectory,
                               storeDirectory: header.storeDirectory, startedAt: header.startedAt)
        }
        let size = try outcome.get()
        for id in replacing where id != self.entry.id {
            unlink(self.keyDirectory + "/" + EntryNames.entryFile(id: id))
        }
        await self.store.stored(bytes: size)
    }

    func abort() async {
        self.state.withLock { self.drop(&$0) }
    }

    private func drop(_ state: inout State) {
        guard state.fd >= 0 else { return }
        close(state.fd)
        unlink(self.temporary)
        rmdir(self.keyDirectory)   // only when nothing else is in it
        state.fd = -1
    }

    /// Appends the metadata, writes the header, syncs, renames into place and syncs the
    /// directory; the file's size. Blocking: runs off the cooperative pool. The temporary
    /// file is removed on failure.
    /// With `startedAt`, an invalidation of the key (or the store) since then, seen after the
    /// rename, takes the entry back (``Tombstones``).
    static func finish(fd: Int32, response: StoredResponse, bodyCRC: UInt32, storedAt: Double,
                       temporary: String, destination: String, keyDirectory: String,
                       storeDirectory: String, startedAt: Double) -> Result<Int, DiskCacheError> {
        let result = Result { () throws(DiskCacheError) -> Int in
            guard let metadata = try? Array(JSONEncoder().encode(response)), metadata.count <= EntryFormat.maxMetadataSize else {
                throw DiskCacheError("the response head cannot be stored (it does not encode, or is over 1 MiB)")
            }
            let header = EntryHeader(bodyLength: UInt64(response.bodySize), metadataLength: UInt32(metadata.count),
                                     metadataCRC: CRC32.of(metadata), bodyCRC: bodyCRC, storedAt: storedAt)
            if let failure = metadata.withUnsafeBytes({ Files.writeAll(fd, $0) }) {
                throw DiskCacheError("cannot write the cache entry", errno: failure)
            }
            if let failure = Files.writeAll(fd, header.encoded(), at: 0) {
                throw DiskCacheError("cannot write the cache entry", errno: failure)
            }
            guard fsync(fd) == 0 else { throw DiskCacheError("cannot sync the cache entry", errno: errno) }
            guard rename(temporary, destination) == 0 else {
                throw DiskCacheError("cannot move the cache entry into place", errno: errno)
            }
            if Tombstones.invalidated(keyDirectory: keyDirectory, storeDirectory: storeDirectory, since: startedAt) {
                var info = stat()
                if fstat(fd, &info) == 0 { Files.remove(destination, ifStill: FileIdentity(info)) }
                throw DiskCacheError("the key was invalidated while its entry was written")
            }
            Files.syncDirectory(keyDirectory)
            return header.fileLength ?? 0
        }
        if case .failure = result { unlink(temporary) }
        return result
    }
}
