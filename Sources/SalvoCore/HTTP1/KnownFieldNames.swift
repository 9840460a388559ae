import SalvoTransport
import HTTPTypes
#if canImport(Glibc)
import Glibc
#endif

/// Field names servers send on almost every response, matched on their bytes so that the
/// decoder does not build (and validate, and lowercase) a new name for each of them.
/// Matching is exact, so a name keeps the case it was sent in.
///
/// This runs for every field of every response: the spellings sit in one block of bytes,
/// grouped by length, and a look-up compares only the few of the same length with `memcmp` —
/// no array or name is copied (and retained) until one matches.
enum KnownFieldNames {
    private struct Entry {
        let offset: Int
        let name: Int
    }

    private struct Table: @unchecked Sendable {
        // @unchecked Sendable: built once by the static initializer, never written after.
        let bytes: UnsafeMutablePointer<UInt8>
        /// Per length, the entries of that length (their bytes at `offset`).
        let byLength: [[Entry]]
        let names: [HTTPField.Name]
    }

    private static let table: Table = {
        let spellings = ["Content-Length", "Content-Type", "Date", "Server", "Connection", "Keep-Alive",
                         "Transfer-Encoding", "ETag", "Last-Modified", "Cache-Control", "Accept-Ranges",
                         "Location", "Vary", "Content-Encoding", "Expires", "Set-Cookie", "Age", "Via"]
            .flatMap { [$0, $0.lowercased()] }
            .filter { HTTPField.Name($0) != nil }
        let total = spellings.reduce(0) { $0 + $1.utf8.count }
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: total)
        var byLength = [[Entry]](repeating: [], count: (spellings.map(\.utf8.count).max() ?? 0) + 1)
        var names: [HTTPField.Name] = []
        var offset = 0
        for spelling in spellings {
            let utf8 = Array(spelling.utf8)
            (bytes + offset).update(from: utf8, count: utf8.count)
            byLength[utf8.count].append(Entry(offset: offset, name: names.count))
            names.append(HTTPField.Name(spelling)!)
            offset += utf8.count
        }
        return Table(bytes: bytes, byLength: byLength, names: names)
    }()

    /// The name whose bytes are exactly `bytes`, if it is a common one.
    @inline(__always)
    static func lookup(_ bytes: [UInt8]) -> HTTPField.Name? {
        let count = bytes.count
        let table = Self.table
        guard count > 0, count < table.byLength.count else { return nil }
        return bytes.withUnsafeBufferPointer { wanted -> HTTPField.Name? in
            table.byLength[count].withUnsafeBufferPointer { candidates -> HTTPField.Name? in
                for entry in candidates where memcmp(table.bytes + entry.offset, wanted.baseAddress!, count) == 0 {
                    return table.names[entry.name]
                }
                return nil
            }
        }
    }
}
