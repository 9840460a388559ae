import SalvoTransport
/// Something a loop can wake at a deadline. The token lets the target tell a current timer
/// from a stale one (a request that already finished), so timers never need cancelling.
package protocol TimerTarget: AnyObject {
    func timerFired(token: UInt64, now: Deadline)
    /// Whether a timer with this token still matters. Stale entries are dropped when the heap
    /// is compacted, so a closed connection does not stay in memory until its old deadline.
    func timerIsCurrent(token: UInt64) -> Bool
}

extension TimerTarget {
    package func timerIsCurrent(token: UInt64) -> Bool { true }
}

/// A binary min-heap of timers, ordered by deadline then by insertion. Loop-confined.
struct TimerHeap {
    struct Entry {
        var deadline: Deadline
        var sequence: UInt64
        var target: any TimerTarget
        var token: UInt64

        @inline(__always)
        func precedes(_ other: Entry) -> Bool {
            self.deadline != other.deadline ? self.deadline < other.deadline : self.sequence < other.sequence
        }
    }

    private var storage: [Entry] = []
    private var nextSequence: UInt64 = 0

    var isEmpty: Bool { self.storage.isEmpty }
    var count: Int { self.storage.count }
    var earliest: Deadline? { self.storage.first?.deadline }

    mutating func insert(deadline: Deadline, target: any TimerTarget, token: UInt64) {
        self.nextSequence &+= 1
        self.storage.append(Entry(deadline: deadline, sequence: self.nextSequence, target: target, token: token))
        var child = self.storage.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard self.storage[child].precedes(self.storage[parent]) else { break }
            self.storage.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    mutating func popDue(now: Deadline) -> Entry? {
        guard let first = self.storage.first, first.deadline <= now else { return nil }
        let last = self.storage.removeLast()
        if self.storage.isEmpty { return first }
        self.storage[0] = last
        var parent = 0
        let count = self.storage.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            var smallest = left
            let right = left + 1
            if right < count && self.storage[right].precedes(self.storage[left]) { smallest = right }
            guard self.storage[smallest].precedes(self.storage[parent]) else { break }
            self.storage.swapAt(smallest, parent)
            parent = smallest
        }
        return first
    }

    mutating func removeAll() { self.storage.removeAll() }

    /// Drops the entries whose targets no longer care, and rebuilds the heap (O(n)).
    mutating func removeStale() {
        self.storage.removeAll { !$0.target.timerIsCurrent(token: $0.token) }
        guard self.storage.count > 1 else { return }
        for start in stride(from: self.storage.count / 2 - 1, through: 0, by: -1) {
            var parent = start
            let count = self.storage.count
            while true {
                let left = 2 * parent + 1
                guard left < count else { break }
                var smallest = left
                if left + 1 < count && self.storage[left + 1].precedes(self.storage[left]) { smallest = left + 1 }
                guard self.storage[smallest].precedes(self.storage[parent]) else { break }
                self.storage.swapAt(smallest, parent)
                parent = smallest
            }
        }
    }
}
