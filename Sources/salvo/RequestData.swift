import SalvoCore
#if canImport(Glibc)
import Glibc
#endif

/// `-d` and `--data-binary` as one body, in memory only where it must be.
///
/// - `--data-binary @file` on a regular file is read from disk as it is sent, with the
///   file's size as its length (as curl announces it); `@-`, a pipe or a device is streamed
///   as it is read, chunked, since its length is unknown (curl holds all of it first: a
///   deliberate difference, so that a body of any size goes in bounded memory).
/// - `-d @file` and `-d @-` drop CR and LF, so they are read whole first, as are regular
///   files that say they are empty (the files of /proc and /sys); what is held in memory
///   comes to at most ``defaultHeldLimit`` bytes, else the command fails (exit 2).
/// - Items are joined by `&`, the -d ones first. A file that cannot be read sends nothing,
///   with a warning, as curl does.
struct RequestData {
    /// What -d may hold in memory, all items together: 512 MiB.
    static let defaultHeldLimit = 512 << 20

    enum Part {
        case bytes([UInt8])
        /// A regular file, read from disk as it is sent.
        case file(path: String, size: Int)
        /// An open descriptor (standard input, a pipe, a device), read to its end as it is sent.
        case descriptor(Int32)
    }

    private(set) var parts: [Part] = []
    private(set) var warnings: [String] = []
    private var held = 0
    private let limit: Int

    init(data: [[UInt8]], binary: [[UInt8]], limit: Int) throws(Get.UsageError) {
        self.limit = limit
        for item in data {
            if !self.parts.isEmpty { try self.append([UInt8(ascii: "&")]) }
            if item.first == UInt8(ascii: "@") {
                var bytes = try self.readHeld(item, option: "-d")
                bytes.removeAll { $0 == 0x0D || $0 == 0x0A }
                try self.append(bytes)
            } else {
                try self.append(item)
            }
        }
        for item in binary {
            if !self.parts.isEmpty { try self.append([UInt8(ascii: "&")]) }
            guard item.first == UInt8(ascii: "@") else {
                try self.append(item)
                continue
            }
            let path = String(decoding: item.dropFirst(), as: UTF8.self)
            if path == "-" {
                self.parts.append(.descriptor(0))
                continue
            }
            var info = stat()
            if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
                if info.st_size > 0, access(path, R_OK) == 0 {
                    self.parts.append(.file(path: path, size: Int(info.st_size)))
                } else {
                    // Empty, or a /proc file that only says so: what it holds, with its length.
                    try self.append(try self.readHeld(item, option: "--data-binary"))
                }
                continue
            }
            let fd = (info.st_mode & S_IFMT) == S_IFDIR ? -1 : open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                self.warnings.append("Couldn't read data from file \"\(path)\", this makes an empty POST.")
                continue
            }
            self.parts.append(.descriptor(fd))
        }
    }

    /// Bytes held in memory, counted against the limit; adjacent ones make one part.
    private mutating func append(_ bytes: [UInt8]) throws(Get.UsageError) {
        self.held += bytes.count
        guard self.held <= self.limit else { throw self.tooLarge("-d") }
        if case .bytes(let previous)? = self.parts.last {
            self.parts[self.parts.count - 1] = .bytes(previous + bytes)
        } else {
            self.parts.append(.bytes(bytes))
        }
    }

    private func tooLarge(_ what: String) -> Get.UsageError {
        Get.UsageError(code: 2, message: "\(what): more than \(self.limit) bytes of data to hold in memory"
            + " (-d reads files whole, to drop their newlines); --data-binary @file streams a file of any size")
    }

    /// `@path` (`@-`: standard input) read whole, within what the limit leaves; a file that
    /// cannot be read gives nothing and a warning.
    private mutating func readHeld(_ item: [UInt8], option: String) throws(Get.UsageError) -> [UInt8] {
        let path = String(decoding: item.dropFirst(), as: UTF8.self)
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            self.warnings.append("Couldn't read data from file \"\(path)\", this makes an empty POST.")
            return []
        }
        defer { if fd != 0 { close(fd) } }
        switch Output.readAll(fd, limit: self.limit - self.held) {
        case .whole(let bytes): return bytes
        case .tooLarge: throw self.tooLarge("\(option) @\(path)")
        case .failed:
            self.warnings.append("Couldn't read data from file \"\(path)\", this makes an empty POST.")
            return []
        }
    }

    /// The body: bytes in memory when that is all there is; else streamed, with a length when
    /// every part has one (and then replayable), chunked when one is read to its end.
    var body: HTTPBody {
        let parts = self.parts
        var length: Int? = 0
        for part in parts {
            switch part {
            case .bytes(let bytes): length? += bytes.count
            case .file(_, let size): length? += size
            case .descriptor: length = nil
            }
        }
        if parts.isEmpty { return .bytes([]) }
        if parts.count == 1, case .bytes(let bytes) = parts[0] { return .bytes(bytes) }
        return .producer(length: length, replayable: length != nil) { writer in
            for part in parts {
                switch part {
                case .bytes(let bytes):
                    if !bytes.isEmpty { try await writer.write(bytes) }
                case .file(let path, let size):
                    try await FileBodyReader.send(path: path, size: size) { (chunk) throws(TransportError) in try await writer.write(chunk) }
                case .descriptor(let fd):
                    while let chunk = try await StandardInput.read(fd) {
                        try await writer.write(chunk)
                    }
                }
            }
        }
    }
}
