/// The one loop timer an object keeps for its earliest deadline. A connection's or a pool's
/// deadlines move at every event; timers are never cancelled, so rather than a heap entry per
/// change one timer stays armed: a later deadline leaves it as it is (when it fires, its owner
/// looks at what is due and arms for the rest), an earlier one arms another, and the entry
/// left behind is stale — its token no longer current — until the heap is compacted. An object
/// keeps one or two heap entries, not one per request.
///
/// Loop-confined, as its owner is.
struct ArmedTimer {
    private var armed: Deadline?

    /// Arms a timer on `loop` for `deadline` unless one is armed at or before it.
    mutating func arm(at deadline: Deadline, on loop: EventLoop, for target: any TimerTarget) {
        guard deadline != .distantFuture else { return }
        if let armed = self.armed, armed <= deadline { return }
        self.armed = deadline
        loop.scheduleTimer(at: deadline, target: target, token: deadline.nanoseconds)
    }

    /// Whether the timer with `token` is the armed one.
    func isCurrent(_ token: UInt64) -> Bool {
        self.armed?.nanoseconds == token
    }

    /// A timer fired: true if it was the armed one, which is then spent (its owner arms again
    /// for whatever is still to come); false for a stale one.
    mutating func fired(_ token: UInt64) -> Bool {
        guard self.isCurrent(token) else { return false }
        self.armed = nil
        return true
    }

    /// Forgets the armed timer (its owner closed): the entry goes stale.
    mutating func disarm() {
        self.armed = nil
    }
}
