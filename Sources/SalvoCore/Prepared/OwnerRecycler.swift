/// The owners of one prepared call's finished calls on one event loop, kept to serve its next
/// calls there: a call made on a loop's thread (a completion handler's next call, a task on
/// the loop's executor) takes one instead of making an owner — no allocation, no setting up
/// of what the call's earlier owners already hold (its shape, its place, a body buffer).
///
/// An owner is kept only once its call is wholly over: its response lent and the handler
/// returned, its connection (HTTP/1.1) back in the pool, nothing of the call reachable from a
/// connection, a pool or a timer. A handle kept from the call (``RequestHandle``, an awaiting
/// caller's cancellation) names the call by its generation, so it reaches nothing of the
/// owner's later calls. Failed calls' owners are not kept.
///
/// Kept owners hold no reference to their recycler (an owner serving a call does), so a
/// recycler and its owners go with the last of the call and its calls in flight.
///
/// @unchecked Sendable: made with its ``PreparedCall`` (which any thread may hold), then
/// touched only on `loop`'s thread.
final class OwnerRecycler: @unchecked Sendable {
    /// Owners kept per loop, at most: callers that send their next call from a completion
    /// handler take back one owner each, and those resumed together at the end of a loop turn
    /// need as many as that turn completed — a few dozen. Past it, owners go with their calls.
    static let maxKept = 64
    /// A body buffer larger than this is let go of with its call, not kept for the next: what
    /// a recycler holds at most is 64 owners and a megabyte of buffers per loop.
    static let maxKeptBodyCapacity = 16 * 1024

    let loop: EventLoop
    @exclusivity(unchecked) private var kept: [RequestOwner] = []

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// An owner whose call is over, for the next call; nil when none is kept.
    func take() -> RequestOwner? {
        guard let owner = self.kept.popLast() else { return nil }
        owner.recycler = self
        return owner
    }

    /// Keeps `owner`, whose call is over, unless enough are kept already.
    func recycle(_ owner: RequestOwner) {
        owner.recycler = nil
        guard self.kept.count < Self.maxKept else { return }
        self.kept.append(owner)
    }
}
