import Foundation
import Synchronization
import Testing
@testable import SalvoCore

@Suite struct EventLoopTests {
    @Test func executeRunsOnTheLoopInOrder() async throws {
        let group = try EventLoopGroup(numberOfThreads: 2)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let seen = Mutex<[Int]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for i in 0..<1000 {
                loop.execute {
                    precondition(loop.inEventLoop)
                    seen.withLock { $0.append(i) }
                    if i == 999 { done.resume() }
                }
            }
        }
        #expect(seen.withLock { $0 } == Array(0..<1000))
        #expect(!loop.inEventLoop)
        #expect(EventLoop.current == nil)
    }

    /// Work deferred to the end of a turn runs after the work that deferred it, in order,
    /// without waiting for another event; deferred once the loop stopped, it runs at once.
    @Test func endOfTurnWorkRunsOnceTheTurnIsOver() async throws {
        final class Log: Sendable {
            let lines = Mutex<[String]>([])
            func append(_ line: String) { self.lines.withLock { $0.append(line) } }
            var all: [String] { self.lines.withLock { $0 } }
        }
        final class Recorder: EndOfTurnWork, Sendable {
            let name: String
            let log: Log
            init(_ name: String, _ log: Log) { self.name = name; self.log = log }
            func endOfTurn() { self.log.append("end " + self.name) }
        }
        let log = Log()
        let group = try EventLoopGroup(numberOfThreads: 1)
        let loop = group.loops[0]
        let first = Recorder("a", log), second = Recorder("b", log), late = Recorder("late", log)
        loop.execute {
            loop.deferToEndOfTurn(first)
            loop.deferToEndOfTurn(second)
            log.append("work")
        }
        // Nothing else wakes the loop: the deferred work must not wait for another event.
        for _ in 0..<400 where log.all.count < 3 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(log.all == ["work", "end a", "end b"])
        _ = loop.whenStopping { loop.deferToEndOfTurn(late) }
        group.shutdown()
        #expect(log.all == ["work", "end a", "end b", "end late"])
    }

    /// Work deferred in the loop's last turn still runs when it stops.
    @Test func endOfTurnWorkDeferredAsTheLoopStopsRuns() throws {
        final class Flag: EndOfTurnWork, Sendable {
            let ran = Atomic<Bool>(false)
            func endOfTurn() { self.ran.store(true, ordering: .relaxed) }
        }
        let flag = Flag()
        let group = try EventLoopGroup(numberOfThreads: 1)
        let loop = group.loops[0]
        // The loop is busy while the group is told to stop; the deferral comes in its last turn.
        loop.execute { Thread.sleep(forTimeInterval: 0.05) }
        loop.execute { loop.deferToEndOfTurn(flag) }
        group.shutdown()
        let ran = flag.ran.load(ordering: .relaxed)
        #expect(ran)
    }

    @Test func timersFireInDeadlineOrder() async throws {
        let group = try EventLoopGroup(numberOfThreads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let order = Mutex<[Int]>([])
        let start = ContinuousClock.now
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.schedule(after: .milliseconds(60)) {
                order.withLock { $0.append(3) }
                done.resume()
            }
            loop.schedule(after: .milliseconds(20)) { order.withLock { $0.append(1) } }
            loop.schedule(after: .milliseconds(40)) { order.withLock { $0.append(2) } }
        }
        #expect(order.withLock { $0 } == [1, 2, 3])
        #expect(ContinuousClock.now - start >= .milliseconds(60))
    }

    @Test func timerHeapOrdersEqualDeadlinesByInsertion() {
        final class Target: TimerTarget {
            var fired: [UInt64] = []
            func timerFired(token: UInt64, now: Deadline) { self.fired.append(token) }
        }
        let target = Target()
        var heap = TimerHeap()
        let base = Deadline(nanoseconds: 1000)
        for (i, offset) in [5, 1, 3, 1, 9, 0, 3].enumerated() {
            heap.insert(deadline: Deadline(nanoseconds: base.nanoseconds + UInt64(offset)), target: target, token: UInt64(i))
        }
        #expect(heap.popDue(now: Deadline(nanoseconds: 999)) == nil)
        while let entry = heap.popDue(now: Deadline(nanoseconds: 2000)) {
            entry.target.timerFired(token: entry.token, now: base)
        }
        #expect(target.fired == [5, 1, 3, 2, 6, 0, 4])
    }

    @Test func groupPrefersTheCallersLoop() async throws {
        let group = try EventLoopGroup(numberOfThreads: 2)
        defer { group.shutdown() }
        let same = Mutex(false)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            group.loops[1].execute {
                same.withLock { $0 = group.next() === group.loops[1] }
                done.resume()
            }
        }
        #expect(same.withLock { $0 })
    }

    @Test func deadlineArithmeticSaturates() {
        #expect(Deadline(nanoseconds: .max - 1) + .seconds(1) == .distantFuture)
        #expect(Deadline(nanoseconds: 10) + .seconds(-5) == Deadline(nanoseconds: 10))
        #expect(Deadline(nanoseconds: 10) + .nanoseconds(5) == Deadline(nanoseconds: 15))
    }
}
