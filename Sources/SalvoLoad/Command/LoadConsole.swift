import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a load command shows on a terminal while it runs, and how Ctrl-C ends it: shared by
/// `salvo bench` and a workload's own command.
public enum LoadConsole {
    /// Makes Ctrl-C stop `generator` (its run returns what it measured); a second Ctrl-C
    /// quits at once with status 130. Returns the handler, to be cancelled after the run,
    /// and what counts the presses.
    public static func stopOnInterrupt(_ generator: @escaping @Sendable () -> LoadGenerator?) -> Interrupts {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let count = InterruptCount()
        source.setEventHandler {
            if count.increment() > 1 { exit(130) }
            generator()?.stop()
        }
        source.resume()
        return Interrupts(source: source, count: count)
    }

    /// The Ctrl-C handler of a run.
    public struct Interrupts {
        let source: any DispatchSourceSignal
        public let count: InterruptCount

        /// Stops listening, and gives Ctrl-C back its default: ending the process.
        public func cancel() {
            self.source.cancel()
            signal(SIGINT, SIG_DFL)
        }
    }
}

/// Counts Ctrl-C presses across the signal handler's runs.
public final class InterruptCount: Sendable {
    private let count = Atomic<Int>(0)

    public var value: Int { self.count.load(ordering: .relaxed) }

    func increment() -> Int { self.count.add(1, ordering: .relaxed).newValue }
}

/// The live "elapsed, requests/s, errors" line on a terminal.
public final class ProgressLine: Sendable {
    private let generator: LoadGenerator
    // A Dispatch source may be resumed and cancelled from any thread; `running` makes each
    // happen once.
    nonisolated(unsafe) private let timer = DispatchSource.makeTimerSource(queue: .global())
    private let running = Atomic<Int>(0)   // 0 new, 1 started, 2 stopped
    private let started = ContinuousClock.now

    public init(generator: LoadGenerator) { self.generator = generator }

    public func start() {
        guard self.running.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged else { return }
        var last = (requests: 0, at: ContinuousClock.now)
        let generator = self.generator
        let started = self.started
        self.timer.setEventHandler {
            let now = ContinuousClock.now
            let (requests, errors) = generator.progress()
            let interval = now - last.at
            let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
            let rate = seconds > 0 ? Double(requests - last.requests) / seconds : 0
            last = (requests, now)
            let elapsed = (now - started).components.seconds
            let line = "\r  \(elapsed)s  \(requests) requests  \(Int(rate)) req/s  \(errors) errors   "
            FileHandle.standardOutput.write(Data(line.utf8))
        }
        self.timer.schedule(deadline: .now() + 1, repeating: 1)
        self.timer.resume()
    }

    public func stop() {
        guard self.running.compareExchange(expected: 1, desired: 2, ordering: .acquiringAndReleasing).exchanged else { return }
        self.timer.cancel()
        FileHandle.standardOutput.write(Data("\r\u{1B}[K".utf8))
    }
}

extension LoadReport {
    /// The report as `salvo bench --json` prints it: the summary, and the whole report
    /// (histogram included) for merging.
    public func jsonText() throws -> String {
        struct Output: Encodable {
            var summary: LoadReport.Summary
            var report: LoadReport
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(Output(summary: self.summary, report: self))
        return String(decoding: data, as: UTF8.self)
    }
}
