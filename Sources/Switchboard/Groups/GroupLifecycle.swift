import Dispatch
import Foundation

/// What every group shares: it starts once, tells observers and accessories what happens, and ends
/// once, delivering its end on the callback queue in a fixed order: accessories' `willStop` →
/// the closure → observers → `didStop`. The delegate hears it on the main actor: right after the
/// closure when the callback queue is `.main` (the default), else queued to the main queue. At the
/// end the group lets go of its observers and accessories.
final class GroupLifecycle: Sendable {
    private struct State {
        var started = false
        var ended = false
        var observers: [(queue: CallbackQueue, handler: @Sendable (GroupEvent) -> Void)] = []
        var accessories: [any GroupAccessory] = []
    }

    /// Locked: the app adds observers and accessories and starts the group from any thread; the group's queue emits and ends it.
    private let state = Locked(State())
    let callbackQueue: CallbackQueue

    init(callbackQueue: CallbackQueue) {
        self.callbackQueue = callbackQueue
    }

    func addObserver(on queue: CallbackQueue?, _ handler: @escaping @Sendable (GroupEvent) -> Void) {
        state.withLock { $0.observers.append((queue ?? callbackQueue, handler)) }
    }

    var accessories: [any GroupAccessory] {
        get { state.withLock { $0.accessories } }
        set { state.withLock { $0.accessories = newValue } }
    }

    var isFinished: Bool { state.withLock { $0.ended } }

    /// Marks the group started; `false` when it already was.
    func begin(_ group: any RequestGroup) -> Bool {
        let accessories = state.withLock { state -> [any GroupAccessory]? in
            guard !state.started else { return nil }
            state.started = true
            return state.accessories
        }
        guard let accessories else { return false }
        for accessory in accessories { accessory.willStart(group) }
        emit(.started)
        return true
    }

    /// Tells observers about `event` (not a terminal one: ``end(_:deliver:)`` does that).
    func emit(_ event: GroupEvent) {
        let observers = state.withLock { $0.ended ? [] : $0.observers }
        for observer in observers { observer.queue.run { observer.handler(event) } }
    }

    /// Ends the group once with `event`; `deliver` (the closure and the delegate) runs on the
    /// callback queue between the accessories' `willStop` and the observers. Returns whether this
    /// call ended it.
    @discardableResult
    func end(_ group: any RequestGroup, _ event: GroupEvent, deliver: @escaping @Sendable () -> Void) -> Bool {
        let taken = state.withLock { state -> (observers: [(queue: CallbackQueue, handler: @Sendable (GroupEvent) -> Void)], accessories: [any GroupAccessory])? in
            guard !state.ended else { return nil }
            state.ended = true
            // Let go of them: a screen that owns the group and is captured by an observer must not
            // be kept by a group that ended.
            defer { state.observers = []; state.accessories = [] }
            return (state.observers, state.accessories)
        }
        guard let taken else { return false }
        let error: GroupError? = if case .failed(let error) = event { error } else if case .cancelled = event { GroupError(.cancelled) } else { nil }
        callbackQueue.run {
            for accessory in taken.accessories { accessory.willStop(group, error: error) }
            deliver()
        }
        for observer in taken.observers { observer.queue.run { observer.handler(event) } }
        callbackQueue.run {
            for accessory in taken.accessories { accessory.didStop(group, error: error) }
        }
        return true
    }
}

/// Awaits a group's result: `start` starts it with a completion called once at its end (on the queue
/// that ends it); cancelling the calling task calls `stop`.
func awaitGroup<T: Sendable>(
    start: (@escaping @Sendable (Result<T, GroupError>) -> Void) -> Void,
    stop: @escaping @Sendable () -> Void
) async throws(GroupError) -> T {
    let handOff = HandOffToken()
    let result = await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, GroupError>, Never>) in
            start {
                SanitizerHandOff.release(handOff)
                continuation.resume(returning: $0)
            }
        }
    } onCancel: {
        stop()
    }
    SanitizerHandOff.acquire(handOff)
    return try result.get()
}

/// An address for ``SanitizerHandOff`` to mark a group's hand-off with.
private final class HandOffToken: Sendable {}

/// A member of a group as the group sends it: its request, type-erased.
struct GroupMember: Sendable {
    let request: any Request
    private let sender: @Sendable (Dispatcher, @escaping @Sendable (Result<any AnyResponse, NetworkError>) -> Void) -> RequestHandle

    init<R: Request>(_ request: R) {
        self.request = request
        // The token refreshes the member was made inside: the group sends it from its own queue, so a
        // chain or batch made by a refresh is still the refresh's (RefreshScope).
        let scope = RefreshScope.current
        sender = { dispatcher, done in
            // On the transport's queue: the group's bookkeeping is quick; user code goes to the callback queue.
            scope.run { dispatcher.send(request, completionQueue: .immediate) { result in done(result.map { $0 }) } }
        }
    }

    /// Sends the request; `done` gets its result once, on the transport's queue.
    func send(on dispatcher: Dispatcher, _ done: @escaping @Sendable (Result<any AnyResponse, NetworkError>) -> Void) -> RequestHandle {
        sender(dispatcher, done)
    }
}

/// Runs `body` on the main actor: at once when already on the main thread (the callback queue is
/// `.main` by default, so a delegate hears right after the closure), else on the main queue.
func onMainActor(_ body: @escaping @MainActor @Sendable () -> Void) {
    if Thread.isMainThread {
        MainActor.assumeIsolated { body() }
    } else {
        DispatchQueue.main.async { MainActor.assumeIsolated { body() } }
    }
}
