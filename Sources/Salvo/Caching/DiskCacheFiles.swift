import Synchronization
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Why a ``DiskCacheStore``'s writer gave up on an entry.
public struct DiskCacheError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, in words.
    public let description: String
    /// The system's error number, when a system call failed (`ENOSPC` for a full disk, say).
    public let errno: Int32?

    init(_ description: String, errno: Int32? = nil) {
        self.description = errno.map { "\(description): \(String(cString: strerror($0)))" } ?? description
        self.errno = errno
    }
}

/// A failed system call's errno.
struct SystemError: Error {
    var code: Int32
}

/// The identity of a file: a path that still names the same inode still names the file
/// that was opened.
struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64

    init(_ info: stat) {
        self.device = UInt64(info.st_dev)
        self.inode = UInt64(info.st_ino)
    }

    /// The identity of what `path` names now, nil when it names nothing.
    static func of(path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileIdentity(info)
    }
}

/// Thin, non-throwing wrappers over the system calls the store uses. Every one is a single
/// bounded system call (or a loop of them over a buffer the caller holds): on a local disk
/// they return in microseconds, except `fsync`, which the store calls only off the
/// cooperative pool (see ``DiskCacheStore``).
enum Files {
    /// Writes all of `bytes` at the descriptor's offset; the errno on failure.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        self.writeAll(bytes) { pointer, count, _ in Glibc.write(fd, pointer, count) }
    }

    /// Writes all of `bytes` at `position`; the errno on failure.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], at position: Int) -> Int32? {
        bytes.withUnsafeBytes { buffer in
            self.writeAll(buffer) { pointer, count, offset in pwrite(fd, pointer, count, off_t(position + offset)) }
        }
    }

    /// `write` called until all of `bytes` is written (it is given where the rest starts,
    /// how much is left, and how much went already); the errno on failure.
    private static func writeAll(_ bytes: UnsafeRawBufferPointer, _ write: (UnsafeRawPointer, Int, Int) -> Int) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let n = write(bytes.baseAddress! + offset, bytes.count - offset, offset)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if n == 0 { return EIO }
            offset += n
        }
        return nil
    }

    /// Reads up to `count` bytes at `position`: fewer only at the end of the file.
    static func read(_ fd: Int32, count: Int, at position: Int) -> Result<[UInt8], SystemError> {
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = 0
            while initialized < count {
                let n = pread(fd, buffer.baseAddress! + initialized, count - initialized, off_t(position + initialized))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                if n == 0 { return }
                initialized += n
            }
        }
        return failure == 0 ? .success(bytes) : .failure(SystemError(code: failure))
    }

    /// Makes a rename or an unlink in `directory` durable.
    static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// Removes `path` if it still names the file `identity` was taken from: a damaged file
    /// is removed, never the good one another writer may have renamed over it since.
    static func remove(_ path: String, ifStill identity: FileIdentity) {
        if FileIdentity.of(path: path) == identity { unlink(path) }
    }

    /// The names in `directory`; empty when it cannot be listed (gone, say).
    static func list(_ directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Seconds since 1970, as a file's modification time.
    static func modificationTime(_ info: stat) -> Double {
        Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
    }

    /// Sets the file's modification time to now: the store's "last used" (least recently
    /// used entries are evicted first). Failure is harmless: the entry only looks older.
    static func touch(_ fd: Int32) {
        _ = futimens(fd, nil)
    }
}

/// An entry file opened and checked up to its body (see ``EntryFormat``).
struct OpenedEntry {
    let fd: Int32
    let header: EntryHeader
    let response: StoredResponse
    let identity: FileIdentity
    /// The file's modification time (its last use), in seconds since 1970.
    var modified: Double = 0

    /// Opens the entry file at `path` and checks everything but the body's checksum: the
    /// caller owns the descriptor on success. A damaged file is removed here.
    static func open(_ path: String, key: String, id: String?, memo: StampedMemo<FileIdentity, EntryHeader, StoredResponse>? = nil) -> Result<OpenedEntry, EntryProblem> {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(errno == ENOENT ? .missing : .unreadable(errno)) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let failure = errno
            close(fd)
            return .failure(.unreadable(failure))
        }
        let identity = FileIdentity(info)
        let result = check(fd, length: Int(info.st_size), key: key, id: id, identity: identity, memo: memo)
        switch result {
        case .success(let (header, response)):
            return .success(OpenedEntry(fd: fd, header: header, response: response, identity: identity,
                                        modified: Files.modificationTime(info)))
        case .failure(let problem):
            close(fd)
            if case .damaged = problem { Files.remove(path, ifStill: identity) }
            return .failure(problem)
        }
    }

    private static func check(_ fd: Int32, length: Int, key: String, id: String?, identity: FileIdentity,
                              memo: StampedMemo<FileIdentity, EntryHeader, StoredResponse>?) -> Result<(EntryHeader, StoredResponse), EntryProblem> {
        guard length >= EntryFormat.headerSize else { return .failure(.damaged("shorter than its header")) }
        let headerBytes: [UInt8]
        switch Files.read(fd, count: EntryFormat.headerSize, at: 0) {
        case .success(let bytes): headerBytes = bytes
        case .failure(let error): return .failure(.unreadable(error.code))
        }
        let header: EntryHeader
        switch EntryHeader.decode(headerBytes) {
        case .success(let decoded): header = decoded
        case .failure(let problem): return .failure(problem)
        }
        guard header.fileLength == length else {
            return .failure(.damaged("\(length) bytes long, its header says \(header.fileLength ?? -1)"))
        }
        if let known = memo?.value(identity, header) {
            // This very file was read and checked before (same inode, same header: the same
            // metadata checksum, lengths and time of storing).
            guard known.key == key, id == nil || known.id == id else { return .failure(.foreign) }
            return .success((header, known))
        }
        let metadata: [UInt8]
        switch Files.read(fd, count: Int(header.metadataLength), at: EntryFormat.headerSize + Int(header.bodyLength)) {
        case .success(let bytes): metadata = bytes
        case .failure(let error): return .failure(.unreadable(error.code))
        }
        guard metadata.count == Int(header.metadataLength), CRC32.of(metadata) == header.metadataCRC else {
            return .failure(.damaged("metadata checksum mismatch"))
        }
        guard let response = try? JSONDecoder().decode(StoredResponse.self, from: Data(metadata)) else {
            return .failure(.damaged("metadata does not decode"))
        }
        guard response.bodySize >= 0, UInt64(response.bodySize) == header.bodyLength else {
            return .failure(.damaged("metadata and header disagree on the body's size"))
        }
        memo?.keep(response, identity, header)
        guard response.key == key, id == nil || response.id == id else { return .failure(.foreign) }
        return .success((header, response))
    }
}

/// Runs `work` — an fsync, a body copied, a directory swept — on one of Dispatch's threads, off
/// Swift's cooperative pool, whose few threads (one per core) must never wait on a disk.
func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    // Dispatch's threads, not one of our own per call: under load many commits wait their
    // turn on a bounded set of threads instead of each starting one.
    defer { threadSanitizerSawResume() }
    return await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        DispatchQueue.global(qos: .utility).async { continuation.resume(returning: work()) }
    }
}

/// A directory's identity and times: equal stamps mean no file was added, renamed or removed
/// in it between them (but for changes within one clock tick, which the store's listing memo
/// leaves out).
struct DirectoryStamp: Hashable, Sendable {
    var identity: FileIdentity
    var modifiedNanoseconds: Int64
    var changedNanoseconds: Int64

    init(_ info: stat) {
        self.identity = FileIdentity(info)
        self.modifiedNanoseconds = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        self.changedNanoseconds = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
    }

    /// The last change, in seconds since 1970.
    var modified: Double { Double(max(self.modifiedNanoseconds, self.changedNanoseconds)) / 1e9 }
}

