/// Bodies that are a function of an id, so that any reader — a test, or a process beside it —
/// can check one it did not write. Cut from one block made once (a period of 1000003 bytes,
/// prime, so no chunk size lines up with it), which keeps making and checking bodies cheap
/// in a debug build.
public enum BodyPattern {
    /// The `count` bytes of `id`'s body.
    public static func bytes(id: String, count: Int) -> [UInt8] {
        let seed = Int(id.utf8.reduce(UInt32(7)) { $0 &* 31 &+ UInt32($1) } % 65_536)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        var start = seed
        while bytes.count < count {
            let take = min(count - bytes.count, period - start)
            bytes += block[start..<(start + take)]
            start = 0
        }
        return bytes
    }

    private static let period = 1_000_003
    private static let block: [UInt8] = {
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        return (0..<(period + 65_536)).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state >> 24)
        }
    }()
}
