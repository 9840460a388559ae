import SalvoTransport
import HTTPTypes

/// Field names servers send on almost every response, matched on their bytes so that the
/// decoder does not build (and validate, and lowercase) a new name for each of them.
/// Matching is exact, so a name keeps the case it was sent in.
enum KnownFieldNames {
    private static let table: [(bytes: [UInt8], name: HTTPField.Name)] = {
        let names = ["Content-Length", "Content-Type", "Date", "Server", "Connection", "Keep-Alive",
                     "Transfer-Encoding", "ETag", "Last-Modified", "Cache-Control", "Accept-Ranges",
                     "Location", "Vary", "Content-Encoding", "Expires", "Set-Cookie", "Age", "Via"]
        var table: [(bytes: [UInt8], name: HTTPField.Name)] = []
        for raw in names {
            for spelling in [raw, raw.lowercased()] where HTTPField.Name(spelling) != nil {
                table.append((Array(spelling.utf8), HTTPField.Name(spelling)!))
            }
        }
        return table
    }()

    /// The name whose bytes are exactly `bytes`, if it is a common one.
    @inline(__always)
    static func lookup(_ bytes: [UInt8]) -> HTTPField.Name? {
        let count = bytes.count
        for entry in self.table where entry.bytes.count == count && entry.bytes == bytes {
            return entry.name
        }
        return nil
    }
}
