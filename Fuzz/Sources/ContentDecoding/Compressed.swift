@_spi(Benchmarks) import SalvoCore

/// Streams made here from the fuzzer's bytes, in each format a server may send, with only the
/// engine's gzip encoder: a raw deflate stream is a gzip member without its 10-byte header
/// and 8-byte trailer, and a zlib stream is that with a 2-byte header and an Adler-32.
enum Compressed {
    static func make(_ bytes: [UInt8], format: Int) -> (coding: String, encoded: [UInt8]) {
        switch format % 5 {
        case 0: ("gzip", GzipEncoder.gzip(bytes))
        case 1: ("deflate", self.rawDeflate(bytes))
        case 2: ("deflate", self.zlib(bytes))
        case 3: ("gzip, gzip", GzipEncoder.gzip(GzipEncoder.gzip(bytes)))
        default: ("deflate, gzip", GzipEncoder.gzip(self.zlib(bytes)))
        }
    }

    static func rawDeflate(_ bytes: [UInt8]) -> [UInt8] {
        let member = GzipEncoder.gzip(bytes)
        // The encoder writes a plain header: no name, comment or extra field.
        return Array(member[10..<(member.count - 8)])
    }

    static func zlib(_ bytes: [UInt8]) -> [UInt8] {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        let adler = b << 16 | a
        return [0x78, 0x9C] + self.rawDeflate(bytes) + [UInt8(adler >> 24), UInt8(adler >> 16 & 0xFF), UInt8(adler >> 8 & 0xFF), UInt8(adler & 0xFF)]
    }
}

/// Decompression bombs, made once: a few KiB that decode to tens of MiB.
enum Bombs {
    struct Bomb {
        let coding: String
        let encoded: [UInt8]
    }

    static let all: [Bomb] = {
        let zeros = [UInt8](repeating: 0, count: 16 << 20)
        let once = GzipEncoder.gzip(zeros, level: 9)
        return [
            Bomb(coding: "gzip", encoded: once),
            Bomb(coding: "deflate", encoded: Compressed.zlib(zeros)),
            // Twice compressed: the outer stream is small, the inner one is the bomb.
            Bomb(coding: "gzip, gzip", encoded: GzipEncoder.gzip(once, level: 9)),
        ]
    }()
}
