import CZlib
import Foundation

/// The layout of one entry file of a ``DiskCacheStore``, version 1. Integers are
/// little-endian.
///
///     0    magic "SALVOHC\0"                8 bytes
///     8    format version                   UInt32 (1)
///     12   reserved                         UInt32 (0)
///     16   body length                      UInt64
///     24   metadata length                  UInt32
///     28   CRC-32 of the metadata           UInt32
///     32   CRC-32 of the body               UInt32
///     36   reserved                         UInt32 (0)
///     40   when the entry was stored        UInt64 (a Double's bits, seconds since 1970)
///     48   CRC-32 of bytes 0..<48           UInt32
///     52   reserved                         UInt32 (0)
///     56   the body
///     56 + body length: the metadata, the ``StoredResponse`` as JSON
///
/// The metadata comes after the body because its `bodySize` is known only once the body has
/// been written; the header is written last, at offset 0, just before the file is synced and
/// renamed into place. A file is therefore either whole or never visible under an entry name.
///
/// At open a reader checks the magic, the version, the header's checksum, that the file's
/// length is exactly header + body + metadata, the metadata's checksum, and that the stored
/// key and id are the ones asked for (names come from a hash, which may collide). The body's
/// checksum is checked as the body is streamed, before its last chunk is handed out.
enum EntryFormat {
    static let magic: [UInt8] = Array("SALVOHC\0".utf8)
    static let version: UInt32 = 1
    static let headerSize = 56
    /// Metadata larger than this is taken for damage: a length read from a file never
    /// decides an allocation larger than this. It also keeps decoding from reaching
    /// `HTTPFields`' precondition on 65535 fields: a field takes at least 24 bytes of JSON,
    /// so 1 MiB holds fewer than 44000.
    static let maxMetadataSize = 1 << 20
    /// Entry files end with this; temporary files with ``temporarySuffix``.
    static let entrySuffix = ".entry"
    static let temporarySuffix = ".partial"
}

/// The fixed header of an entry file.
struct EntryHeader: Equatable, Sendable {
    var bodyLength: UInt64
    var metadataLength: UInt32
    var metadataCRC: UInt32
    var bodyCRC: UInt32
    var storedAt: Double

    /// The file's expected length, nil when the header's lengths cannot describe a file.
    var fileLength: Int? {
        guard self.bodyLength <= UInt64(Int.max) else { return nil }
        let (sum, overflow) = Int(self.bodyLength).addingReportingOverflow(EntryFormat.headerSize + Int(self.metadataLength))
        return overflow ? nil : sum
    }

    func encoded() -> [UInt8] {
        var bytes = EntryFormat.magic
        bytes.reserveCapacity(EntryFormat.headerSize)
        bytes.appendLittleEndian(EntryFormat.version)
        bytes.appendLittleEndian(UInt32(0))
        bytes.appendLittleEndian(self.bodyLength)
        bytes.appendLittleEndian(self.metadataLength)
        bytes.appendLittleEndian(self.metadataCRC)
        bytes.appendLittleEndian(self.bodyCRC)
        bytes.appendLittleEndian(UInt32(0))
        bytes.appendLittleEndian(self.storedAt.bitPattern)
        bytes.appendLittleEndian(CRC32.of(bytes))
        bytes.appendLittleEndian(UInt32(0))
        return bytes
    }

    /// Reads a header; a description of what is wrong when `bytes` is not a version 1 header.
    static func decode(_ bytes: [UInt8]) -> Result<EntryHeader, EntryProblem> {
        guard bytes.count == EntryFormat.headerSize else { return .failure(.damaged("shorter than its header")) }
        guard bytes.starts(with: EntryFormat.magic) else { return .failure(.damaged("not an entry file (bad magic)")) }
        let version = bytes.littleEndianUInt32(at: 8)
        // A newer format is a newer program's, sharing the directory: left alone. An older one
        // is no one's any more.
        guard version <= EntryFormat.version else { return .failure(.foreign) }
        guard version == EntryFormat.version else { return .failure(.damaged("format version \(version), not \(EntryFormat.version)")) }
        guard bytes.littleEndianUInt32(at: 48) == CRC32.of(bytes[0..<48]) else {
            return .failure(.damaged("header checksum mismatch"))
        }
        let header = EntryHeader(bodyLength: bytes.littleEndianUInt64(at: 16),
                                 metadataLength: bytes.littleEndianUInt32(at: 24),
                                 metadataCRC: bytes.littleEndianUInt32(at: 28),
                                 bodyCRC: bytes.littleEndianUInt32(at: 32),
                                 storedAt: Double(bitPattern: bytes.littleEndianUInt64(at: 40)))
        guard Int(header.metadataLength) <= EntryFormat.maxMetadataSize, header.fileLength != nil else {
            return .failure(.damaged("impossible lengths in header"))
        }
        return .success(header)
    }
}

/// Why an entry file was not served.
enum EntryProblem: Error, Equatable {
    /// The file is not a whole, valid entry: it is removed.
    case damaged(String)
    /// A valid entry, of another key or id whose name hashes to the same file name: kept,
    /// not served.
    case foreign
    /// No such file (removed, evicted, never stored).
    case missing
    /// The file could not be read (permissions, descriptors exhausted): kept, not served.
    case unreadable(Int32)
}

/// CRC-32 (zlib's), for the entry files' checksums.
enum CRC32 {
    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        var crc = UInt(crc)
        var offset = 0
        while offset < bytes.count {   // zlib takes a 32-bit length
            let count = min(bytes.count - offset, 1 << 30)
            crc = CZlib.crc32(crc, base.advanced(by: offset).assumingMemoryBound(to: UInt8.self), UInt32(count))
            offset += count
        }
        return UInt32(truncatingIfNeeded: crc)
    }

    static func of<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt32 {
        if let crc = bytes.withContiguousStorageIfAvailable({ update(0, UnsafeRawBufferPointer($0)) }) { return crc }
        return Array(bytes).withUnsafeBytes { update(0, $0) }
    }
}

/// File names from keys and ids: 32 hex digits of a 128-bit, non-cryptographic hash (two
/// differently seeded FNV-1a passes, each finished by a mixer). A collision costs nothing
/// but a miss: the key and id stored in each file are checked on every read.
enum EntryNames {
    static func hash(_ text: String) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        var count: UInt64 = 0
        for byte in text.utf8 {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second = (second ^ UInt64(byte ^ 0xa5)) &* 0x0000_0100_0000_01b3
            count &+= 1
        }
        return hex(mix(first ^ count)) + hex(mix(second &+ count &* 0x9e37_79b9_7f4a_7c15))
    }

    /// The directory of a key's entries, within the store's directory.
    static func keyDirectory(_ key: String) -> String { "k" + hash(key) }

    /// An entry's file name, within its key's directory.
    static func entryFile(id: String) -> String { hash(id) + EntryFormat.entrySuffix }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// Sixteen lowercase hex digits, written in place (a lookup hashes two names).
    private static func hex(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            for index in 0..<16 { buffer[index] = Self.hexDigits[Int((value >> UInt64(60 - index * 4)) & 0xF)] }
            return 16
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

extension [UInt8] {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { self.append(contentsOf: $0) }
    }

    func littleEndianUInt32(at offset: Int) -> UInt32 {
        var value: UInt32 = 0
        for i in (0..<4).reversed() { value = value << 8 | UInt32(self[offset + i]) }
        return value
    }

    func littleEndianUInt64(at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in (0..<8).reversed() { value = value << 8 | UInt64(self[offset + i]) }
        return value
    }
}
