import CZlib
import Testing
@_spi(Benchmarks) @testable import SalvoCore

/// gzip and deflate decoding without sockets: every split, pauses, chains, corrupt and
/// truncated input, and the bounds against bombs.
@Suite struct ContentCodingTests {
    static let expected = Array(String(repeating: "hello, salvo! ", count: 20).utf8)
    /// Made by Python's gzip and zlib modules: an independent producer.
    static let pythonGzip = bytes("1f8b0800000000000203cb48cdc9c9d751284ecc29cb5754c818e54179007c28819a18010000")
    static let pythonRaw = bytes("cb48cdc9c9d751284ecc29cb5754c818e5417900")
    static let pythonZlib = bytes("78dacb48cdc9c9d751284ecc29cb5754c818e54179009ea05f79")

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    static func text(_ count: Int) -> [UInt8] {
        var state: UInt32 = 12345
        return (0..<count).map { _ in
            state = state &* 1_103_515_245 &+ 12345
            return Array("abcdefgh ijklmnop{}\":,0123\n".utf8)[Int(state >> 16) % 27]
        }
    }

    static func zlibCompress(_ data: [UInt8], windowBits: Int32) -> [UInt8] {
        var stream = z_stream()
        _ = salvo_deflateInit2(&stream, 6, windowBits)
        defer { deflateEnd(&stream) }
        var out = [UInt8](repeating: 0, count: Int(compressBound(uLong(data.count))) + 64)
        var input = data
        let produced = input.withUnsafeMutableBytes { inputBytes in
            out.withUnsafeMutableBytes { outBytes -> Int in
                stream.next_in = inputBytes.baseAddress?.assumingMemoryBound(to: Bytef.self)
                stream.avail_in = uInt(inputBytes.count)
                stream.next_out = outBytes.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(outBytes.count)
                _ = deflate(&stream, Z_FINISH)
                return outBytes.count - Int(stream.avail_out)
            }
        }
        return Array(out[..<produced])
    }

    /// Decodes `input` fed in `pieces`, pausing the sink every `pauseEvery` calls.
    static func decode(_ coding: String, _ input: [UInt8], pieces: [Int]? = nil, pauseEvery: Int = 0,
                       limits: ContentDecoder.Limits = .init()) throws -> [UInt8] {
        guard let decoder = try ContentDecoder.make(contentEncoding: coding, limits: limits) else { return input }
        var out: [UInt8] = []
        var calls = 0
        let sink: ContentDecoder.Sink = { piece in
            out += piece
            calls += 1
            return pauseEvery == 0 || calls % pauseEvery != 0
        }
        var offset = 0
        for size in pieces ?? [input.count] {
            let end = min(input.count, offset + size)
            let done = try Array(input[offset..<end]).withBytes { (bytes) throws(TransportError) -> Bool in
                try decoder.decode(bytes, into: sink)
            }
            if !done {
                while try !decoder.resume(into: sink) {}
            }
            offset = end
        }
        try decoder.finish(into: sink)
        return out
    }

    @Test func headerValues() throws {
        #expect(try ContentCoding.parse("gzip") == [.gzip])
        #expect(try ContentCoding.parse(" X-GZip ") == [.gzip])
        #expect(try ContentCoding.parse("identity") == [])
        #expect(try ContentCoding.parse("none") == [], "an alias servers send for identity")
        #expect(try ContentCoding.parse("") == [])
        #expect(try ContentCoding.parse("deflate, gzip") == [.deflate, .gzip])
        #expect(try ContentCoding.parse("gzip,identity,,deflate") == [.gzip, .deflate])
        for bad in ["br", "zstd", "compress", "gzip, br", "gzip, gzip, gzip"] {
            #expect(throws: TransportError.self, "\(bad)") { try ContentCoding.parse(bad) }
        }
        #expect(try ContentDecoder.make(contentEncoding: "identity", limits: .init()) == nil)
    }

    @Test func independentProducers() throws {
        #expect(try Self.decode("gzip", Self.pythonGzip) == Self.expected)
        #expect(try Self.decode("deflate", Self.pythonRaw) == Self.expected)
        #expect(try Self.decode("deflate", Self.pythonZlib) == Self.expected)
    }

    @Test func everySplitOffset() throws {
        for (coding, data) in [("gzip", Self.pythonGzip), ("deflate", Self.pythonRaw), ("deflate", Self.pythonZlib)] {
            for split in 0...data.count {
                #expect(try Self.decode(coding, data, pieces: [split, data.count]) == Self.expected, "\(coding) split \(split)")
            }
            #expect(try Self.decode(coding, data, pieces: Array(repeating: 1, count: data.count)) == Self.expected)
        }
    }

    @Test func largeBodiesInRandomPiecesWithPauses() throws {
        let text = Self.text(1 << 20)
        let gzip = GzipEncoder.gzip(text)
        var sizes: [Int] = []
        var state: UInt32 = 7
        while sizes.reduce(0, +) < gzip.count {
            state = state &* 1_103_515_245 &+ 12345
            sizes.append(Int(state >> 16) % 20_000 + 1)
        }
        #expect(try Self.decode("gzip", gzip, pieces: sizes) == text)
        #expect(try Self.decode("gzip", gzip, pieces: sizes, pauseEvery: 1) == text)
        #expect(try Self.decode("gzip", gzip, pauseEvery: 3) == text)
        let wrapped = Self.zlibCompress(text, windowBits: 15)
        let raw = Self.zlibCompress(text, windowBits: -15)
        #expect(try Self.decode("deflate", wrapped, pieces: sizes, pauseEvery: 2) == text)
        #expect(try Self.decode("deflate", raw, pieces: sizes, pauseEvery: 2) == text)
    }

    /// A connection keeps delivering the rest of a read (the next chunk of a chunked body)
    /// after the sink paused: it queues behind the paused input, in order.
    @Test func inputWhilePausedQueues() throws {
        // Repetitive enough that each 1000-byte piece inflates to several output buffers.
        let text = (0..<3_000_000).map { UInt8(65 + $0 % 7) }
        let gzip = GzipEncoder.gzip(text)
        let decoder = try #require(try ContentDecoder.make(contentEncoding: "gzip", limits: .init(maxRatio: 1 << 20)))
        var out: [UInt8] = []
        var paused = true
        var offset = 0
        while offset < gzip.count {
            let end = min(gzip.count, offset + 1000)
            _ = try Array(gzip[offset..<end]).withBytes { (bytes) throws(TransportError) -> Bool in
                try decoder.decode(bytes) { out += $0; return !paused }
            }
            offset = end
        }
        #expect(decoder.hasPendingInput)
        paused = false
        while try !decoder.resume(into: { out += $0; return true }) {}
        try decoder.finish { out += $0; return true }
        #expect(out == text)
    }

    @Test func concatenatedMembersAndChains() throws {
        let first = Self.text(100_000)
        let second = Array("and a second member".utf8)
        let members = GzipEncoder.gzip(first) + GzipEncoder.gzip(second)
        #expect(try Self.decode("gzip", members) == first + second)
        #expect(try Self.decode("gzip", members, pieces: [members.count / 2, members.count], pauseEvery: 1) == first + second)
        // "deflate, gzip": deflate applied first, then gzip; undone in reverse.
        let chain = GzipEncoder.gzip(Self.zlibCompress(first, windowBits: 15))
        #expect(try Self.decode("deflate, gzip", chain) == first)
        #expect(try Self.decode("deflate, gzip", chain, pieces: Array(repeating: 777, count: chain.count / 777 + 1), pauseEvery: 1) == first)
    }

    @Test func brokenInput() throws {
        var corrupt = GzipEncoder.gzip(Self.text(50_000))
        corrupt[corrupt.count / 2] ^= 0x55
        #expect(performing: { try Self.decode("gzip", corrupt) },
                throws: { ($0 as? TransportError)?.code == .contentDecodingFailed })
        let whole = GzipEncoder.gzip(Self.text(50_000))
        let truncated = Array(whole.dropLast(10))
        #expect(performing: { try Self.decode("gzip", truncated) },
                throws: { ($0 as? TransportError)?.code == .contentDecodingFailed })
        #expect(performing: { try Self.decode("gzip", Array("not gzip at all".utf8)) },
                throws: { ($0 as? TransportError)?.code == .contentDecodingFailed })
        // Nothing at all is an empty body, not an error.
        #expect(try Self.decode("gzip", []) == [])
        // Padding after a complete member is ignored, as curl does.
        #expect(try Self.decode("gzip", Self.pythonGzip + [0, 0, 0]) == Self.expected)
    }

    @Test func limits() throws {
        let text = Self.text(2 << 20)
        let gzip = GzipEncoder.gzip(text)
        #expect(performing: { try Self.decode("gzip", gzip, limits: .init(maxDecodedSize: 1 << 20)) },
                throws: { ($0 as? TransportError)?.code == .decodedBodyTooLarge })
        #expect(try Self.decode("gzip", gzip, limits: .init(maxDecodedSize: 2 << 20)) == text)
    }

    /// 256 MiB of zeros compress about 1000:1. Decoding stops within a couple of output
    /// buffers past the ratio bound; memory stays one buffer.
    @Test func bombsStopEarly() throws {
        let encoder = try GzipEncoder(level: 9)
        var bomb: [UInt8] = []
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        for _ in 0..<256 { zeros.withUnsafeBytes { encoder.compress($0) { bomb.append(contentsOf: $0) } } }
        encoder.finish { bomb.append(contentsOf: $0) }
        let decoder = try #require(try ContentDecoder.make(contentEncoding: "gzip", limits: .init(maxRatio: 100)))
        var decoded = 0
        #expect(performing: {
            _ = try bomb.withBytes { (bytes) throws(TransportError) -> Bool in
                try decoder.decode(bytes) { decoded += $0.count; return true }
            }
        }, throws: { ($0 as? TransportError)?.code == .compressionRatioExceeded })
        // Measured against what zlib took so far: it stops within a buffer of 1 MiB (the
        // floor below which ratios are not checked), though all of the bomb was handed in.
        #expect(decoded <= (1 << 20) + 2 * Inflater.outputSize, "decoded \(decoded)")
    }
}
