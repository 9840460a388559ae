// A process for DiskCacheStoreTests: it uses a DiskCacheStore through Salvo's own code while
// the test kills it, or runs beside it on the same directory.
//
//   cache-store-child slow <directory> <key> <id> <chunks>
//       stores <chunks> chunks of 64 KiB under <key>, slowly; prints "MIDWRITE <bytes>"
//       once half are written, and "COMMITTED" if it ever gets to the end.
//   cache-store-child hammer <directory> <rounds> <tag> <capacity>
//       stores and reads entries of four keys in a loop; every body read must be whole and
//       be the one its entry describes. Prints "RESULT ok <reads>" or "RESULT bad <why>".
//   cache-store-child full <directory> <limit>
//       stores an entry larger than the process may write to a file (RLIMIT_FSIZE).
//   cache-store-child bench <directory> <bytes> <rounds>
//       times storing and reading an entry of <bytes>.
import Foundation
import SalvoTestSupport
import HTTPTypes
import Salvo

func say(_ line: String) {
    // Unbuffered: the test waits for the line while this process carries on.
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The body stored for `id`, as the tests make it.
func pattern(id: String, count: Int) -> [UInt8] {
    BodyPattern.bytes(id: id, count: count)
}

func response(id: String, key: String, bodySize: Int) -> StoredResponse {
    var head = HTTPResponse(status: .ok)
    head.headerFields[HTTPField.Name("x-entry-id")!] = id
    let now = Date().timeIntervalSince1970
    return StoredResponse(id: id, key: key, head: head, requestTime: now, responseTime: now, bodySize: bodySize)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    say("usage: cache-store-child slow|hammer <directory> ...")
    exit(2)
}
let store = try DiskCacheStore(directory: arguments[2], capacity: arguments[1] == "hammer" ? Int(arguments[5])! : 1 << 30,
                               maxEntrySize: 1 << 30)

switch arguments[1] {
case "slow":
    let (key, id, chunks) = (arguments[3], arguments[4], Int(arguments[5])!)
    guard let writer = await store.makeWriter(for: response(id: id, key: key, bodySize: chunks * 65536)) else {
        say("REFUSED")
        exit(1)
    }
    let body = pattern(id: id, count: chunks * 65536)
    for chunk in 0..<chunks {
        try await writer.write(Array(body[(chunk * 65536)..<((chunk + 1) * 65536)]))
        if chunk == chunks / 2 {
            say("MIDWRITE \((chunk + 1) * 65536)")
            // Long enough that the kill always lands mid-write, however busy the machine.
            try await Task.sleep(for: .seconds(60))
        }
    }
    try await writer.commit(replacing: [])
    say("COMMITTED")

case "hammer":
    let (rounds, tag) = (Int(arguments[3])!, arguments[4])
    var reads = 0
    for round in 0..<rounds {
        let key = "GET https://example.com/item/\(round % 4)"
        let id = "\(tag)-\(round)"
        let size = (round * 7919) % (160 * 1024)
        let body = pattern(id: id, count: size)
        if let writer = await store.makeWriter(for: response(id: id, key: key, bodySize: size)) {
            var offset = 0
            while offset < size {
                let end = min(size, offset + 10_000)
                try await writer.write(Array(body[offset..<end]))
                offset = end
            }
            let older = await store.entries(for: key).filter { $0.id.hasPrefix(tag + "-") }.map(\.id)
            // Taken back when another process invalidated the key meanwhile: expected here.
            try? await writer.commit(replacing: round % 3 == 0 ? older : [])
        }
        if round % 5 == 0 {
            var revised = response(id: id, key: key, bodySize: size)
            revised.head.headerFields[HTTPField.Name("x-revised")!] = "yes"
            await store.update(revised)
        }
        for other in 0..<4 {
            for entry in await store.entries(for: "GET https://example.com/item/\(other)") {
                guard entry.head.headerFields[HTTPField.Name("x-entry-id")!] == entry.id else {
                    say("RESULT bad the head of \(entry.id) is another entry's")
                    exit(1)
                }
                guard let stream = await store.body(of: entry) else { continue }   // evicted meanwhile
                do {
                    let read = try await stream.collect(upTo: 1 << 30)
                    guard read == pattern(id: entry.id, count: entry.bodySize) else {
                        say("RESULT bad the body of \(entry.id) differs (\(read.count) bytes, \(entry.bodySize) expected)")
                        exit(1)
                    }
                    reads += 1
                } catch {
                    say("RESULT bad reading \(entry.id): \(error)")
                    exit(1)
                }
            }
        }
    }
    say("RESULT ok \(reads)")

case "full":
    // The disk "fills" at <limit> bytes per file (RLIMIT_FSIZE: writes past it fail with
    // EFBIG, as they would with ENOSPC): storing a larger entry must fail cleanly.
    let limit = Int(arguments[3])!
    signal(SIGXFSZ, SIG_IGN)
    var rlimit = rlimit(rlim_cur: rlim_t(limit), rlim_max: rlim_t(limit))
    guard setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &rlimit) == 0 else {
        say("RESULT bad setrlimit failed")
        exit(1)
    }
    let size = limit * 4
    let writer = await store.makeWriter(for: response(id: "too-big", key: "GET https://example.com/full", bodySize: size))!
    let body = pattern(id: "too-big", count: size)
    do {
        var offset = 0
        while offset < size {
            try await writer.write(Array(body[offset..<min(size, offset + 65536)]))
            offset += 65536
        }
        try await writer.commit(replacing: [])
        say("RESULT bad stored past the file size limit")
    } catch let error as DiskCacheError {
        let visible = await store.entries(for: "GET https://example.com/full").count
        say("RESULT failed errno=\(error.errno ?? 0) visible=\(visible)")
    }

case "bench":
    // Times storing and reading one entry of <bytes>, <rounds> times (medians, in ms).
    let (size, rounds) = (Int(arguments[3])!, Int(arguments[4])!)
    let body = pattern(id: "bench", count: size)
    var storing: [Double] = []
    var reading: [Double] = []
    for round in 0..<rounds {
        let entry = response(id: "bench-\(round)", key: "GET https://example.com/bench", bodySize: size)
        let start = Date()
        let writer = await store.makeWriter(for: entry)!
        var offset = 0
        while offset < size {
            try await writer.write(Array(body[offset..<min(size, offset + 65536)]))
            offset += 65536
        }
        try await writer.commit(replacing: round > 0 ? ["bench-\(round - 1)"] : [])
        let stored = Date()
        var count = 0
        for try await chunk in (await store.body(of: entry))! { count += chunk.count }
        precondition(count == size)
        storing.append(stored.timeIntervalSince(start) * 1000)
        reading.append(Date().timeIntervalSince(stored) * 1000)
    }
    let lookups = Date()
    for _ in 0..<1000 { _ = await store.entries(for: "GET https://example.com/bench") }
    let lookup = Date().timeIntervalSince(lookups)   // ms per lookup: s / 1000 * 1000
    say("STORE median \(storing.sorted()[rounds / 2]) ms, READ median \(reading.sorted()[rounds / 2]) ms, LOOKUP \(lookup) ms")

default:
    say("unknown mode \(arguments[1])")
    exit(2)
}
