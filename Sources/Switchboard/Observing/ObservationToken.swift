/// A registration in a ``Switchboard``'s observer registry. Keep it to remove that one registration
/// with ``cancel()``; dropping it does not remove anything (observers are held weakly and leave the
/// registry when they are deallocated, or with ``Switchboard/removeObserver(_:)``).
public final class ObservationToken: Sendable, Hashable {
    private let registry: ObserverRegistry
    private let list: ObserverList
    private let entry: AnyObserverEntry

    init(registry: ObserverRegistry, list: ObserverList, entry: AnyObserverEntry) {
        self.registry = registry
        self.list = list
        self.entry = entry
    }

    /// Removes the registration. Events already queued for it are dropped. Idempotent; safe from any
    /// thread, including from inside the observer's own callback.
    public func cancel() {
        registry.remove(entry, from: list)
    }

    /// Whether both tokens stand for the same registration.
    public static func == (lhs: ObservationToken, rhs: ObservationToken) -> Bool {
        lhs.entry === rhs.entry
    }

    /// Hashes the registration's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(entry))
    }
}
