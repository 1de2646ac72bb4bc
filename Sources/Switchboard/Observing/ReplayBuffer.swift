/// Lets a stream that subscribes late start with the last event of each running send, without a gap
/// or a duplicate: events that arrive while the replayed ones are gathered wait here, and a send that
/// produced a live event meanwhile is not replayed (its live event is newer).
///
/// `yield` is a stream continuation's (no user code: the consumer runs in its own task); it is called
/// under this buffer's lock while the replay is flushed, so no live event can overtake it.
final class ReplayBuffer<Event: Sendable>: Sendable {
    private struct State {
        var replaying = true
        var held: [Event] = []
        var seen: Set<UInt64> = []
    }

    /// Locked: posting threads offer live events while the subscriber's thread flushes the replay.
    private let state = Locked(State())
    private let yield: @Sendable (Event) -> Void

    init(yield: @escaping @Sendable (Event) -> Void) {
        self.yield = yield
    }

    /// A live event: held while the replay is gathered, passed on after.
    func offer(_ event: Event, sendID: UInt64) {
        let held = state.withLock { state -> Bool in
            guard state.replaying else { return false }
            state.held.append(event)
            state.seen.insert(sendID)
            return true
        }
        if !held { yield(event) }
    }

    /// Passes on the replayed events (those of sends with no live event yet), then the held live ones,
    /// and from then on every event as it comes.
    func finish(replaying events: [(sendID: UInt64, event: Event)]) {
        state.withLock { state in
            for (sendID, event) in events where !state.seen.contains(sendID) { yield(event) }
            for event in state.held { yield(event) }
            state.held = []
            state.replaying = false
        }
    }
}
