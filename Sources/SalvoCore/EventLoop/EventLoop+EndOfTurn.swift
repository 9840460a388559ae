import Dispatch
import SalvoTransport

/// Work a loop runs once it has handled everything one wake-up brought: every ready socket,
/// every due timer (see ``EventLoop/deferToEndOfTurn(_:)``).
protocol EndOfTurnWork: AnyObject {
    func endOfTurn()
}

extension EndOfTurnWork {
    /// Runs ``endOfTurn()`` at the end of the current turn of this thread's loop, or at once
    /// on a thread that is no loop's (a request its loop refused, failed by its caller).
    func runAtEndOfTurn() {
        if let loop = EventLoop.current {
            loop.deferToEndOfTurn(self)
        } else {
            self.endOfTurn()
        }
    }
}

/// Callers awaiting a response on Swift's global executor, whose responses (or streamed
/// responses' heads) completed in one turn of a loop.
struct PoolResumes {
    enum Resume: Sendable {
        case collected(UnsafeContinuation<Result<HTTPClientResponse, HTTPClientError>, Never>, Result<HTTPClientResponse, HTTPClientError>)
        case streamed(UnsafeContinuation<Result<HTTPClientStreamingResponse, HTTPClientError>, Never>,
                      Result<HTTPClientStreamingResponse, HTTPClientError>)

        func run() {
            switch self {
            case .collected(let continuation, let result): continuation.resume(returning: result)
            case .streamed(let continuation, let result): continuation.resume(returning: result)
            }
        }
    }

    var waiting: [Resume] = []
}

extension EventLoop {
    /// Resumes an awaiting caller on Swift's global executor (no actor, no loop of ours)
    /// — together with the others of this turn, by one job of the pool's.
    ///
    /// Resumed from the loop, each caller is a job handed to the pool from outside it: a
    /// worker is woken for it and, on a busy core, takes the CPU from the loop there and
    /// then, runs that one caller to its next request, and sleeps again — two context
    /// switches per request, however many completed together. Resumed from a job of the
    /// pool's, the callers are queued by a worker that is already running, which goes on to
    /// run them one after another: 0.1–0.3 switches per request instead of 0.8–1.0, and
    /// 7–14% more requests per second (`salvo bench --api async`, one core, c=16 to 256).
    /// A single caller is resumed at once: a job for it would be one more hand-off. Outside
    /// the end of a turn (a loop that is stopping), at once too. Loop thread only.
    func resume(fromPool resume: PoolResumes.Resume) {
        self.assertInLoop()
        if self.isRunningEndOfTurn {
            self.poolResumes.waiting.append(resume)
        } else {
            resume.run()
        }
    }

    /// Resumes the callers gathered in this turn's deferred work (see above): by one job of
    /// the pool's, or (`inOneJob` false, or only one) here and now.
    func resumePoolCallers(inOneJob: Bool) {
        switch self.poolResumes.waiting.count {
        case 0:
            return
        case 1:
            self.poolResumes.waiting.removeLast().run()
        case _ where !inOneJob:
            for resume in self.poolResumes.waiting { resume.run() }
            self.poolResumes.waiting.removeAll(keepingCapacity: true)
        default:
            let batch = self.poolResumes.waiting
            self.poolResumes.waiting = []
            self.poolResumeBatches += 1
            DispatchQueue.global().async {
                for resume in batch { resume.run() }
            }
        }
    }
}
