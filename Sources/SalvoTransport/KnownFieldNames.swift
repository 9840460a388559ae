import HTTPTypes
#if canImport(Glibc)
import Glibc
#endif

/// Field names servers send on almost every response, matched on their bytes so that the
/// engine does not build (and validate, and lowercase) a new name for each of them. Here,
/// beside ``FieldRecords``, which builds fields with it (see there why those sit in the seam).
/// Matching is exact, so a name keeps the case it was sent in.
///
/// This runs for every field of every response: the spellings sit in one block of bytes,
/// grouped by length, and a look-up compares only the few of the same length with `memcmp` —
/// no array or name is copied (and retained) until one matches.
package enum KnownFieldNames {
    private struct Entry {
        let offset: Int
        let name: Int
    }

    /// The look-up's data, in memory that is never freed or written after it is built: read
    /// through raw pointers, so a look-up retains nothing.
    private struct Table: @unchecked Sendable {
        // @unchecked Sendable: built once by the static initializer, immutable after.
        let bytes: UnsafeMutablePointer<UInt8>
        /// Entries sorted by length; entries of length n are `entries[starts[n]..<starts[n + 1]]`.
        let entries: UnsafeMutablePointer<Entry>
        let starts: UnsafeMutablePointer<Int>
        let longest: Int
        let names: [HTTPField.Name]
    }

    private static let table: Table = {
        let spellings = ["Content-Length", "Content-Type", "Date", "Server", "Connection", "Keep-Alive",
                         "Transfer-Encoding", "ETag", "Last-Modified", "Cache-Control", "Accept-Ranges",
                         "Location", "Vary", "Content-Encoding", "Expires", "Set-Cookie", "Age", "Via"]
            .flatMap { [$0, $0.lowercased()] }
            .filter { HTTPField.Name($0) != nil }
            .sorted { $0.utf8.count < $1.utf8.count }
        let longest = spellings.map(\.utf8.count).max() ?? 0
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: spellings.reduce(0) { $0 + $1.utf8.count })
        let entries = UnsafeMutablePointer<Entry>.allocate(capacity: spellings.count)
        let starts = UnsafeMutablePointer<Int>.allocate(capacity: longest + 2)
        var names: [HTTPField.Name] = []
        var offset = 0
        var length = 0
        starts[0] = 0
        for (index, spelling) in spellings.enumerated() {
            let utf8 = Array(spelling.utf8)
            while length < utf8.count {
                length += 1
                starts[length] = index
            }
            (bytes + offset).update(from: utf8, count: utf8.count)
            (entries + index).initialize(to: Entry(offset: offset, name: names.count))
            names.append(HTTPField.Name(spelling)!)
            offset += utf8.count
        }
        starts[longest + 1] = spellings.count
        return Table(bytes: bytes, entries: entries, starts: starts, longest: longest, names: names)
    }()

    /// The name whose bytes are exactly `bytes`, if it is a common one.
    @inline(__always)
    package static func lookup(_ bytes: UnsafeRawBufferPointer) -> HTTPField.Name? {
        let count = bytes.count
        let table = Self.table
        guard count > 0, count <= table.longest else { return nil }
        for index in table.starts[count]..<table.starts[count + 1]
        where memcmp(table.bytes + table.entries[index].offset, bytes.baseAddress!, count) == 0 {
            return table.names[table.entries[index].name]
        }
        return nil
    }
}
