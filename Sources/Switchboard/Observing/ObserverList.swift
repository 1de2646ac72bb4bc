import Dispatch

/// The entries delivered on one queue (`nil`: immediately, on the posting thread).
@usableFromInline
struct DeliveryGroup: Sendable {
    @usableFromInline let queue: DispatchQueue?
    @usableFromInline var entries: [AnyObserverEntry]

    @usableFromInline
    init(queue: DispatchQueue?, entries: [AnyObserverEntry]) {
        self.queue = queue
        self.entries = entries
    }
}

/// The entries of one request type, grouped by the queue they are delivered on, so a post costs one
/// `async` per queue rather than one per observer. Not generic: entries are stored as their base class
/// and cast back (unchecked) at delivery, where the event type says what they are.
///
/// `@unchecked Sendable`: `groups` is only read or written while ``ObserverRegistry``'s lock is held;
/// readers take a copy (a retain of the copy-on-write array) and deliver from the copy.
final class ObserverList: @unchecked Sendable {
    // Only touched under the registry's lock, which already makes access exclusive.
    @exclusivity(unchecked) var groups: [DeliveryGroup] = []

    /// Adds `entry` to `queue`'s group; a new queue takes an emptied group's place, so that queues that
    /// are a new object at each call (`DispatchQueue.global()` on Linux) don't pile up empty groups.
    func add(_ entry: AnyObserverEntry, queue: DispatchQueue?) {
        if let index = groups.firstIndex(where: { $0.queue === queue }) {
            groups[index].entries.append(entry)
        } else if let index = groups.firstIndex(where: { $0.entries.isEmpty }) {
            groups[index] = DeliveryGroup(queue: queue, entries: [entry])
        } else {
            groups.append(DeliveryGroup(queue: queue, entries: [entry]))
        }
    }

    /// Removes `entry` (searching from the newest, the common case of a short-lived registration).
    /// Returns whether it was there.
    func remove(_ entry: AnyObserverEntry) -> Bool {
        for g in groups.indices {
            if let index = groups[g].entries.lastIndex(where: { $0 === entry }) {
                // An emptied group stays (posts skip it) for the next registration, on its queue or a new one.
                groups[g].entries.remove(at: index)
                return true
            }
        }
        return false
    }

    /// Removes and returns the entries for which `shouldRemove` is true.
    func removeAll(where shouldRemove: (AnyObserverEntry) -> Bool) -> [AnyObserverEntry] {
        var removed: [AnyObserverEntry] = []
        for g in groups.indices where groups[g].entries.contains(where: shouldRemove) {
            groups[g].entries.removeAll { entry in
                guard shouldRemove(entry) else { return false }
                removed.append(entry)
                return true
            }
        }
        return removed
    }
}

extension Array where Element == AnyObserverEntry {
    /// Calls `body` with each entry borrowed, not retained and released around the call: the array keeps
    /// every entry alive for the loop, and the pair of atomic operations per entry was a fifth of a
    /// delivery's cost (fan-out bench, 47 → 37 ns per delivery).
    @inlinable
    func forEachBorrowed(_ body: (AnyObserverEntry) -> Void) {
        withUnsafeBufferPointer { buffer in
            for index in buffer.indices {
                Unmanaged.passUnretained(buffer[index])._withUnsafeGuaranteedRef(body)
            }
        }
    }
}
