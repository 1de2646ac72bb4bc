import Dispatch

/// The locked registry of observers per request type: MyURLClass's delegate set, grown up.
///
/// Posting takes a snapshot of the type's entries under the lock, releases it, then delivers: one
/// `async` per delivery queue, or inline for `.immediate` entries. Observers may therefore add or remove
/// observers, send or cancel requests from inside a callback without deadlock. An entry removed after
/// the snapshot is skipped at delivery (`isRemoved`).
@usableFromInline
final class ObserverRegistry: Sendable {
    private struct State {
        var lists: [ObjectIdentifier: ObserverList] = [:]
        /// The list used last, saving a hash lookup when one type is posted or registered repeatedly.
        var lastKey: ObjectIdentifier?
        var lastList: ObserverList?

        /// The list for `key` without a retain: valid only inside the lock, where `lists` owns it and
        /// nothing can remove it. Saves a retain and a release per registration, removal and post.
        mutating func unretainedList(for key: ObjectIdentifier) -> Unmanaged<ObserverList>? {
            if key != lastKey {
                guard let list = lists[key] else { return nil }
                lastKey = key
                lastList = list
            }
            return lastList.map { Unmanaged.passUnretained($0) }
        }
    }

    /// Locked: observers are added and removed, and events posted, from any thread.
    private let state: Locked<State>
    /// Registrations on the bus of all requests, read without the lock on every post.
    private let busListeners = AtomicCount()

    /// Whether anything listens on the bus of all requests (no lock taken).
    @usableFromInline var hasBusListeners: Bool { busListeners.value > 0 }

    init() {
        state = Locked(State())
    }

    /// Adds an entry, delivered on `queue`. The entry is the token.
    @usableFromInline
    func add(_ entry: AnyObserverEntry, queue: CallbackQueue) -> ObservationToken {
        let typeKey = entry.typeKey
        let dispatchQueue = queue.groupQueue
        // Its callback runs without an isolation check: only the main queue's blocks may call it.
        precondition(!entry.callsOnMainActor || dispatchQueue === MainQueue.queue, "a main-actor observer is delivered on the main queue")
        if typeKey == BusObserverEntry.key { busListeners.add(1) }
        state.withLock { state in
            if let existing = state.unretainedList(for: typeKey) {
                existing._withUnsafeGuaranteedRef { $0.add(entry, queue: dispatchQueue) }
            } else {
                let list = ObserverList()
                state.lists[typeKey] = list
                list.add(entry, queue: dispatchQueue)
            }
        }
        return entry
    }

    /// Removes one entry (a token's).
    func remove(_ entry: AnyObserverEntry) {
        let removed = state.withLock { state -> Bool in
            guard let list = state.unretainedList(for: entry.typeKey), list._withUnsafeGuaranteedRef({ $0.remove(entry) }) else { return false }
            entry.markRemoved()
            return true
        }
        guard removed else { return }
        if entry.typeKey == BusObserverEntry.key { busListeners.add(-1) }
        entry.didRemove()
    }

    /// Removes every entry of `owner`, for one request type or (`typeKey` nil) all of them.
    func remove(owner: ObjectIdentifier, typeKey: ObjectIdentifier?) {
        removeEntries(typeKey: typeKey) { $0.owner == owner }
    }

    /// Removes every entry (of one type, or all).
    func removeAll(typeKey: ObjectIdentifier? = nil) {
        removeEntries(typeKey: typeKey) { _ in true }
    }

    private func removeEntries(typeKey: ObjectIdentifier?, where shouldRemove: (AnyObserverEntry) -> Bool) {
        let removed = state.withLock { state -> [AnyObserverEntry] in
            let lists = typeKey.map { key in state.lists[key].map { [$0] } ?? [] } ?? Array(state.lists.values)
            let entries = lists.flatMap { $0.removeAll(where: shouldRemove) }
            entries.forEach { $0.markRemoved() }
            return entries
        }
        let fromBus = removed.reduce(0) { $0 + ($1.typeKey == BusObserverEntry.key ? 1 : 0) }
        if fromBus > 0 { busListeners.add(-fromBus) }
        removed.forEach { $0.didRemove() }
    }

    /// The number of live registrations for `R` (deallocated observers not yet pruned are excluded).
    func count<R: Request>(for type: R.Type) -> Int {
        snapshot(ObjectIdentifier(R.self)).reduce(0) { $0 + $1.entries.filter(\.isAlive).count }
    }

    /// The entries of one request type, grouped by queue, as they are now.
    @usableFromInline
    func snapshot(_ typeKey: ObjectIdentifier) -> [DeliveryGroup] {
        state.withLock { $0.unretainedList(for: typeKey)?._withUnsafeGuaranteedRef { $0.groups } ?? [] }
    }

    /// Delivers `event` to every entry registered for `R` now. Never holds the lock while calling out.
    @inlinable
    func post<R: Request>(_ event: RequestEvent<R>) {
        deliver(event, to: snapshot(ObjectIdentifier(R.self)))
    }

    /// Delivers the event `makeEvent` makes to every entry registered for `R` now; when nothing
    /// listens (no entry for `R`, none on the bus), the event is not even made: the common case of
    /// `response(for:)`, which then builds no event at all.
    func post<R: Request>(_ type: R.Type, _ makeEvent: () -> RequestEvent<R>) {
        let groups = snapshot(ObjectIdentifier(R.self))
        guard hasBusListeners || groups.contains(where: { !$0.entries.isEmpty }) else { return }
        deliver(makeEvent(), to: groups)
    }

    /// Delivers `event` to the entries of a snapshot, then to the bus.
    @inlinable
    func deliver<R: Request>(_ event: RequestEvent<R>, to groups: [DeliveryGroup]) {
        for group in groups where !group.entries.isEmpty {
            if let queue = group.queue {
                let entries = group.entries
                queue.async { self.deliver(event, to: entries) }
            } else {
                deliver(event, to: group.entries)
            }
        }
        if hasBusListeners { postToBus(event) }
    }

    /// Delivers the event `makeEvent` makes, then runs `then` on `queue`, last in the last block posted
    /// there: after the observers of all requests on that queue when there are any, else after the
    /// typed observers there when there are any (one `async` instead of two), else in a block of its
    /// own. On a serial queue it so runs after every observer on it. When nothing listens, the event
    /// is not made.
    func post<R: Request>(_ type: R.Type, then queue: CallbackQueue, _ makeEvent: () -> RequestEvent<R>, _ then: @escaping @Sendable () -> Void) {
        let groups = snapshot(ObjectIdentifier(R.self))
        let busGroups = hasBusListeners ? snapshot(BusObserverEntry.key) : []
        let busListens = busGroups.contains { !$0.entries.isEmpty }
        guard busListens || groups.contains(where: { !$0.entries.isEmpty }) else {
            queue.run(then)
            return
        }
        let event = makeEvent()
        let target = queue.groupQueue
        // The bus's blocks come after the typed observers': with a bus group on the target, the closure
        // ends that block; else it may end the typed observers' block there.
        let busJoins = target.map { target in busGroups.contains { !$0.entries.isEmpty && $0.queue === target } } ?? false
        var joined = busJoins
        for group in groups where !group.entries.isEmpty {
            let entries = group.entries
            if let groupQueue = group.queue {
                if !joined, groupQueue === target {
                    joined = true
                    groupQueue.async {
                        self.deliver(event, to: entries)
                        then()
                    }
                } else {
                    groupQueue.async { self.deliver(event, to: entries) }
                }
            } else {
                deliver(event, to: entries)
            }
        }
        if busListens {
            postToBus(event, to: busGroups, then: busJoins ? target.map { ($0, then) } : nil)
        }
        if !joined { queue.run(then) }
    }

    @inlinable
    func deliver<R: Request>(_ event: RequestEvent<R>, to entries: [AnyObserverEntry]) {
        var sawDeallocated = false
        entries.forEachBorrowed { entry in
            // Every entry in `R`'s list is an `ObserverEntry<R>`: the list is keyed by `R`.
            if !unsafeDowncast(entry, to: ObserverEntry<R>.self).deliver(event) { sawDeallocated = true }
        }
        if sawDeallocated { pruneDeallocated(ObjectIdentifier(R.self)) }
    }

    /// Removes the entries of `typeKey` whose observers are gone. Liveness is asked outside the lock (a
    /// weak load's strong reference may be the observer's last, and its `deinit` is the app's code),
    /// then exactly those entries are removed under it.
    @usableFromInline
    func pruneDeallocated(_ typeKey: ObjectIdentifier) {
        let dead = snapshot(typeKey).flatMap(\.entries).filter { !$0.isAlive }
        guard !dead.isEmpty else { return }
        // By reference, with `dead` holding them: an address freed meanwhile can't stand for a new entry.
        removeEntries(typeKey: typeKey) { entry in dead.contains { $0 === entry } }
    }
}
