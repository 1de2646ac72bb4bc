import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends identical transfers that are in flight at the same time once (a ``Dispatcher`` has one).
///
/// The first send of a ``CoalescingKey`` starts a ``SharedTransfer``; an identical send made before it
/// ends joins it instead of starting another. Each send keeps its own attempt above this: its own
/// events, deadline, validation, retries and terminal event. When the shared transfer ends, every
/// joined send gets its result; a send that leaves (a cancel, its deadline) gets `cancelled` alone, and
/// the transfer itself is cancelled only when no send waits for it any more.
///
/// Lock order: the table, then a shared transfer's state; never the other way round.
final class Coalescer: Sendable {
    /// Locked: senders join and leave from any thread; a shared transfer removes itself from its transport's queue.
    private let table = Locked<[CoalescingKey: SharedTransfer]>([:])

    /// Starts `request` on `transport`, or joins the identical transfer in flight. `callbacks` must have
    /// no head callback (the shared transfer has one head for all).
    func perform(_ request: TransportRequest, key: CoalescingKey, options: TransferOptions, callbacks: TransferCallbacks, on transport: any Transport) -> any TransportTask {
        let (waiter, isNew) = table.withLock { [table] entries -> (Waiter, Bool) in
            if let existing = entries[key] {
                let joining = Waiter(callbacks, shared: existing)
                if existing.join(joining) { return (joining, false) }
            }
            let created = SharedTransfer(key: key, table: table)
            let first = Waiter(callbacks, shared: created)
            created.join(first)
            entries[key] = created
            return (first, true)
        }
        if isNew { waiter.shared.start(request, options: options, on: transport) }
        return waiter
    }

    /// The number of distinct transfers in flight (for tests).
    var sharedCount: Int { table.withLock { $0.count } }
}

/// One send waiting for a shared transfer: its callbacks, whether its completion was called, and its
/// handle on the transfer (the task ``Coalescer/perform(_:key:options:callbacks:on:)`` returns).
///
/// Its progress and its completion never cross: a cancel that comes (from any thread) while a
/// progress callback runs is delivered by that callback's thread right after it, so the send never
/// hears progress after its terminal event.
final class Waiter: TransportTask {
    enum CancelDelivery {
        /// The completion was already called or claimed.
        case none
        /// Deliver `cancelled` now (no progress callback runs).
        case now
        /// The progress callback running now delivers `cancelled` when it returns.
        case afterProgress
    }

    private struct Delivery {
        var finished = false
        var progressRunning = false
        var cancelAfterProgress = false
    }

    let callbacks: TransferCallbacks
    let shared: SharedTransfer
    /// Locked: the shared transfer's queue delivers while the waiter's own cancel or deadline may leave.
    private let delivery = Locked(Delivery())

    init(_ callbacks: TransferCallbacks, shared: SharedTransfer) {
        self.callbacks = callbacks
        self.shared = shared
    }

    /// Leaves the shared transfer and reports `cancelled` to this send alone, never from inside
    /// `cancel`: from a global queue, or, when a progress callback of this send is running, from its
    /// thread right after it. Other sends keep waiting; the last to leave cancels the transfer.
    func cancel() {
        let delivery = claimForCancel()
        guard delivery != .none else { return }
        shared.leave(self)
        guard delivery == .now else { return }
        let completion = callbacks.completion
        WorkerQueue.async { completion(.failure(.cancelled)) }
    }

    /// Passes a progress value on, unless the waiter finished; then delivers a cancel that came meanwhile.
    func progress(_ value: TransferProgress) {
        guard let progress = callbacks.progress else { return }
        let running = delivery.withLock { delivery -> Bool in
            guard !delivery.finished else { return false }
            delivery.progressRunning = true
            return true
        }
        guard running else { return }
        progress(value)
        let cancel = delivery.withLock { delivery -> Bool in
            delivery.progressRunning = false
            defer { delivery.cancelAfterProgress = false }
            return delivery.cancelAfterProgress
        }
        if cancel { callbacks.completion(.failure(.cancelled)) }
    }

    /// Takes the right to call the completion; true once, for the first caller. The transport's
    /// completion uses it (on the transport's queue, so never during a progress callback).
    func claim() -> Bool {
        delivery.withLock { delivery in
            guard !delivery.finished else { return false }
            delivery.finished = true
            return true
        }
    }

    /// Takes the right to call the completion for a cancel, and says who delivers it.
    func claimForCancel() -> CancelDelivery {
        delivery.withLock { delivery in
            guard !delivery.finished else { return .none }
            delivery.finished = true
            guard delivery.progressRunning else { return .now }
            delivery.cancelAfterProgress = true
            return .afterProgress
        }
    }
}

/// A transfer several identical sends wait for.
final class SharedTransfer: Sendable {
    private struct State {
        /// The first waiter, then the others in the order they joined (most transfers have one, kept
        /// out of an array).
        var first: Waiter?
        var others: [Waiter] = []
        var task: (any TransportTask)?
        /// Every waiter left before the end: the transfer is (being) cancelled.
        var abandoned = false
        var ended = false
    }

    let key: CoalescingKey
    /// Locked: waiters join and leave from any thread while the transport's queue fans out.
    private let state: Locked<State>
    /// The coalescer's table (its lock, taken before `state`), to leave it when the last waiter goes.
    private let table: Locked<[CoalescingKey: SharedTransfer]>

    init(key: CoalescingKey, table: Locked<[CoalescingKey: SharedTransfer]>) {
        self.key = key
        self.table = table
        state = Locked(State())
    }

    /// Adds a waiter unless the transfer ended or was abandoned. Called under the table's lock.
    @discardableResult
    func join(_ waiter: Waiter) -> Bool {
        state.withLock { state in
            guard !state.ended, !state.abandoned else { return false }
            if state.first == nil && state.others.isEmpty {
                state.first = waiter
            } else {
                state.others.append(waiter)
            }
            return true
        }
    }

    /// Calls `body` for each waiter still here, in the order they joined, outside the lock.
    private func forEachWaiter(clearing: Bool = false, _ body: (Waiter) -> Void) -> (any TransportTask)? {
        let (first, others, task) = state.withLock { state in
            defer {
                if clearing {
                    state.ended = true
                    state.first = nil
                    state.others = []
                    state.task = nil
                }
            }
            return (state.first, state.others, state.task)
        }
        if let first { body(first) }
        for waiter in others { body(waiter) }
        return task
    }

    func start(_ request: TransportRequest, options: TransferOptions, on transport: any Transport) {
        let callbacks = TransferCallbacks(
            progress: { [self] progress in
                _ = forEachWaiter { $0.progress(progress) }
            },
            completion: { [self] result in complete(result) }
        )
        let task = transport.perform(request, options: options, callbacks: callbacks)
        let cancelNow = state.withLock { state -> Bool in
            guard !state.ended else { return false }
            state.task = task
            return state.abandoned  // every waiter left while `perform` ran
        }
        if cancelNow { task.cancel() }
    }

    /// The transport's completion: every waiter still here gets the result, in the order they joined.
    private func complete(_ result: Result<TransportResponse, NetworkError>) {
        leaveTable()
        let task = forEachWaiter(clearing: true) { waiter in
            if waiter.claim() { waiter.callbacks.completion(result) }
        }
        withExtendedLifetime(task) {}  // released outside the lock
    }

    /// A waiter left (its send was cancelled or timed out). The last one to leave cancels the transfer.
    func leave(_ waiter: Waiter) {
        let (abandon, task) = state.withLock { state -> (Bool, (any TransportTask)?) in
            if state.first === waiter {
                state.first = nil
            } else {
                state.others.removeAll { $0 === waiter }
            }
            guard state.first == nil, state.others.isEmpty, !state.ended, !state.abandoned else { return (false, nil) }
            state.abandoned = true
            return (true, state.task)  // nil while `perform` runs: `start` cancels it
        }
        guard abandon else { return }
        leaveTable()
        task?.cancel()
    }

    /// Removes this transfer from the table, so later sends start a new one.
    private func leaveTable() {
        table.withLock { table in
            if let index = table.index(forKey: key), table.values[index] === self { table.remove(at: index) }
        }
    }
}
