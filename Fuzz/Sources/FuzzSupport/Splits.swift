/// Cut points for feeding a payload in pieces, drawn from the input's first bytes: one byte
/// says how many cuts (0–15), one byte each says where, as a fraction of the payload. The
/// same input always gives the same cuts, so a crash replays.
public struct Splits {
    let fractions: [UInt8]

    public init(from input: inout FuzzInput) {
        let count = Int(input.byte() & 0x0F)
        self.fractions = input.take(count)
    }

    /// `payload` cut at the drawn points, in order; empty pieces are dropped. Joined, the
    /// pieces are `payload`.
    public func pieces(of payload: [UInt8]) -> [[UInt8]] {
        guard !payload.isEmpty else { return [] }
        var cuts = self.fractions.map { Int($0) * payload.count / 256 }
        cuts.append(payload.count)
        cuts.sort()
        var pieces: [[UInt8]] = []
        var start = 0
        for cut in cuts where cut > start {
            pieces.append(Array(payload[start..<cut]))
            start = cut
        }
        return pieces
    }
}
