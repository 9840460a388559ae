import SalvoCore
#if canImport(Glibc)
import Glibc
#endif

/// `-d`, `--data-raw`, `--data-binary` and `--data-urlencode` as one body, in memory only
/// where it must be.
///
/// - `--data-binary @file` on a regular file is read from disk as it is sent, with the
///   file's size as its length (as curl announces it); `@-`, a pipe or a device is streamed
///   as it is read, chunked, since its length is unknown (curl holds all of it first: a
///   deliberate difference, so that a body of any size goes in bounded memory).
/// - `-d @file` and `-d @-` drop CR and LF and `--data-urlencode` encodes, so they are read
///   whole first, as are regular files that say they are empty (the files of /proc and
///   /sys); what is held in memory comes to at most ``defaultHeldLimit`` bytes, else the
///   command fails (exit 2).
/// - Items are joined by `&` in the order given. A file that cannot be read sends nothing,
///   with a warning, as curl does. A file's name is used with its bytes as typed.
struct RequestData: Sendable {
    /// What may be held in memory, all items together: 512 MiB.
    static let defaultHeldLimit = 512 << 20

    struct Item {
        enum Kind {
            /// `-d`/`--data`/`--data-ascii`: `@file` read whole, CR and LF dropped.
            case data
            /// `--data-raw`: as typed, `@` included.
            case raw
            /// `--data-binary`: as typed, `@file` as it is.
            case binary
            /// `--data-urlencode`: `content`, `=content`, `name=content`, `@file`, `name@file`.
            case urlEncoded
        }

        var kind: Kind
        var bytes: [UInt8]
    }

    /// Which items a command line gives, in the order typed (long options and their short
    /// spellings alike).
    static func items(_ options: OptionOrder) -> [Item] {
        options.named(["d", "data-ascii", "data-raw", "data-binary", "data-urlencode"]).map { option in
            let kind: Item.Kind = switch option.name {
            case "data-raw": .raw
            case "data-binary": .binary
            case "data-urlencode": .urlEncoded
            default: .data
            }
            return Item(kind: kind, bytes: option.value ?? [])
        }
    }

    enum Part: Sendable {
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
    /// Whether streams are read whole too: the body is sent more than once (several URLs)
    /// or goes into the URL (-G).
    private let holdsStreams: Bool
    /// Whether regular files are read whole too (-G).
    private let holdsFiles: Bool

    init(_ items: [Item], limit: Int, holdsStreams: Bool = false, holdsFiles: Bool = false) throws(Get.UsageError) {
        self.limit = limit
        self.holdsStreams = holdsStreams || holdsFiles
        self.holdsFiles = holdsFiles
        for item in items {
            if !self.parts.isEmpty { try self.append([UInt8(ascii: "&")]) }
            let isFile = item.bytes.first == UInt8(ascii: "@")
            switch item.kind {
            case .raw:
                try self.append(item.bytes)
            case .data where isFile:
                var bytes = try self.readHeld(item.bytes.dropFirst(), option: "-d")
                bytes.removeAll { $0 == 0x0D || $0 == 0x0A }
                try self.append(bytes)
            case .data:
                try self.append(item.bytes)
            case .binary where isFile:
                try self.appendFile(item.bytes.dropFirst())
            case .binary:
                try self.append(item.bytes)
            case .urlEncoded:
                try self.appendURLEncoded(item.bytes)
            }
        }
    }

    /// `--data-binary @path`: a regular file from disk as it is sent, anything else streamed
    /// (or held, when streams must be).
    private mutating func appendFile(_ path: ArraySlice<UInt8>) throws(Get.UsageError) {
        let name = String(decoding: path, as: UTF8.self)
        if path.elementsEqual("-".utf8) {
            if self.holdsStreams {
                try self.append(try self.readHeld(path, option: "--data-binary"))
            } else {
                self.parts.append(.descriptor(0))
            }
            return
        }
        var info = stat()
        if Self.withCString(path, { stat($0, &info) }) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            if info.st_size > 0, !self.holdsFiles, Self.withCString(path, { access($0, R_OK) }) == 0,
               let text = String(validating: path, as: UTF8.self) {
                self.parts.append(.file(path: text, size: Int(info.st_size)))
            } else {
                // Empty, or a /proc file that only says so: what it holds, with its length.
                try self.append(try self.readHeld(path, option: "--data-binary"))
            }
            return
        }
        if self.holdsStreams || (info.st_mode & S_IFMT) == S_IFDIR {
            try self.append(try self.readHeld(path, option: "--data-binary"))
            return
        }
        let fd = Self.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else {
            self.warnings.append("Couldn't read data from file \"\(name)\", this makes an empty POST.")
            return
        }
        self.parts.append(.descriptor(fd))
    }

    /// `--data-urlencode`, as curl reads it: up to the first `=` or `@` is a name sent as
    /// typed; after `=` comes content, after `@` a file's name; with neither, all of it is
    /// content. The content (or the file, newlines and all) goes percent-encoded.
    private mutating func appendURLEncoded(_ bytes: [UInt8]) throws(Get.UsageError) {
        let separator = bytes.firstIndex { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "@") }
        var output: [UInt8] = []
        let content: [UInt8]
        if let separator {
            output += bytes[..<separator]
            if bytes[separator] == UInt8(ascii: "@") {
                content = try self.readHeld(bytes[(separator + 1)...], option: "--data-urlencode")
            } else {
                content = Array(bytes[(separator + 1)...])
            }
            if separator > 0 { output.append(UInt8(ascii: "=")) }
        } else {
            content = bytes
        }
        Self.appendPercentEncoded(content, to: &output)
        try self.append(output)
    }

    /// Each byte but the unreserved ones (letters, digits, `-._~`) as `%XX`, a space as `+`,
    /// as curl encodes them.
    static func appendPercentEncoded(_ bytes: [UInt8], to output: inout [UInt8]) {
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                output.append(byte)
            case UInt8(ascii: " "):
                output.append(UInt8(ascii: "+"))
            default:
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
    }

    /// Bytes held in memory, counted against the limit; adjacent ones make one part.
    private mutating func append(_ bytes: [UInt8]) throws(Get.UsageError) {
        self.held += bytes.count
        guard self.held <= self.limit else { throw self.tooLarge("-d") }
        if case .bytes(var previous)? = self.parts.last {
            // Taken out first, so that the bytes are appended in place, not copied each time.
            self.parts[self.parts.count - 1] = .bytes([])
            previous += bytes
            self.parts[self.parts.count - 1] = .bytes(previous)
        } else {
            self.parts.append(.bytes(bytes))
        }
    }

    private func tooLarge(_ what: String) -> Get.UsageError {
        Get.UsageError(code: 2, message: "\(what): more than \(self.limit) bytes of data to hold in memory"
            + " (-d, --data-urlencode, -G and several URLs read their data whole); --data-binary @file streams a file of any size to one URL")
    }

    /// `path` (`-`: standard input) read whole, within what the limit leaves; a file that
    /// cannot be read gives nothing and a warning.
    private mutating func readHeld(_ path: ArraySlice<UInt8>, option: String) throws(Get.UsageError) -> [UInt8] {
        let name = String(decoding: path, as: UTF8.self)
        let fd = path.elementsEqual("-".utf8) ? 0 : Self.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else {
            self.warnings.append("Couldn't read data from file \"\(name)\", this makes an empty POST.")
            return []
        }
        defer { if fd != 0 { close(fd) } }
        switch Output.readAll(fd, limit: self.limit - self.held) {
        case .whole(let bytes): return bytes
        case .tooLarge: throw self.tooLarge("\(option) @\(name)")
        case .failed:
            self.warnings.append("Couldn't read data from file \"\(name)\", this makes an empty POST.")
            return []
        }
    }

    /// `body` with `path`'s bytes as a C string (a file name need not be UTF-8).
    private static func withCString<T>(_ path: ArraySlice<UInt8>, _ body: (UnsafePointer<CChar>) -> T) -> T {
        (Array(path) + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }

    /// Everything, when it is all in memory (always so when streams and files are held).
    var heldBytes: [UInt8]? {
        var bytes: [UInt8] = []
        for part in self.parts {
            guard case .bytes(let some) = part else { return nil }
            bytes += some
        }
        return bytes
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
