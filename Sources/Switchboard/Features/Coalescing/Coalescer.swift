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
    private let table = Locked<[CoalescingKey: SharedTransfer]>([:])

    /// Starts `request` on `transport`, or joins the identical transfer in flight. `callbacks` must have
    /// no head callback (the shared transfer has one head for all).
    func perform(_ request: TransportRequest, key: CoalescingKey, options: TransferOptions, callbacks: TransferCallbacks, on transport: any Transport) -> any TransportTask {
        let waiter = Waiter(callbacks)
        let (shared, isNew) = table.withLock { [table] entries -> (SharedTransfer, Bool) in
            if let existing = entries[key], existing.join(waiter) { return (existing, false) }
            let created = SharedTransfer(key: key, first: waiter, table: table)
            entries[key] = created
            return (created, true)
        }
        if isNew { shared.start(request, options: options, on: transport) }
        return CoalescedTask(shared: shared, waiter: waiter)
    }

    /// The number of distinct transfers in flight (for tests).
    var sharedCount: Int { table.withLock { $0.count } }
}

/// One send waiting for a shared transfer: its callbacks, and whether its completion was called.
///
/// Its progress and its completion never cross: a cancel that comes (from any thread) while a
/// progress callback runs is delivered by that callback's thread right after it, so the send never
/// hears progress after its terminal event.
final class Waiter: Sendable {
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
    private let delivery = Locked(Delivery())

    init(_ callbacks: TransferCallbacks) {
        self.callbacks = callbacks
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
        var waiters: [Waiter]
        var task: (any TransportTask)?
        /// Every waiter left before the end: the transfer is (being) cancelled.
        var abandoned = false
        var ended = false
    }

    let key: CoalescingKey
    private let state: Locked<State>
    private let table: Locked<[CoalescingKey: SharedTransfer]>

    init(key: CoalescingKey, first: Waiter, table: Locked<[CoalescingKey: SharedTransfer]>) {
        self.key = key
        self.table = table
        state = Locked(State(waiters: [first]))
    }

    /// Adds a waiter unless the transfer ended or was abandoned. Called under the table's lock.
    func join(_ waiter: Waiter) -> Bool {
        state.withLock { state in
            guard !state.ended, !state.abandoned else { return false }
            state.waiters.append(waiter)
            return true
        }
    }

    func start(_ request: TransportRequest, options: TransferOptions, on transport: any Transport) {
        let callbacks = TransferCallbacks(
            progress: { [self] progress in
                let waiters = state.withLock { $0.waiters }
                for waiter in waiters { waiter.progress(progress) }
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
        let (waiters, task) = state.withLock { state in
            defer {
                state.ended = true
                state.waiters = []
                state.task = nil
            }
            return (state.waiters, state.task)
        }
        withExtendedLifetime(task) {}  // released outside the lock
        for waiter in waiters where waiter.claim() { waiter.callbacks.completion(result) }
    }

    /// A waiter left (its send was cancelled or timed out). The last one to leave cancels the transfer.
    func leave(_ waiter: Waiter) {
        let (abandon, task) = state.withLock { state -> (Bool, (any TransportTask)?) in
            state.waiters.removeAll { $0 === waiter }
            guard state.waiters.isEmpty, !state.ended, !state.abandoned else { return (false, nil) }
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
            if table[key] === self { table[key] = nil }
        }
    }
}

/// One send's handle on a shared transfer.
private final class CoalescedTask: TransportTask {
    let shared: SharedTransfer
    let waiter: Waiter

    init(shared: SharedTransfer, waiter: Waiter) {
        self.shared = shared
        self.waiter = waiter
    }

    /// Leaves the shared transfer and reports `cancelled` to this send alone, never from inside
    /// `cancel`: from a global queue, or, when a progress callback of this send is running, from its
    /// thread right after it. Other sends keep waiting; the last to leave cancels the transfer.
    func cancel() {
        let delivery = waiter.claimForCancel()
        guard delivery != .none else { return }
        shared.leave(waiter)
        guard delivery == .now else { return }
        let completion = waiter.callbacks.completion
        DispatchQueue.global().async { completion(.failure(.cancelled)) }
    }
}
