import Foundation
import HTTPTypes
@testable import Salvo
import SalvoTestSupport
import SalvoTransport
import Testing

/// The on-disk cache store: what it keeps, what it refuses to serve, and what survives
/// restarts, crashes and other processes.
@Suite struct DiskCacheStoreTests {
    // MARK: - Helpers

    /// A fresh directory, removed by `body`'s end.
    func withDirectory(_ body: (String) async throws -> Void) async throws {
        let path = NSTemporaryDirectory() + "salvo-disk-cache-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await body(path)
    }

    /// A store without the sweep at open, so that the tests' own sweeps are never skipped
    /// for it.
    func store(_ directory: String, capacity: Int = 64 << 20, maxEntrySize: Int = 16 << 20) throws -> DiskCacheStore {
        try DiskCacheStore(directory: directory, capacity: capacity, maxEntrySize: maxEntrySize, temporaryAge: 60, sweepAtOpen: false)
    }

    /// The body stored for `id` (the child process makes the same).
    static func pattern(id: String, count: Int) -> [UInt8] {
        BodyPattern.bytes(id: id, count: count)
    }

    static let key = "GET https://example.com/things?page=2"

    static func entry(_ id: String, key: String = key, size: Int, vary: [StoredResponse.VaryValue] = []) -> StoredResponse {
        var head = HTTPResponse(status: .ok)
        head.headerFields[.contentType] = "application/octet-stream"
        head.headerFields[HTTPField.Name("x-entry-id")!] = id
        return StoredResponse(id: id, key: key, head: head, varyValues: vary,
                              requestTime: 1_700_000_000.25, responseTime: 1_700_000_001.5, bodySize: size)
    }

    /// Stores `entry` with its pattern body, in chunks of `chunk` bytes.
    @discardableResult
    static func put(_ store: DiskCacheStore, _ entry: StoredResponse, chunk: Int = 100_000, replacing: [String] = []) async throws -> [UInt8] {
        let body = pattern(id: entry.id, count: entry.bodySize)
        let writer = try #require(await store.makeWriter(for: entry))
        var offset = 0
        while offset < body.count {
            let end = min(body.count, offset + chunk)
            try await writer.write(Array(body[offset..<end]))
            offset = end
        }
        try await writer.commit(replacing: replacing)
        return body
    }

    /// Reads `entry`'s body whole; nil when the store has none.
    static func read(_ store: DiskCacheStore, _ entry: StoredResponse) async throws -> [UInt8]? {
        guard let body = await store.body(of: entry) else { return nil }
        return try await body.collect(upTo: 1 << 30)
    }

    static func files(_ directory: String, suffix: String) -> [String] {
        let all = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String]) ?? []
        return all.filter { $0.hasSuffix(suffix) }.map { directory + "/" + $0 }
    }

    static var childPath: String { TestFixtures.product("cache-store-child") }

    // MARK: - Keeping

    @Test func roundTripStreamsAMultiMegabyteBodyInBoundedChunks() async throws {
        try await self.withDirectory { directory in
            let store = try self.store(directory)
            let vary = [StoredResponse.VaryValue(name: "accept-encoding", value: "gzip"), .init(name: "accept-language", value: nil)]
            let entry = Self.entry("one", size: 3 * 1024 * 1024 + 17, vary: vary)
            let body = try await Self.put(store, entry, chunk: 300_001)
            #expect(await store.entries(for: Self.key) == [entry])
            #expect(await store.entries(for: "GET https://example.com/other").isEmpty)
            let stream = try #require(await store.body(of: entry))
            var read: [UInt8] = []
            var largest = 0
            for try await chunk in stream {
                largest = max(largest, chunk.count)
                read += chunk
            }
            #expect(read == body)
            #expect(largest <= 64 * 1024, "read back in chunks, never whole")
            // An empty body round-trips too.
            let empty = Self.entry("empty", size: 0)
            try await Self.put(store, empty)
            #expect(try await Self.read(store, empty) == [])
            // A size unknown when the writer was made: the entry records the size written.
            let unknown = Self.entry("unknown", key: "GET https://example.com/unknown", size: 0)
            let writer = try #require(await store.makeWriter(for: unknown))
            try await writer.write([UInt8](repeating: 7, count: 1234))
            try await writer.commit(replacing: [])
            #expect(await store.entries(for: unknown.key).map(\.bodySize) == [1234])
            // A body being read is read whole even when its entry is removed meanwhile.
            let reading = try #require(await store.body(of: entry))
            await store.removeAll()
            #expect(try await reading.collect(upTo: 1 << 30) == body)
            #expect(await store.body(of: entry) == nil)
            let dirMode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
            #expect(dirMode == 0o700)
        }
    }

    @Test func variantsReplacingAndRemovals() async throws {
        try await self.withDirectory { directory in
            let store = try self.store(directory)
            let gzip = Self.entry("gzip", size: 1000, vary: [.init(name: "accept-encoding", value: "gzip")])
            let plain = Self.entry("plain", size: 2000, vary: [.init(name: "accept-encoding", value: nil)])
            try await Self.put(store, gzip)
            try await Self.put(store, plain)
            #expect(await store.entries(for: Self.key).map(\.id) == ["plain", "gzip"], "most recently stored first")
            let newer = Self.entry("gzip2", size: 1500, vary: [.init(name: "accept-encoding", value: "gzip")])
            try await Self.put(store, newer, replacing: ["gzip"])
            #expect(await store.entries(for: Self.key).map(\.id) == ["gzip2", "plain"])
            #expect(try await Self.read(store, gzip) == nil)
            await store.remove(id: "plain", key: Self.key)
            #expect(await store.entries(for: Self.key).map(\.id) == ["gzip2"])
            // Removing under another key leaves this one's entries alone.
            await store.remove(id: "gzip2", key: "GET https://example.com/elsewhere")
            #expect(await store.entries(for: Self.key).map(\.id) == ["gzip2"])
            let other = Self.entry("x", key: "GET https://example.com/x", size: 10)
            try await Self.put(store, other)
            await store.removeAll(key: Self.key)
            #expect(await store.entries(for: Self.key).isEmpty)
            #expect(await store.entries(for: other.key) == [other])
            // Stored right after an invalidation: it stays (the mark holds its exact moment).
            try await Self.put(store, gzip)
            await store.removeAll()
            #expect(await store.entries(for: Self.key).isEmpty)
            #expect(await store.entries(for: other.key).isEmpty)
            #expect(Self.files(directory, suffix: ".entry").isEmpty)
        }
    }

    @Test func updateReplacesTheHeadAndKeepsTheBody() async throws {
        try await self.withDirectory { directory in
            let store = try self.store(directory)
            let entry = Self.entry("e", size: 700_000)
            let body = try await Self.put(store, entry)
            // A reader that opened the body before the update reads the old file to its end.
            let before = try #require(await store.body(of: entry))
            var revised = entry
            revised.head.headerFields[.eTag] = "\"v2\""
            revised.responseTime = 1_800_000_000
            revised.requestTime = 1_799_999_999
            await store.update(revised)
            #expect(await store.entries(for: Self.key) == [revised])
            #expect(try await Self.read(store, revised) == body)
            #expect(try await before.collect(upTo: 1 << 30) == body)
            #expect(Self.files(directory, suffix: ".partial").isEmpty)
            // Gone: no effect, nothing comes back.
            await store.remove(id: "e", key: Self.key)
            await store.update(revised)
            #expect(await store.entries(for: Self.key).isEmpty)
        }
    }

    @Test func aNewStoreOnTheSameDirectorySeesTheEntries() async throws {
        try await self.withDirectory { directory in
            let entry = Self.entry("kept", size: 200_000)
            let body = try await Self.put(try self.store(directory), entry)
            let reopened = try DiskCacheStore(directory: directory, capacity: 64 << 20)
            #expect(await reopened.entries(for: Self.key) == [entry])
            #expect(try await Self.read(reopened, entry) == body)
        }
    }

    @Test func capacityEvictsTheLeastRecentlyUsed() async throws {
        try await self.withDirectory { directory in
            let store = try self.store(directory, capacity: 1024 * 1024, maxEntrySize: 400 * 1024)
            var entries: [StoredResponse] = []
            for (index, name) in ["a", "b", "c"].enumerated() {
                let entry = Self.entry(name, key: "GET https://example.com/\(name)", size: 300 * 1024)
                try await Self.put(store, entry)
                entries.append(entry)
                // Used hours ago, "a" first (a use is recorded to the second).
                try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: Double(index - 3) * 3600)],
                                                      ofItemAtPath: store.path(key: entry.key, id: entry.id))
            }
            // Reading "a" makes it the most recently used: "b" is now the oldest.
            #expect(try await Self.read(store, entries[0]) != nil)
            let d = Self.entry("d", key: "GET https://example.com/d", size: 300 * 1024)
            try await Self.put(store, d)
            #expect(await store.entries(for: entries[1].key).isEmpty, "the least recently used is evicted")
            #expect(await store.entries(for: entries[0].key).map(\.id) == ["a"])
            #expect(await store.entries(for: entries[2].key).map(\.id) == ["c"])
            #expect(await store.entries(for: d.key).map(\.id) == ["d"])
            let total = Self.files(directory, suffix: ".entry").reduce(0) { sum, path in
                sum + ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
            }
            #expect(total <= 1024 * 1024)
        }
    }

    @Test func theLimitAndAbortLeaveNothingVisible() async throws {
        try await self.withDirectory { directory in
            let store = try self.store(directory, capacity: 1 << 20, maxEntrySize: 100_000)
            #expect(await store.makeWriter(for: Self.entry("big", size: 100_001)) == nil, "declared larger than the limit")
            // Declared small, written large: the write past the limit throws.
            let writer = try #require(await store.makeWriter(for: Self.entry("liar", size: 10)))
            try await writer.write([UInt8](repeating: 1, count: 60_000))
            await #expect(throws: DiskCacheError.self) { try await writer.write([UInt8](repeating: 1, count: 60_000)) }
            await #expect(throws: DiskCacheError.self) { try await writer.commit(replacing: []) }
            let aborted = try #require(await store.makeWriter(for: Self.entry("aborted", size: 10)))
            try await aborted.write([1, 2, 3])
            await aborted.abort()
            await #expect(throws: DiskCacheError.self) { try await aborted.commit(replacing: []) }
            // Dropped without commit or abort.
            do {
                let dropped = try #require(await store.makeWriter(for: Self.entry("dropped", size: 10)))
                try await dropped.write([1, 2, 3])
            }
            #expect(await store.entries(for: Self.key).isEmpty)
            #expect(Self.files(directory, suffix: ".partial").isEmpty)
            #expect(Self.files(directory, suffix: ".entry").isEmpty)
        }
    }

    // MARK: - Damage

    enum Damage: CaseIterable {
        case truncated, bodyByte, metadataByte, magic, version, length, empty
        /// Checksums right, contents wrong: what no flipped bit makes, only a bug or a hand.
        case undecodableMetadata, impossibleLengths, sizeDisagrees
    }

    /// A well-formed file of `body` and `metadata`, checksums and all.
    static func entryFile(body: [UInt8], metadata: [UInt8], bodyLength: UInt64? = nil) -> [UInt8] {
        let header = EntryHeader(bodyLength: bodyLength ?? UInt64(body.count), metadataLength: UInt32(metadata.count),
                                 metadataCRC: CRC32.of(metadata), bodyCRC: CRC32.of(body), storedAt: 1)
        return header.encoded() + body + metadata
    }

    @Test(arguments: Damage.allCases)
    func aDamagedEntryIsNeverServedAndIsRemoved(_ damage: Damage) async throws {
        try await self.withDirectory { directory in
            let store = try self.store(directory)
            let entry = Self.entry("victim", size: 300_000)
            try await Self.put(store, entry)
            let path = store.path(key: entry.key, id: entry.id)
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            switch damage {
            case .truncated: bytes.removeLast(1000)
            case .length: bytes.append(0)
            case .bodyByte: bytes[EntryFormat.headerSize + 123_456] ^= 0x01
            case .metadataByte: bytes[bytes.count - 20] ^= 0x20
            case .magic: bytes[0] = UInt8(ascii: "X")
            case .empty: bytes = []
            case .undecodableMetadata:
                bytes = Self.entryFile(body: Self.pattern(id: entry.id, count: entry.bodySize), metadata: Array("{\"id\": 1}".utf8))
            case .impossibleLengths:
                bytes = Self.entryFile(body: [], metadata: [], bodyLength: UInt64.max - 3)
            case .sizeDisagrees:
                var other = entry
                other.bodySize = 5
                bytes = Self.entryFile(body: Self.pattern(id: entry.id, count: entry.bodySize),
                                       metadata: try Array(JSONEncoder().encode(other)))
            case .version:
                // A well-formed header of an older version: its own checksum is right.
                bytes[8] = 0
                let crc = CRC32.of(bytes[0..<48])
                for i in 0..<4 { bytes[48 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            if damage == .bodyByte {
                // Only the body is wrong: it is found out as it streams, before its end.
                #expect(await store.entries(for: Self.key).map(\.id) == ["victim"])
                let body = try #require(await store.body(of: entry))
                do {
                    _ = try await body.collect(upTo: 1 << 30)
                    Issue.record("a body that fails its checksum was read to a clean end")
                } catch let error as TransportError {
                    #expect(error.code == .readFailed)
                    #expect("\(error)".contains("checksum"))
                } catch {
                    Issue.record("not a TransportError: \(error)")
                }
            } else {
                #expect(await store.entries(for: Self.key).isEmpty)
                #expect(await store.body(of: entry) == nil)
            }
            #expect(!FileManager.default.fileExists(atPath: path), "damaged: removed")
            #expect(await store.entries(for: Self.key).isEmpty)
            // The key can be stored again.
            let body = try await Self.put(store, entry)
            #expect(try await Self.read(store, entry) == body)
        }
    }

    /// An invalidation by another process (here another store on the same directory) wins over
    /// a writer already under way: what it commits afterwards is taken back, whole; a writer
    /// begun after the invalidation keeps its entry. Also for the whole store.
    @Test func anInvalidationElsewhereTakesBackAWriterUnderWay() async throws {
        try await self.withDirectory { directory in
            let one = try self.store(directory)
            let other = try self.store(directory)
            for everything in [false, true] {
                let entry = Self.entry(everything ? "all" : "key", size: 50_000)
                let writer = try #require(await one.makeWriter(for: entry))
                try await writer.write(Self.pattern(id: entry.id, count: entry.bodySize))
                if everything { await other.removeAll() } else { await other.removeAll(key: entry.key) }
                await #expect(throws: (any Error).self) { try await writer.commit(replacing: []) }
                #expect(await one.entries(for: entry.key).isEmpty)
                #expect(await other.entries(for: entry.key).isEmpty)
                #expect(Self.files(directory, suffix: ".entry").isEmpty && Self.files(directory, suffix: ".partial").isEmpty)
                // A writer begun after the invalidation keeps its entry, at once.
                try await Self.put(one, entry)
                #expect(await other.entries(for: entry.key).map(\.id) == [entry.id])
            }
        }
    }

    /// A newer program's entry, in the same directory during an upgrade, is not served and
    /// not removed.
    @Test func aNewerFormatIsLeftAlone() async throws {
        try await self.withDirectory { directory in
            let store = try self.store(directory)
            let entry = Self.entry("newer", size: 1000)
            try await Self.put(store, entry)
            let path = store.path(key: entry.key, id: entry.id)
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            bytes[8] = 2
            let crc = CRC32.of(bytes[0..<48])
            for i in 0..<4 { bytes[48 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(await store.entries(for: Self.key).isEmpty)
            #expect(await store.body(of: entry) == nil)
            #expect(FileManager.default.fileExists(atPath: path))
        }
    }

    @Test func anotherKeysFileUnderThisKeysNameIsAMiss() async throws {
        try await self.withDirectory { directory in
            let store = try self.store(directory)
            let theirs = Self.entry("same-id", key: "GET https://example.com/theirs", size: 5000)
            try await Self.put(store, theirs)
            // What a hash collision would do: their file where ours would be.
            let ours = Self.entry("same-id", key: "GET https://example.com/ours", size: 5000)
            let oursPath = store.path(key: ours.key, id: ours.id)
            try FileManager.default.createDirectory(atPath: (oursPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: store.path(key: theirs.key, id: theirs.id), toPath: oursPath)
            #expect(await store.entries(for: ours.key).isEmpty)
            #expect(await store.body(of: ours) == nil)
            await store.remove(id: ours.id, key: ours.key)
            await store.removeAll(key: ours.key)
            #expect(FileManager.default.fileExists(atPath: oursPath), "a valid entry of another key is not removed")
            #expect(await store.entries(for: theirs.key) == [theirs])
        }
    }

    @Test func aSweepRemovesOnlyStaleTemporaryFiles() async throws {
        try await self.withDirectory { directory in
            let store = try self.store(directory)
            try await Self.put(store, Self.entry("e", size: 10))
            let keyDirectory = directory + "/" + EntryNames.keyDirectory(Self.key)
            let stale = keyDirectory + "/1-2.partial"
            let fresh = keyDirectory + "/1-3.partial"
            _ = FileManager.default.createFile(atPath: stale, contents: Data(repeating: 0, count: 100))
            _ = FileManager.default.createFile(atPath: fresh, contents: Data(repeating: 0, count: 100))
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-120)], ofItemAtPath: stale)
            let result = try #require(await store.sweep())
            #expect(result.temporariesRemoved == 1)
            #expect(!FileManager.default.fileExists(atPath: stale))
            #expect(FileManager.default.fileExists(atPath: fresh), "perhaps a live writer's")
            #expect(await store.entries(for: Self.key).map(\.id) == ["e"])
        }
    }

    @Test func manyTasksAndTwoStoresOnOneDirectory() async throws {
        try await self.withDirectory { directory in
            let stores = [try self.store(directory, capacity: 2 << 20), try self.store(directory, capacity: 2 << 20)]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    group.addTask {
                        let store = stores[task % 2]
                        for round in 0..<25 {
                            let key = "GET https://example.com/shared/\(round % 3)"
                            let entry = Self.entry("t\(task)-\(round)", key: key, size: (task * 37_000 + round * 11_000) % 200_000)
                            try await Self.put(store, entry, chunk: 16_384, replacing: round % 4 == 0 ? ["t\(task)-\(round - 1)"] : [])
                            for found in await store.entries(for: key) {
                                guard let body = try await Self.read(store, found) else { continue }
                                #expect(body == Self.pattern(id: found.id, count: found.bodySize), "\(found.id)")
                                #expect(found.head.headerFields[HTTPField.Name("x-entry-id")!] == found.id)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            await stores[0].sweep()
            let total = Self.files(directory, suffix: ".entry").reduce(0) { sum, path in
                sum + ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
            }
            #expect(total <= 2 << 20)
        }
    }

    @Test func openingAStoreSweepsDeadWritersFilesInTheBackground() async throws {
        try await self.withDirectory { directory in
            try await Self.put(try self.store(directory), Self.entry("e", size: 10))
            let stale = directory + "/" + EntryNames.keyDirectory(Self.key) + "/99-1.partial"
            _ = FileManager.default.createFile(atPath: stale, contents: Data(repeating: 0, count: 100))
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-120)], ofItemAtPath: stale)
            let store = try DiskCacheStore(directory: directory, capacity: 1 << 20)
            var waited = 0
            while FileManager.default.fileExists(atPath: stale) && waited < 500 {
                try await Task.sleep(for: .milliseconds(10))
                waited += 1
            }
            #expect(!FileManager.default.fileExists(atPath: stale))
            #expect(await store.entries(for: Self.key).map(\.id) == ["e"])
        }
    }

    @Test func aFailingDiskFailsTheWriterCleanly() async throws {
        try await self.withDirectory { directory in
            let run = try await runChild(Self.childPath, ["full", directory, "200000"], timeLimit: 60)
            #expect(!run.signaled && run.status == 0, "\(run.errors)")
            #expect(run.output.contains("RESULT failed errno=\(EFBIG) visible=0"), "\(run.output)")
            #expect(Self.files(directory, suffix: ".partial").isEmpty, "the failed writer's file is removed")
            #expect(Self.files(directory, suffix: ".entry").isEmpty)
        }
    }

    // MARK: - Crashes and other processes

    @Test func aWriterKilledMidStoreLeavesNoEntry() async throws {
        try await self.withDirectory { directory in
            let key = "GET https://example.com/large"
            let child = try ChildProcess(name: "cache-store-child", executable: URL(fileURLWithPath: Self.childPath),
                                         arguments: ["slow", directory, key, "big", "160"])
            let announced = try await offThePool { try child.readAnnouncements(["MIDWRITE"], timeout: 60) }
            #expect(Int(announced["MIDWRITE"] ?? "") ?? 0 > 0)
            kill(child.pid, SIGKILL)
            #expect(try await offThePool { child.waitForExit(timeout: 10) })
            #expect(Self.files(directory, suffix: ".partial").count == 1, "killed mid-write: a temporary file is left")
            #expect(Self.files(directory, suffix: ".entry").isEmpty)

            let store = try self.store(directory)
            #expect(await store.entries(for: key).isEmpty)
            let entry = Self.entry("big", key: key, size: 160 * 65536)
            #expect(await store.body(of: entry) == nil)
            // Once old enough, the dead writer's file is swept away.
            let impatient = try DiskCacheStore(directory: directory, capacity: 64 << 20, maxEntrySize: 64 << 20,
                                               temporaryAge: 0, sweepAtOpen: false)
            let swept = try #require(await impatient.sweep())
            #expect(swept.temporariesRemoved == 1)
            #expect(Self.files(directory, suffix: ".partial").isEmpty)
            let small = Self.entry("small", key: key, size: 1000)
            let body = try await Self.put(store, small)
            #expect(try await Self.read(store, small) == body)
        }
    }

    @Test func twoProcessesAndThisOneShareADirectory() async throws {
        try await self.withDirectory { directory in
            let capacity = 1024 * 1024   // small: entries are evicted under the readers
            async let first = runChild(Self.childPath, ["hammer", directory, "120", "p1", String(capacity)], timeLimit: 240)
            async let second = runChild(Self.childPath, ["hammer", directory, "120", "p2", String(capacity)], timeLimit: 240)
            // Meanwhile this process reads (and removes now and then) what they store.
            let store = try self.store(directory, capacity: capacity)
            var reads = 0
            for round in 0..<200 {
                for item in 0..<4 {
                    for entry in await store.entries(for: "GET https://example.com/item/\(item)") {
                        #expect(entry.head.headerFields[HTTPField.Name("x-entry-id")!] == entry.id)
                        guard let body = try await Self.read(store, entry) else { continue }
                        #expect(body == Self.pattern(id: entry.id, count: entry.bodySize), "\(entry.id)")
                        reads += 1
                    }
                }
                if round % 50 == 49 { await store.removeAll(key: "GET https://example.com/item/0") }
                try await Task.sleep(for: .milliseconds(5))
            }
            let runs = try await [first, second]
            for run in runs {
                #expect(!run.signaled && run.status == 0, "\(run.errors)")
                #expect(run.output.contains("RESULT ok"), "\(run.output)")
            }
            #expect(reads > 0)
        }
    }
}
