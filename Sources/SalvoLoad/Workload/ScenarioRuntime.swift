import HTTPTypes
import SalvoTransport

/// A scenario as a loop's users run it: its checks numbered for the tally and compiled to
/// plain data, the fields its responses must have recorded, and its code over the user's
/// state by address — nothing generic is looked up, copied or counted per call.
final class ScenarioRuntime {
    let index: Int
    let name: String
    let weight: Int
    let method: HTTPRequest.Method
    let path: String?
    /// Its checks, each with its number in the tally (in memory of their own: no array to
    /// count or check per response).
    let checks: UnsafeMutableBufferPointer<CompiledCheck>
    let thinkTime: ThinkTime
    /// Whether its responses' bodies are kept: asked for, or a check reads them.
    let keepsBody: Bool
    /// The fields its checks and its hook read.
    let fields: FieldSelection
    let build: (UnsafeMutableRawPointer, inout ScriptedRequest) throws -> Void
    let respond: ((UnsafeMutableRawPointer, borrowing ScriptedResponse) throws -> Void)?
    private let customTests: [@Sendable (borrowing ScriptedResponse) -> Bool]
    /// The bytes the compiled checks and the field selection point into.
    private let pinned: PinnedBytes

    init<User>(_ scenario: Scenario<User>, index: Int, checkNumbers: [Int]) {
        self.index = index
        self.name = scenario.name
        self.weight = scenario.weight
        self.method = scenario.method
        self.path = scenario.path
        self.thinkTime = scenario.thinkTime
        self.keepsBody = scenario.keepsBody || scenario.checks.contains { $0.readsBody }
        let pinned = PinnedBytes()
        var customTests: [@Sendable (borrowing ScriptedResponse) -> Bool] = []
        let checks = UnsafeMutableBufferPointer<CompiledCheck>.allocate(capacity: scenario.checks.count)
        for (index, check) in scenario.checks.enumerated() {
            checks.initializeElement(at: index, to: CompiledCheck(check, number: checkNumbers[index], pinned: pinned, customTests: &customTests))
        }
        self.checks = checks
        self.customTests = customTests
        var readers = scenario.checks.map { FieldSelection.Reader(names: $0.readsFields, firstValuesOnly: $0.readsFirstValuesOnly) }
        if scenario.respond != nil { readers.append(FieldSelection.Reader(names: scenario.readsFields, firstValuesOnly: false)) }
        self.fields = FieldSelection(readers, pinned: pinned)
        self.pinned = pinned
        let build = scenario.build
        self.build = { user, request in try build(&user.assumingMemoryBound(to: User.self).pointee, &request) }
        self.respond = scenario.respond.map { respond in
            { user, response in try respond(&user.assumingMemoryBound(to: User.self).pointee, response) }
        }
    }

    deinit {
        self.checks.deinitialize()
        self.checks.deallocate()
    }

    /// Whether `response` passes `check`, one of this scenario's.
    @inline(__always)
    func passes(_ check: CompiledCheck, _ response: borrowing ScriptedResponse) -> Bool {
        if check.readsBody && !response.isBodyKept { return false }
        switch check.test {
        case .status(let codes):
            return codes.contains(response.statusCode)
        case .present(let name):
            return response.firstValue(lowercased: name, passes: .any)
        case .equals(let name, let expected):
            return response.firstValue(lowercased: name, passes: .equals(expected))
        case .contains(let name, let text):
            return response.firstValue(lowercased: name, passes: .contains(text))
        case .bodyContains(let text):
            return response.body.containsBytes(text)
        case .custom(let number):
            return self.customTests[number](response)
        }
    }
}

/// A ``Check`` as its scenario's runtime tests it: the usual ones over bytes the runtime
/// keeps at a fixed address (nothing to count when one is read), the caller's own by number.
struct CompiledCheck {
    enum Test {
        case status(ClosedRange<Int>)
        case present(UnsafeRawBufferPointer)
        case equals(UnsafeRawBufferPointer, UnsafeRawBufferPointer)
        case contains(UnsafeRawBufferPointer, UnsafeRawBufferPointer)
        case bodyContains(UnsafeRawBufferPointer)
        case custom(Int)
    }

    let test: Test
    let readsBody: Bool
    /// Its number in the tally (checks of one name, in any scenario, share one).
    let number: Int

    init(_ check: Check, number: Int, pinned: PinnedBytes, customTests: inout [@Sendable (borrowing ScriptedResponse) -> Bool]) {
        self.readsBody = check.readsBody
        self.number = number
        switch check.kind {
        case .status(let codes): self.test = .status(codes)
        case .present(let name): self.test = .present(pinned.keep(name))
        case .equals(let name, let value): self.test = .equals(pinned.keep(name), pinned.keep(value))
        case .contains(let name, let text): self.test = .contains(pinned.keep(name), pinned.keep(text))
        case .bodyContains(let text): self.test = .bodyContains(pinned.keep(text))
        case .custom(let test):
            self.test = .custom(customTests.count)
            customTests.append(test)
        }
    }
}

/// Which fields of a response a scenario's checks and hook read: the run records only those.
enum FieldSelection {
    case none
    /// By their lowercase names. When only their first values are read (the usual checks
    /// read nothing else), a head's walk ends once each name has come.
    case named(UnsafeBufferPointer<UnsafeRawBufferPointer>, firstValuesOnly: Bool)
    case all

    /// What one check or hook reads: the fields it names, or any (nil).
    struct Reader {
        let names: [HTTPField.Name]?
        let firstValuesOnly: Bool
    }

    init(_ readers: [Reader], pinned: PinnedBytes) {
        var names: [String] = []
        var firstValuesOnly = true
        for reader in readers {
            guard let read = reader.names else {
                self = .all
                return
            }
            for name in read where !names.contains(name.canonicalName) { names.append(name.canonicalName) }
            if !read.isEmpty && !reader.firstValuesOnly { firstValuesOnly = false }
        }
        guard !names.isEmpty else {
            self = .none
            return
        }
        // The walk notes the names it has seen in one word.
        self = .named(pinned.keep(names.map { pinned.keep(Array($0.utf8)) }), firstValuesOnly: firstValuesOnly && names.count <= 64)
    }

    /// Whether a field named `name` (as sent) is to be recorded.
    func wants(_ name: UnsafeRawBufferPointer) -> Bool {
        switch self {
        case .none: return false
        case .all: return true
        case .named(let names, _): return Self.index(of: name, in: names) != nil
        }
    }

    @inline(__always)
    static func index(of name: UnsafeRawBufferPointer, in names: UnsafeBufferPointer<UnsafeRawBufferPointer>) -> Int? {
        for index in names.indices where FieldRecords.matches(name, lowercased: names[index]) { return index }
        return nil
    }
}

/// Bytes kept at a fixed address for as long as their owner lives.
final class PinnedBytes {
    private var blocks: [UnsafeMutableRawBufferPointer] = []

    deinit { for block in self.blocks { block.deallocate() } }

    func keep(_ bytes: [UInt8]) -> UnsafeRawBufferPointer {
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 8)
        block.copyBytes(from: bytes)
        self.blocks.append(block)
        return UnsafeRawBufferPointer(rebasing: block[..<bytes.count])
    }

    func keep(_ buffers: [UnsafeRawBufferPointer]) -> UnsafeBufferPointer<UnsafeRawBufferPointer> {
        let block = UnsafeMutableRawBufferPointer.allocate(
            byteCount: max(1, buffers.count) * MemoryLayout<UnsafeRawBufferPointer>.stride,
            alignment: MemoryLayout<UnsafeRawBufferPointer>.alignment)
        self.blocks.append(block)
        let typed = block.bindMemory(to: UnsafeRawBufferPointer.self)
        _ = typed.initialize(from: buffers)
        return UnsafeBufferPointer(rebasing: typed[..<buffers.count])
    }
}

/// A user's state where its scenarios reach it by address, made and destroyed with the type
/// it was made with.
struct UserStorage {
    let address: UnsafeMutableRawPointer
    let destroy: (UnsafeMutableRawPointer) -> Void

    init<User>(_ user: User) {
        let typed = UnsafeMutablePointer<User>.allocate(capacity: 1)
        typed.initialize(to: user)
        self.address = UnsafeMutableRawPointer(typed)
        self.destroy = { address in
            let typed = address.assumingMemoryBound(to: User.self)
            typed.deinitialize(count: 1)
            typed.deallocate()
        }
    }
}
