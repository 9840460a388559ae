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
