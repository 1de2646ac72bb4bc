import Dispatch

/// A registration on the bus of all requests: it receives every event of every request type, erased
/// to ``AnyRequestEvent`` (built once per event, and only while the bus has a listener).
///
/// `@unchecked Sendable`: its stored properties are immutable and `Sendable` (a `@Sendable` handler and
/// finisher); the base class adds only an atomic flag.
final class BusObserverEntry: AnyObserverEntry, @unchecked Sendable {
    /// The registry key of the bus (no request type has it).
    static var key: ObjectIdentifier { ObjectIdentifier(AnyRequestEvent.self) }

    private let handler: @Sendable (AnyRequestEvent) -> Void
    private let onRemove: (@Sendable () -> Void)?

    init(registry: ObserverRegistry, handler: @escaping @Sendable (AnyRequestEvent) -> Void, onRemove: (@Sendable () -> Void)? = nil) {
        self.handler = handler
        self.onRemove = onRemove
        super.init(registry: registry, typeKey: Self.key, owner: nil)
    }

    func deliver(_ event: AnyRequestEvent) {
        if !isRemoved { handler(event) }
    }

    override func didRemove() { onRemove?() }
}

extension ObserverRegistry {
    /// Delivers `event` to the bus's entries (the caller checked that there are some).
    @usableFromInline
    func postToBus<R: Request>(_ event: RequestEvent<R>) {
        postToBus(event, to: snapshot(BusObserverEntry.key))
    }

    /// Delivers `event` to the bus's entries in `groups` (a snapshot), and runs `then` last in the block
    /// of the group whose queue is `then`'s (the caller found it among `groups`).
    func postToBus<R: Request>(_ event: RequestEvent<R>, to groups: [DeliveryGroup], then: (queue: DispatchQueue, work: @Sendable () -> Void)? = nil) {
        guard groups.contains(where: { !$0.entries.isEmpty }) else { return }
        let erased = AnyRequestEvent(event)
        var then = then
        for group in groups where !group.entries.isEmpty {
            let entries = group.entries
            if let queue = group.queue {
                if let joined = then, joined.queue === queue {
                    then = nil
                    queue.async {
                        Self.deliverToBus(erased, entries)
                        joined.work()
                    }
                } else {
                    queue.async { Self.deliverToBus(erased, entries) }
                }
            } else {
                Self.deliverToBus(erased, entries)
            }
        }
    }

    private static func deliverToBus(_ event: AnyRequestEvent, _ entries: [AnyObserverEntry]) {
        // Every entry under the bus's key is a bus entry.
        entries.forEachBorrowed { unsafeDowncast($0, to: BusObserverEntry.self).deliver(event) }
    }
}
