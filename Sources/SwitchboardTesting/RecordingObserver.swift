import Dispatch
import Foundation
import Switchboard

/// An observer that records every event it receives for one request type, for tests.
///
/// ```swift
/// let recorder = RecordingObserver<GetUserInfo>()
/// recorder.observe(client)
/// client.send(GetUserInfo(id: "1"))
/// let events = await recorder.waitForTerminalEvents(1)
/// ```
/// Thread-safe: events may arrive on any queue.
public final class RecordingObserver<R: Request>: Sendable {
    private struct State {
        var events: [RequestEvent<R>] = []
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    /// Creates an empty recorder.
    public init() {}

    /// Registers this recorder with `switchboard` for `R`, on `queue` (immediately, by default).
    @discardableResult
    public func observe(_ switchboard: Dispatcher, on queue: CallbackQueue = .immediate) -> ObservationToken {
        switchboard.addObserver(self, for: R.self, on: queue) { recorder, event in recorder.record(event) }
    }

    /// Records one event (the observer callback).
    public func record(_ event: RequestEvent<R>) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.events.append(event)
            let terminal = state.events.filter(\.isTerminal).count
            let (done, waiting) = state.waiters.partitioned { $0.count <= terminal }
            state.waiters = waiting
            return done.map(\.continuation)
        }
        ready.forEach { $0.resume() }
    }

    /// Every event so far, in arrival order.
    public var events: [RequestEvent<R>] { state.withLock { $0.events } }

    /// The terminal events so far.
    public var terminalEvents: [RequestEvent<R>] { events.filter(\.isTerminal) }

    /// Waits until at least `count` terminal events arrived or `timeout` passed; returns the events.
    public func waitForTerminalEvents(_ count: Int, timeout: TimeInterval = 10) async -> [RequestEvent<R>] {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let already = state.withLock { state -> Bool in
                if state.events.filter(\.isTerminal).count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if already {
                continuation.resume()
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [weak self] in
                self?.expireWaiters()
            }
        }
        return events
    }

    private func expireWaiters() {
        let expired = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            defer { state.waiters = [] }
            return state.waiters.map(\.continuation)
        }
        expired.forEach { $0.resume() }
    }
}

extension Array {
    fileprivate func partitioned(_ belongsInFirst: (Element) -> Bool) -> ([Element], [Element]) {
        var first: [Element] = [], second: [Element] = []
        for element in self {
            if belongsInFirst(element) { first.append(element) } else { second.append(element) }
        }
        return (first, second)
    }
}
