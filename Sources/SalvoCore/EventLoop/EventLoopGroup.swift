import SalvoTransport
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A fixed set of ``EventLoop``s, one thread each.
///
/// The default size is one loop per core. Connections are spread over the loops; a request
/// made on a loop's own thread stays on that loop.
public final class EventLoopGroup: Sendable {
    /// The loops, in order.
    public let loops: [EventLoop]
    private let nextIndex = Atomic<Int>(0)
    private let isShutdown = Atomic<Bool>(false)

    /// Starts `numberOfThreads` loops (default: the number of online cores).
    public init(numberOfThreads: Int = EventLoopGroup.coreCount, name: String = "salvo") throws {
        guard numberOfThreads > 0 else {
            throw TransportError(.invalidConfiguration, detail: "an EventLoopGroup needs at least one loop")
        }
        var loops: [EventLoop] = []
        do {
            for i in 0..<numberOfThreads {
                let loop = try EventLoop(index: i)
                try loop.start(name: "\(name)-\(i)")
                loops.append(loop)
            }
        } catch {
            for loop in loops { loop.stopAndJoin() }
            throw TransportError(.shutdown, detail: "could not start event loops: \(error)")
        }
        self.loops = loops
    }

    /// Online cores, at least 1.
    public static var coreCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }

    /// The caller's loop when called on one of ours, else the next in round-robin order.
    public func next() -> EventLoop {
        if let current = EventLoop.current, current.index < self.loops.count, self.loops[current.index] === current {
            return current
        }
        let i = self.nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
        return self.loops[i % self.loops.count]
    }

    /// Stops every loop after the work already queued on it, and joins the threads.
    /// Idempotent. Called on one of the group's own loops, it cannot wait for that loop, so
    /// the joining then happens in the background after this returns.
    public func shutdown() {
        guard !self.isShutdown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let loops = self.loops
        if loops.contains(where: { $0.inEventLoop }) {
            DispatchQueue.global().async { for loop in loops { loop.stopAndJoin() } }
        } else {
            for loop in loops { loop.stopAndJoin() }
        }
    }
}
