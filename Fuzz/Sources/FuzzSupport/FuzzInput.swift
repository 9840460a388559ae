/// A fuzzer's input read front to back: a few bytes of choices (where to split, which
/// option), then the payload. Reading past the end gives zeros, so every input is usable.
public struct FuzzInput {
    public let bytes: [UInt8]
    public private(set) var position = 0

    public init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        if let data, size > 0 {
            self.bytes = Array(UnsafeBufferPointer(start: data, count: size))
        } else {
            self.bytes = []
        }
    }

    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    public var isAtEnd: Bool { self.position >= self.bytes.count }

    /// The next byte, or 0 past the end.
    public mutating func byte() -> UInt8 {
        guard self.position < self.bytes.count else { return 0 }
        defer { self.position += 1 }
        return self.bytes[self.position]
    }

    public mutating func bool() -> Bool { self.byte() & 1 == 1 }

    /// A number in `0..<bound` from the next byte (two bytes when `bound` is above 256).
    public mutating func int(below bound: Int) -> Int {
        precondition(bound > 0)
        if bound <= 256 { return Int(self.byte()) % bound }
        return (Int(self.byte()) << 8 | Int(self.byte())) % bound
    }

    /// Up to `count` of the next bytes.
    public mutating func take(_ count: Int) -> [UInt8] {
        let end = min(self.bytes.count, self.position + max(0, count))
        defer { self.position = end }
        return Array(self.bytes[self.position..<end])
    }

    /// A piece that runs up to the next `separator` byte (not included) or to the end.
    public mutating func piece(until separator: UInt8) -> [UInt8] {
        let start = self.position
        while self.position < self.bytes.count && self.bytes[self.position] != separator { self.position += 1 }
        defer { if self.position < self.bytes.count { self.position += 1 } }
        return Array(self.bytes[start..<self.position])
    }

    /// Everything not read yet.
    public mutating func rest() -> [UInt8] {
        defer { self.position = self.bytes.count }
        return self.position < self.bytes.count ? Array(self.bytes[self.position...]) : []
    }
}
