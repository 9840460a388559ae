import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Plain file-descriptor output: no Foundation, no buffering surprises.
enum Output {
    static func stderr(_ text: String) {
        var text = text
        text.withUTF8 { _ = writeAll(2, UnsafeRawBufferPointer($0)) }
    }

    @discardableResult
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    /// Reads a whole file (nil path: stdin).
    static func readFile(_ path: String?) -> [UInt8]? {
        let fd = path.map { open($0, O_RDONLY | O_CLOEXEC) } ?? 0
        guard fd >= 0 else { return nil }
        defer { if path != nil { close(fd) } }
        guard case .whole(let bytes) = readAll(fd) else { return nil }
        return bytes
    }

    enum ReadAll {
        case whole([UInt8])
        case failed
        case tooLarge
    }

    /// Everything `fd` gives until its end, or `.tooLarge` as soon as it is past `limit`.
    static func readAll(_ fd: Int32, limit: Int = .max) -> ReadAll {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failed
            }
            if n == 0 { return .whole(result) }
            guard n <= limit - result.count else { return .tooLarge }
            result += buffer[0..<n]
        }
    }

    /// Whether `path` is a regular file of no bytes (sent with a length of 0, not chunked).
    static func isEmptyRegularFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_size == 0
    }

    /// Whether `path` is a regular file with a size: one that can be sent with its length
    /// known up front. Pipes, devices and the files of /proc and /sys (size 0) cannot.
    static func isRegularFileWithSize(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_size > 0
    }

    /// Makes each missing directory on the way to `path`'s file, with curl's mode (0750);
    /// the one that could not be made, or nil.
    static func makeParentDirectories(of path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        var directory = path.hasPrefix("/") ? "" : "."
        for part in parts where !part.isEmpty {
            directory = directory == "." ? String(part) : directory + "/" + part
            if mkdir(directory, 0o750) != 0 && errno != EEXIST { return directory }
        }
        return nil
    }

    /// Where a body goes: stdout or a file. A file is created (or emptied) by the first write,
    /// so that a request that fails before its body leaves an existing file untouched.
    struct Sink {
        private let path: String?
        /// Refuse to replace a file that is there (-J's name comes from the server).
        private let exclusive: Bool
        /// Make the directories the path names that are missing (--create-dirs).
        private let createsDirectories: Bool
        private var fd: Int32 = -1
        /// Why the last write failed, for the message.
        private(set) var failure = "failure writing output"

        init(path: String?, exclusive: Bool = false, createsDirectories: Bool = false) {
            self.path = path == "-" ? nil : path
            self.exclusive = exclusive
            self.createsDirectories = createsDirectories
        }

        /// Whether the bytes go to a file (not to stdout).
        var isFile: Bool { self.path != nil }

        /// The file's path, nil for stdout.
        var name: String? { self.path }

        /// Writes `bytes` (none: only makes sure the file exists), opening the file first.
        mutating func write(_ bytes: [UInt8]) -> Bool {
            if self.fd < 0 {
                if let path = self.path {
                    if self.createsDirectories, let missing = Output.makeParentDirectories(of: path) {
                        self.failure = "cannot create the directory \(missing): \(String(cString: strerror(errno)))"
                        return false
                    }
                    let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (self.exclusive ? O_EXCL : O_TRUNC)
                    self.fd = open(path, flags, 0o644)
                    guard self.fd >= 0 else {
                        self.failure = self.exclusive && errno == EEXIST
                            ? "Refusing to overwrite \(path): File exists"
                            : "cannot open \(path) for writing"
                        return false
                    }
                } else {
                    self.fd = 1
                }
            }
            return bytes.withUnsafeBytes { Output.writeAll(self.fd, $0) }
        }

        func close() {
            if self.path != nil && self.fd >= 0 { Glibc.close(self.fd) }
        }
    }

    /// A sink several transfers write to in turn (-D's file), each write whole.
    final class SharedSink: Sendable {
        private let sink: Mutex<Sink>

        init(path: String) {
            self.sink = Mutex(Sink(path: path))
        }

        /// Writes `bytes`; the failure's message when that failed.
        func write(_ bytes: [UInt8]) -> String? {
            self.sink.withLock { sink in sink.write(bytes) ? nil : sink.failure }
        }

        func close() {
            self.sink.withLock { $0.close() }
        }
    }
}
