/// A registration in a ``Switchboard``'s observer registry. Keep it to remove that one registration
/// with ``cancel()``; dropping it does not remove anything (observers are held weakly and leave the
/// registry when they are deallocated, or with ``Switchboard/removeObserver(_:)``).
public final class ObservationToken: Sendable, Hashable {
    private let registry: ObserverRegistry
    private let typeKey: ObjectIdentifier
    private let id: UInt64

    @usableFromInline
    init(registry: ObserverRegistry, typeKey: ObjectIdentifier, id: UInt64) {
        self.registry = registry
        self.typeKey = typeKey
        self.id = id
    }

    /// Removes the registration. Events already queued for it are dropped. Idempotent; safe from any
    /// thread, including from inside the observer's own callback.
    public func cancel() {
        registry.remove(typeKey: typeKey, id: id)
    }

    /// Whether both tokens stand for the same registration of the same dispatcher.
    public static func == (lhs: ObservationToken, rhs: ObservationToken) -> Bool {
        lhs.id == rhs.id && lhs.typeKey == rhs.typeKey && lhs.registry === rhs.registry
    }

    /// Hashes the registration's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(ObjectIdentifier(registry))
    }
}
