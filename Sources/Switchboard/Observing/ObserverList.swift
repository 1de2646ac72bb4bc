import Dispatch

/// The entries of one request type, grouped by the queue they are delivered on, so a post costs one
/// `async` per queue rather than one per observer. Only touched under the registry's lock.
///
/// `@unchecked Sendable`: `groups` is only read or written while ``ObserverRegistry``'s lock is held;
/// readers take a copy (a retain of the copy-on-write array) and deliver from the copy.
@usableFromInline
class AnyObserverList: @unchecked Sendable {
    /// Removes the entry with `id`; returns it.
    func remove(id: UInt64) -> AnyObserverEntry? { nil }
    /// Removes every entry of `owner`; returns them.
    func removeAll(owner: ObjectIdentifier) -> [AnyObserverEntry] { [] }
    /// Removes entries whose observer was deallocated.
    func pruneDeallocated() -> [AnyObserverEntry] { [] }
    /// Removes and returns every entry.
    func removeAll() -> [AnyObserverEntry] { [] }
    /// The number of entries.
    var count: Int { 0 }
}

/// The entries delivered on one queue (`nil`: immediately, on the posting thread).
@usableFromInline
struct DeliveryGroup<R: Request>: Sendable {
    @usableFromInline let queue: DispatchQueue?
    @usableFromInline var entries: [ObserverEntry<R>]
}

@usableFromInline
final class ObserverList<R: Request>: AnyObserverList, @unchecked Sendable {
    @usableFromInline var groups: [DeliveryGroup<R>] = []

    func add(_ entry: ObserverEntry<R>, queue: DispatchQueue?) {
        if let index = groups.firstIndex(where: { $0.queue === queue }) {
            groups[index].entries.append(entry)
        } else {
            groups.append(DeliveryGroup(queue: queue, entries: [entry]))
        }
    }

    override func remove(id: UInt64) -> AnyObserverEntry? {
        for g in groups.indices {
            if let index = groups[g].entries.firstIndex(where: { $0.id == id }) {
                let entry = groups[g].entries.remove(at: index)
                if groups[g].entries.isEmpty { groups.remove(at: g) }
                return entry
            }
        }
        return nil
    }

    override func removeAll(owner: ObjectIdentifier) -> [AnyObserverEntry] {
        removeEntries { $0.owner == owner }
    }

    override func pruneDeallocated() -> [AnyObserverEntry] {
        removeEntries { !$0.isAlive }
    }

    override func removeAll() -> [AnyObserverEntry] {
        removeEntries { _ in true }
    }

    override var count: Int { groups.reduce(0) { $0 + $1.entries.count } }

    private func removeEntries(where shouldRemove: (ObserverEntry<R>) -> Bool) -> [AnyObserverEntry] {
        var removed: [AnyObserverEntry] = []
        for g in groups.indices where groups[g].entries.contains(where: shouldRemove) {
            groups[g].entries.removeAll { entry in
                guard shouldRemove(entry) else { return false }
                removed.append(entry)
                return true
            }
        }
        if !removed.isEmpty { groups.removeAll { $0.entries.isEmpty } }
        return removed
    }
}
