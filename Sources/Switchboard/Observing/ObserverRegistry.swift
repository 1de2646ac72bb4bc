import Dispatch
import Synchronization

/// The locked registry of observers per request type: MyURLClass's delegate set, grown up.
///
/// Posting takes a snapshot of the type's entries under the lock, releases it, then delivers: one
/// `async` per delivery queue, or inline for `.immediate` entries. Observers may therefore add or remove
/// observers, send or cancel requests from inside a callback without deadlock. An entry removed after
/// the snapshot is skipped at delivery (`isRemoved`), so nothing reaches an observer after its removal.
@usableFromInline
final class ObserverRegistry: Sendable {
    struct State {
        var lists: [ObjectIdentifier: AnyObserverList] = [:]
        var defaultQueue: CallbackQueue
    }

    private let state: Locked<State>
    private let nextID = Atomic<UInt64>(1)

    init(defaultQueue: CallbackQueue) {
        state = Locked(State(defaultQueue: defaultQueue))
    }

    /// The queue observers registered without one use from now on.
    func setDefaultQueue(_ queue: CallbackQueue) {
        state.withLock { $0.defaultQueue = queue }
    }

    /// A fresh entry identifier.
    @usableFromInline func makeID() -> UInt64 {
        nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Adds an entry delivered on `queue` (`nil`: the default queue as it is now).
    @usableFromInline
    func add<R: Request>(_ entry: ObserverEntry<R>, queue: CallbackQueue?) -> ObservationToken {
        let key = ObjectIdentifier(R.self)
        state.withLock { state in
            let list: ObserverList<R>
            if let existing = state.lists[key] {
                list = unsafeDowncast(existing, to: ObserverList<R>.self)
            } else {
                list = ObserverList<R>()
                state.lists[key] = list
            }
            list.add(entry, queue: (queue ?? state.defaultQueue).dispatchQueue)
        }
        return ObservationToken(registry: self, typeKey: key, id: entry.id)
    }

    /// Removes one entry by its token's identity.
    func remove(typeKey: ObjectIdentifier, id: UInt64) {
        let removed = state.withLock { state -> AnyObserverEntry? in
            guard let list = state.lists[typeKey], let entry = list.remove(id: id) else { return nil }
            entry.markRemoved()
            return entry
        }
        removed?.didRemove()
    }

    /// Removes every entry of `observer`, for one request type or (`typeKey` nil) all of them.
    func remove(owner: ObjectIdentifier, typeKey: ObjectIdentifier?) {
        let removed = state.withLock { state -> [AnyObserverEntry] in
            let lists = typeKey.map { key in state.lists[key].map { [$0] } ?? [] } ?? Array(state.lists.values)
            let entries = lists.flatMap { $0.removeAll(owner: owner) }
            entries.forEach { $0.markRemoved() }
            return entries
        }
        removed.forEach { $0.didRemove() }
    }

    /// Removes every entry (of one type, or all).
    func removeAll(typeKey: ObjectIdentifier? = nil) {
        let removed = state.withLock { state -> [AnyObserverEntry] in
            let lists = typeKey.map { key in state.lists[key].map { [$0] } ?? [] } ?? Array(state.lists.values)
            let entries = lists.flatMap { $0.removeAll() }
            entries.forEach { $0.markRemoved() }
            return entries
        }
        removed.forEach { $0.didRemove() }
    }

    /// The number of live registrations for `R` (deallocated observers not yet pruned are excluded).
    func count<R: Request>(for type: R.Type) -> Int {
        snapshot(R.self).reduce(0) { $0 + $1.entries.filter(\.isAlive).count }
    }

    /// The entries of `R`, grouped by queue, as they are now.
    @inline(__always)
    func snapshot<R: Request>(_ type: R.Type) -> [DeliveryGroup<R>] {
        let key = ObjectIdentifier(R.self)
        return state.withLock { state in
            guard let list = state.lists[key] else { return [] }
            return unsafeDowncast(list, to: ObserverList<R>.self).groups
        }
    }

    /// Delivers `event` to every entry registered for `R` now. Never holds the lock while calling out.
    func post<R: Request>(_ event: RequestEvent<R>) {
        let groups = snapshot(R.self)
        for group in groups {
            if let queue = group.queue {
                let entries = group.entries
                queue.async { self.deliver(event, to: entries) }
            } else {
                deliver(event, to: group.entries)
            }
        }
    }

    func deliver<R: Request>(_ event: RequestEvent<R>, to entries: [ObserverEntry<R>]) {
        var sawDeallocated = false
        for entry in entries where !entry.deliver(event) {
            sawDeallocated = true
        }
        if sawDeallocated { pruneDeallocated(R.self) }
    }

    private func pruneDeallocated<R: Request>(_ type: R.Type) {
        let key = ObjectIdentifier(R.self)
        let removed = state.withLock { state -> [AnyObserverEntry] in
            let entries = state.lists[key]?.pruneDeallocated() ?? []
            entries.forEach { $0.markRemoved() }
            return entries
        }
        removed.forEach { $0.didRemove() }
    }
}
