import SalvoTransport

/// Between shards: requests waiting for this host on this loop, sent to the loop that has a
/// connection for them, and the host's shared budget telling this pool it has room again.
extension HostPool {
    /// Another shard has an idle connection for this host: the oldest request waiting here
    /// goes there, unless this shard has an idle one by now.
    func sendWaiter(to shard: Int) {
        guard !self.detached, self.machine.idle.isEmpty else { return }
        self.moveOldestWaiter(to: shard, urgent: true)
        self.dropIfEmpty()
    }

    /// Sends the oldest waiter to `shard`: `urgent` to be served first there (an idle
    /// connection waits for it), else to queue behind what waits there.
    func moveOldestWaiter(to shard: Int, urgent: Bool) {
        guard let id = self.machine.removeOldestWaiter(), let waiter = self.waiters.removeValue(forKey: id) else { return }
        self.publish()
        self.coordinator.move(waiter, from: self.owner, to: shard, urgent: urgent)
    }

    /// The host's budget has room again.
    func capacityAvailable() {
        guard !self.detached else { return }
        self.run(self.machine.capacityAvailable())
        self.publish()
    }
}
