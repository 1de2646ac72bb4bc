/// A registration in a ``Dispatcher``'s observer registry. Keep it to remove that one registration
/// with ``cancel()``; dropping it does not remove anything (observers are held weakly and leave the
/// registry when they are deallocated, or with ``Dispatcher/removeObserver(_:)``).
///
/// The token is the registration itself (one allocation per `addObserver`, not two); its subclasses are
/// internal.
///
/// `@unchecked Sendable`: its stored properties are immutable (`let`) references to `Sendable` objects;
/// subclasses add only an atomic flag and what the registrant promised to confine to its queue.
public class ObservationToken: @unchecked Sendable, Hashable {
    @usableFromInline let registry: ObserverRegistry
    @usableFromInline let typeKey: ObjectIdentifier

    @usableFromInline
    init(registry: ObserverRegistry, typeKey: ObjectIdentifier) {
        self.registry = registry
        self.typeKey = typeKey
    }

    /// Removes the registration. Events already queued for it are dropped. Idempotent; safe from any
    /// thread, including from inside the observer's own callback.
    public final func cancel() {
        // Every token is an entry: the class can't be subclassed or created outside this module.
        registry.remove(unsafeDowncast(self, to: AnyObserverEntry.self))
    }

    /// Whether both tokens stand for the same registration.
    public static func == (lhs: ObservationToken, rhs: ObservationToken) -> Bool {
        lhs === rhs
    }

    /// Hashes the registration's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}
