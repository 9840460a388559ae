import Synchronization

/// Values a cache read once and keeps, each with the stamp of what it was read from: a value
/// is given back only while the stamp still matches (a head replaced, a file rewritten, a
/// directory changed each give a new stamp). Bounded in keys and in weight held (a listing
/// weighs its entries): past either it starts over.
final class StampedMemo<Key: Hashable & Sendable, Stamp: Equatable & Sendable, Value: Sendable>: Sendable {
    private struct Kept: Sendable {
        var stamp: Stamp
        var value: Value
        var weight: Int
    }

    private struct State: Sendable {
        var kept: [Key: Kept] = [:]
        var weight = 0
    }

    private let state = Mutex(State())
    private let limit: Int

    /// At most `limit` keys, and a weight of at most four times that.
    init(limit: Int = 4096) {
        self.limit = limit
    }

    /// What was kept for `key` from something stamped `stamp`; nil when nothing was, or
    /// from something else.
    func value(_ key: Key, _ stamp: Stamp) -> Value? {
        self.state.withLock { $0.kept[key] }.flatMap { $0.stamp == stamp ? $0.value : nil }
    }

    func keep(_ value: Value, _ key: Key, _ stamp: Stamp, weight: Int = 1) {
        self.state.withLock { state in
            if state.kept.count >= self.limit || state.weight + weight > 4 * self.limit { state = State() }
            state.weight += weight - (state.kept[key]?.weight ?? 0)
            state.kept[key] = Kept(stamp: stamp, value: value, weight: weight)
        }
    }

    func forget(_ key: Key) {
        self.state.withLock { state in
            if let old = state.kept.removeValue(forKey: key) { state.weight -= old.weight }
        }
    }
}
