import CZlibBaseline
@_spi(Benchmarks) import SalvoCore
#if canImport(Glibc)
import Glibc
#endif

// 32 MiB of JSON-like records with varied numbers and words (deterministic), gzipped once.
var state: UInt64 = 0x9E37_79B9_7F4A_7C15
@MainActor func next() -> UInt64 {
    state ^= state << 13
    state ^= state >> 7
    state ^= state << 17
    return state
}
let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
var plain: [UInt8] = []
plain.reserveCapacity(32 << 20)
while plain.count < 32 << 20 {
    let id = next() % 1_000_000
    let name = words[Int(next() % 10)] + "-" + String(next() % 997)
    let score = Double(next() % 100_000) / 100
    let tags = "[\"" + words[Int(next() % 10)] + "\",\"" + words[Int(next() % 10)] + "\"]"
    let record = "{\"id\":\(id),\"name\":\"\(name)\",\"score\":\(score),\"tags\":\(tags)}\n"
    plain += Array(record.utf8)
}
let compressed = GzipEncoder.gzip(plain)
print("data: \(plain.count) bytes, gzip \(compressed.count) bytes, \(plain.count / compressed.count):1")

func seconds(_ work: () -> Int) -> (Double, Int) {
    var start = timespec()
    var end = timespec()
    clock_gettime(CLOCK_MONOTONIC, &start)
    let out = work()
    clock_gettime(CLOCK_MONOTONIC, &end)
    return (Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9, out)
}

/// zlib on its own: the whole input, a 64 KiB output buffer, output discarded.
@MainActor func baseline() -> Int {
    var stream = z_stream()
    _ = baseline_inflateInit2(&stream, 16 + 15)
    defer { inflateEnd(&stream) }
    let output = UnsafeMutablePointer<Bytef>.allocate(capacity: 64 * 1024)
    defer { output.deallocate() }
    var total = 0
    compressed.withUnsafeBytes { input in
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = uInt(input.count)
        while true {
            stream.next_out = output
            stream.avail_out = 64 * 1024
            let status = inflate(&stream, Z_NO_FLUSH)
            total += 64 * 1024 - Int(stream.avail_out)
            if status != Z_OK { break }
        }
    }
    return total
}

/// Salvo's decoder fed 64 KiB reads, as a connection feeds it, output discarded.
@MainActor func salvo() -> Int {
    let decoder = try! ContentDecoder.make(contentEncoding: "gzip", limits: .init())!
    var total = 0
    compressed.withUnsafeBytes { input in
        var offset = 0
        while offset < input.count {
            let end = min(input.count, offset + 64 * 1024)
            _ = try! decoder.decode(UnsafeRawBufferPointer(rebasing: input[offset..<end])) { total += $0.count; return true }
            offset = end
        }
    }
    try! decoder.finish { total += $0.count; return true }
    return total
}

var zlibRates: [Double] = []
var salvoRates: [Double] = []
for _ in 0..<7 {
    let (a, na) = seconds(baseline)
    let (b, nb) = seconds(salvo)
    precondition(na == plain.count && nb == plain.count, "decoded sizes differ: \(na), \(nb)")
    zlibRates.append(Double(na) / a / 1e6)
    salvoRates.append(Double(nb) / b / 1e6)
}
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
let z = median(zlibRates)
let s = median(salvoRates)
func format(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }
print("zlib inflate:         \(format(z)) MB/s decoded (median of 7)")
print("Salvo ContentDecoder: \(format(s)) MB/s decoded (median of 7)")
print("ratio: \(format(s / z))×")
