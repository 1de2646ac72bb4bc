import Dispatch
import Foundation

/// What the registry needs of every entry, whatever its event type: identity, liveness, removal.
///
/// `@unchecked Sendable`: the only mutable state is `removedFlag`, an atomic flag. What subclasses hold is
/// either `Sendable` (``WeakObserverEntry``: a `Sendable` observer and a `@Sendable` callback) or only
/// touched on the main actor (``MainActorObserverEntry``), as the public `addObserver` forms require.
@usableFromInline
class AnyObserverEntry: ObservationToken, @unchecked Sendable {
    /// The observer's identity, for `removeObserver(_:)`; `nil` for streams.
    @usableFromInline let owner: ObjectIdentifier?
    private let removedFlag = AtomicFlag()

    @usableFromInline
    init(registry: ObserverRegistry, typeKey: ObjectIdentifier, owner: ObjectIdentifier?) {
        self.owner = owner
        super.init(registry: registry, typeKey: typeKey)
    }

    /// Set when the entry leaves the registry; a delivery already queued is then skipped.
    @inlinable final var isRemoved: Bool { removedFlagLoad() }

    @usableFromInline final func removedFlagLoad() -> Bool { removedFlag.isSet }

    final func markRemoved() { removedFlag.set() }

    /// Whether the observer still exists. It may load the observer's weak reference, and the strong
    /// reference that load makes can be the last one (its `deinit` then runs here): never asked under
    /// the registry's lock.
    @usableFromInline var isAlive: Bool { true }

    /// Whether the entry calls main-actor code without checking where it runs: the registry then
    /// accepts it only in the main-queue group (``ObserverRegistry/add(_:queue:)``).
    var callsOnMainActor: Bool { false }

    /// Called once, outside the registry's lock, when the entry leaves the registry (streams finish here).
    func didRemove() {}
}

/// One registration, already typed for the events it receives, so delivery needs no cast.
/// Subclasses hold the observer and call it.
///
/// `@unchecked Sendable` for the reasons given on ``AnyObserverEntry``; this class adds no state.
@usableFromInline
class ObserverEntry<R: Request>: AnyObserverEntry, @unchecked Sendable {
    /// Calls the observer unless it was removed or deallocated. Returns `false` when the observer is gone
    /// (so the registry can prune it).
    @usableFromInline func deliver(_ event: RequestEvent<R>) -> Bool { true }
}

/// A `Sendable` observer held weakly, with a `@Sendable` callback, delivered on the queue it chose.
///
/// `@unchecked Sendable`: its state is immutable apart from the `weak` reference, whose loads and stores
/// Swift makes thread-safe; the observer and the callback are both `Sendable` (the generic parameter
/// can't say so without costing the registry a conformance check per registration).
@usableFromInline
final class WeakObserverEntry<R: Request, O: AnyObject & Sendable>: ObserverEntry<R>, @unchecked Sendable {
    // Written once, in init; weak loads are thread-safe, so the dynamic exclusivity check buys nothing.
    @usableFromInline @exclusivity(unchecked) weak var observer: O?
    @usableFromInline let callback: @Sendable (O, RequestEvent<R>) -> Void

    // Inlinable, so the caller's reference to the observer is borrowed rather than retained and released
    // around the call: an object that has weak references keeps its counts in a side table, where each
    // retain and release takes the slow path.
    @inlinable
    init(registry: ObserverRegistry, observer: O, callback: @escaping @Sendable (O, RequestEvent<R>) -> Void) {
        self.observer = observer
        self.callback = callback
        super.init(registry: registry, typeKey: ObjectIdentifier(R.self), owner: ObjectIdentifier(observer))
    }

    @usableFromInline override var isAlive: Bool { observer != nil }

    @inlinable
    override func deliver(_ event: RequestEvent<R>) -> Bool {
        // The strong load keeps the observer alive for the whole callback.
        guard let observer else { return false }
        if !isRemoved { callback(observer, event) }
        return true
    }
}

/// An observer called on the main queue inside the main actor's isolation: a main-actor class, a
/// `Sendable` one, or any class registered from main-actor code (it never leaves the main actor).
///
/// `@unchecked Sendable`: apart from the thread-safe `weak` reference, the observer and callback are
/// only touched on the main actor (entries of this class are only placed in the main-queue group).
@usableFromInline
final class MainActorObserverEntry<R: Request, O: AnyObject>: ObserverEntry<R>, @unchecked Sendable {
    // Written once, in init; weak loads are thread-safe, so the dynamic exclusivity check buys nothing.
    @usableFromInline @exclusivity(unchecked) weak var observer: O?
    @usableFromInline let callback: @MainActor (O, RequestEvent<R>) -> Void

    @inlinable
    init(registry: ObserverRegistry, observer: O, callback: @escaping @MainActor (O, RequestEvent<R>) -> Void) {
        self.observer = observer
        self.callback = callback
        super.init(registry: registry, typeKey: ObjectIdentifier(R.self), owner: ObjectIdentifier(observer))
    }

    /// Set on the main actor when a delivery found the observer gone.
    private let gone = AtomicFlag()

    @usableFromInline func markGone() { gone.set() }

    override var callsOnMainActor: Bool { true }

    /// On the main queue (the main actor's), whether the weak reference still holds; elsewhere, only
    /// whether a delivery on the main actor found it gone. The reference is never loaded off the main
    /// queue: the strong reference a load makes could be the last one, and the observer's `deinit`
    /// would then run there (a main-actor object must die on the main actor). A deallocated observer is
    /// pruned at its next delivery. (Not `Thread.isMainThread`: after `dispatchMain()` on Linux, the
    /// main queue's work runs on a thread of the pool.)
    @usableFromInline override var isAlive: Bool {
        guard MainQueue.isCurrent else { return !gone.isSet }
        return observer != nil
    }

    @inlinable
    override func deliver(_ event: RequestEvent<R>) -> Bool {
        guard let observer else {
            markGone()
            return false
        }
        if !isRemoved {
            // Entries of this class are only ever placed in the main-queue group, whose blocks run on
            // the main queue: the main actor's executor. Called without `MainActor.assumeIsolated`'s
            // check, which looks up the current executor per event (about 1 µs an event under perf).
            MainQueue.runIsolated { callback(observer, event) }
        }
        return true
    }
}

/// An `AsyncStream` continuation (``Dispatcher/events(for:bufferingPolicy:replayingLast:)``), fed
/// immediately on the posting thread, through a replay buffer when the stream replays last events.
///
/// `@unchecked Sendable`: its state is the continuation and the buffer, both `Sendable`.
final class StreamObserverEntry<R: Request>: ObserverEntry<R>, @unchecked Sendable {
    let continuation: AsyncStream<RequestEvent<R>>.Continuation
    let replay: ReplayBuffer<RequestEvent<R>>?

    init(registry: ObserverRegistry, continuation: AsyncStream<RequestEvent<R>>.Continuation, replay: ReplayBuffer<RequestEvent<R>>? = nil) {
        self.continuation = continuation
        self.replay = replay
        super.init(registry: registry, typeKey: ObjectIdentifier(R.self), owner: nil)
    }

    override func deliver(_ event: RequestEvent<R>) -> Bool {
        guard !isRemoved else { return true }
        if let replay { replay.offer(event, sendID: event.sendID) } else { continuation.yield(event) }
        return true
    }

    override func didRemove() { continuation.finish() }
}

/// Whether the caller runs on the main queue (the main actor's executor), wherever its work runs.
@usableFromInline
enum MainQueue {
    private static let key: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    static var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }

    /// Whether `queue` is the main queue (`DispatchQueue.main` makes a new object at each call on Linux,
    /// so identity can't tell).
    static func isMain(_ queue: DispatchQueue) -> Bool { queue.getSpecific(key: key) == true }

    /// The main queue as one object, for comparisons by identity: ``CallbackQueue/main``'s queue, and
    /// the registry's main-queue group whatever object an observer registered with (on Linux each
    /// `DispatchQueue.main` is a new object, and comparing those put every main-queue observer in a
    /// group of its own and a send's closure in a block apart from its observers').
    static let queue = DispatchQueue.main

    /// Runs `body`, isolated to the main actor, from a block the main queue runs (the caller's
    /// guarantee: debug builds check it). `MainActor.assumeIsolated` without its per-call executor
    /// check: a synchronous main-actor closure and a nonisolated one are called alike.
    @usableFromInline
    static func runIsolated(_ body: @MainActor () -> Void) {
        assert(isCurrent, "a main-actor callback runs on the main queue")
        withoutActuallyEscaping(body) { escapable in
            unsafeBitCast(escapable, to: (() -> Void).self)()
        }
    }
}
