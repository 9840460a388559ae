import SalvoTransport

/// A host pool's HTTP/2 connections: served beside ``PoolStateMachine`` (which counts
/// connections that carry one request), each keeping its place in the host's budget. Requests
/// go to a connection with a stream to spare; while the host may speak HTTP/2 one connection at
/// a time opens host-wide (the probe); a connection that negotiated `h2` takes over its
/// socket from the ``HTTP1Connection`` that opened it. Loop-confined, as ``HostPool`` is.
extension HostPool {
    /// The HTTP/2 connection with the fewest streams that can take one more, if any.
    func multiplexedWithRoom() -> HTTP2Connection? {
        var best: HTTP2Connection? = nil
        for connection in self.multiplexed.values where connection.hasRoom {
            if best.map({ connection.streams.count < $0.streams.count }) ?? true { best = connection }
        }
        return best
    }

    func startStream(_ owner: RequestOwner, on connection: HTTP2Connection) {
        owner.wait.queuedAt = Deadline(nanoseconds: 0)
        if connection.streamsStarted > 0 {
            self.counters.reused += 1
            self.observer?.connectionReused()
        }
        if !connection.streams.isEmpty { self.counters.multiplexed += 1 }
        connection.run(owner)
    }

    /// Waiting requests go to the HTTP/2 connections' free streams; if some still wait, and
    /// the machine has room, another connection is started for them.
    func serveWaitersOnMultiplexed() {
        while !self.machine.waiters.isEmpty, let connection = self.multiplexedWithRoom(),
              let id = self.machine.removeOldestWaiter() {
            guard let owner = self.waiters.removeValue(forKey: id) else { continue }
            self.startStream(owner, on: connection)
        }
        if self.machine.waiters.count > self.machine.connecting {
            self.run(self.machine.capacityAvailable())
        }
        self.publish()
    }


    /// `connection` is open or gone: if it was the probe, the version is known (or the probe
    /// failed), and the shards that held back may connect, or send their requests to it.
    func probeEnded(_ connection: HTTP1Connection, failed: Bool = false) {
        guard self.probe == connection.id else { return }
        self.probe = nil
        guard !self.probeIsLocal else { return }
        self.budget.endProbe(failed: failed)
        if self.shared { self.coordinator.announceCapacity(self.key, budget: self.budget, from: self.shard) }
    }

    /// Whether connections to this host may turn out HTTP/2 (TLS offering h2, or cleartext
    /// with prior knowledge) and no connection has yet shown it speaks only HTTP/1.1.
    var mayMultiplex: Bool {
        guard self.key.httpVersion != .http1Only, !self.budget.speaksOnlyHTTP1 else { return false }
        return self.key.scheme == .https || self.key.httpVersion.cleartextHTTP2
    }

    /// A connection came up speaking HTTP/2: an ``HTTP2Connection`` carries on with its socket
    /// (and its place in the budget), and the waiting requests go to its streams.
    func multiplex(_ opened: HTTP1Connection) {
        let (socket, setup) = opened.handOver()
        let configuration = self.owner.configuration
        let connection: HTTP2Connection
        do throws(TransportError) {
            connection = try HTTP2Connection(
                id: opened.id, key: self.key, loop: self.owner.loop, pool: self, socket: socket, endpoints: opened.endpoints,
                setup: setup, reportedOpen: opened.reportedOpen, settings: configuration.http2, idleTimeout: configuration.idleTimeout)
            try connection.start()
        } catch {
            var socket = socket
            socket.close(on: self.owner.loop)
            self.connectionFailed(opened, error: error)
            return
        }
        self.machine.connectedElsewhere()
        self.connections[opened.id] = nil
        self.multiplexed[opened.id] = connection
        self.budget.speaksHTTP2 = true
        self.serveWaitersOnMultiplexed()
        // After this shard published its connection's room: the others send their requests here.
        self.probeEnded(opened)
    }

    /// A stream of `connection` ended (or its server allowed more): waiting requests may take its place.
    func streamEnded(on connection: HTTP2Connection) {
        guard self.multiplexed[connection.id] === connection else { return }
        if !self.machine.waiters.isEmpty {
            self.serveWaitersOnMultiplexed()
        } else {
            self.publish()
        }
    }

    /// The server of `connection` sent GOAWAY: no new stream goes there; requests waiting may
    /// need another connection.
    func connectionGoingAway(_ connection: HTTP2Connection) {
        guard self.multiplexed[connection.id] === connection else { return }
        self.serveWaitersOnMultiplexed()
    }

    /// An HTTP/2 connection closed: its place in the budget goes back.
    func connectionClosed(_ connection: HTTP2Connection) {
        guard self.multiplexed.removeValue(forKey: connection.id) != nil else { return }
        self.budget.release()
        if connection.closedByPeer { self.counters.closedByServer += 1 } else { self.counters.closedByUs += 1 }
        if connection.reportedOpen { self.observer?.connectionClosed(id: connection.id, byServer: connection.closedByPeer) }
        if self.machine.waiters.count > self.machine.connecting {
            self.run(self.machine.capacityAvailable())
        }
        self.announceIfRoomLeft()
        self.publish()
        self.dropIfEmpty()
    }
}
