/// Work a loop runs once it has handled everything one wake-up brought: every ready socket,
/// every due timer.
protocol EndOfTurnWork: AnyObject {
    func endOfTurn()
}

extension EventLoop {
    /// Runs `work` once this turn of the loop is over, before the loop runs its queued jobs
    /// and waits again; at once if the loop has stopped taking work. Loop thread only.
    ///
    /// For waking callers: a loop that resumes each awaiting task as its response completes
    /// hands Swift's thread pool one task at a time, and on a busy machine the woken worker
    /// takes the CPU from the loop each time — two context switches per request. Resumed
    /// together at the end of the turn, the tasks run as one batch (0.7 switches per request
    /// instead of 1.5, `salvo bench --api async` on one core), a few microseconds later.
    func deferToEndOfTurn(_ work: any EndOfTurnWork) {
        self.assertInLoop()
        if self.isStopping {
            work.endOfTurn()
        } else {
            self.appendEndOfTurn(work)
        }
    }
}
