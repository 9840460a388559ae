import Synchronization

/// Collapsed misses: the first request for a key that nothing stored answers goes to the
/// origin (the leader); others for the same key at the same time wait for it to end, then
/// look in the store again — and go to the origin themselves when what it stored does not
/// answer them (another variant, or nothing storable).
///
/// A waiter that is cancelled, or whose call's deadline passes, stops waiting at once; the
/// leader always ends its flight (`land`), whether it stored, failed or threw.
final class CacheFlights: Sendable {
    enum Role {
        case leader
        case follower
    }

    private struct Flight {
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private struct State {
        var flights: [String: Flight] = [:]
        var tickets: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Leads the flight for `key`, or waits for the one under way (until `deadline` at
    /// most) and then follows.
    func board(_ key: String, until deadline: ContinuousClock.Instant? = nil) async -> Role {
        enum Seat { case lead, wait(UInt64) }
        let seat: Seat = self.state.withLock { state in
            guard state.flights[key] != nil else {
                state.flights[key] = Flight()
                return .lead
            }
            state.tickets += 1
            return .wait(state.tickets)
        }
        guard case .wait(let ticket) = seat else { return .leader }
        // The call's deadline ends the wait as a cancellation would: the follower then finds
        // what is stored, or goes on itself (and meets its deadline there).
        let timer = deadline.map { deadline in
            Task {
                try? await Task.sleep(until: deadline, clock: .continuous)
                self.state.withLock { $0.flights[key]?.waiters.removeValue(forKey: ticket) }?.resume()
            }
        }
        defer { timer?.cancel(); threadSanitizerSawResume() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = self.state.withLock { state -> Bool in
                    guard state.flights[key] != nil, !Task.isCancelled,
                          deadline.map({ ContinuousClock.now < $0 }) ?? true else { return false }
                    state.flights[key]!.waiters[ticket] = continuation
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            let continuation = self.state.withLock { $0.flights[key]?.waiters.removeValue(forKey: ticket) }
            continuation?.resume()
        }
        return .follower
    }

    /// Ends the flight for `key`: every waiter looks again.
    func land(_ key: String) {
        let waiters = self.state.withLock { state in
            state.flights.removeValue(forKey: key)?.waiters.values.map { $0 } ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Flights under way (for tests).
    var count: Int { self.state.withLock { $0.flights.count } }
    /// Requests waiting for a flight (for tests).
    var waiting: Int { self.state.withLock { $0.flights.values.reduce(0) { $0 + $1.waiters.count } } }
}
