import Dispatch
import Foundation
import Switchboard

/// An observer that records every event it receives for one request type, for tests, with waits that
/// end when enough has arrived or a timeout passes (never hanging a test).
///
/// ```swift
/// let recorder = RecordingObserver<GetUserInfo>()
/// recorder.observe(client)
/// client.send(GetUserInfo(id: "1"))
/// let event = try await recorder.terminalEvent()          // throws RecordingObserver.Timeout after 5 s
/// #expect(event.response?.json["user"]["name"] == "Ada")
/// ```
/// The waits are `async` and work the same in XCTest (`try await` in an `async` test method) and in
/// Swift Testing. Thread-safe: events may arrive on any queue.
public final class RecordingObserver<R: Request>: Sendable {
    /// A wait that ended before what it waited for arrived. Its description lists what did arrive, so
    /// a failing test says why.
    public struct Timeout: Error, CustomStringConvertible {
        /// What the wait waited for.
        public let waitingFor: String
        /// The seconds waited.
        public let seconds: TimeInterval
        /// The events recorded when it gave up.
        public let events: [RequestEvent<R>]

        public var description: String {
            let seen = events.map { "#\($0.sendID) \(Self.name(of: $0))" }.joined(separator: ", ")
            return "RecordingObserver<\(R.self)>: no \(waitingFor) within \(seconds) s; recorded: [\(seen)]"
        }

        static func name(of event: RequestEvent<R>) -> String {
            switch event.kind {
            case .started: "started"
            case .progress: "progress"
            case .cached: "cached"
            case .succeeded(let response): "succeeded \(response.statusCode)"
            case .failed(_, let error): "failed (\(error))"
            case .cancelled: "cancelled"
            }
        }
    }

    private struct Waiter {
        let id: UInt64
        let isSatisfied: @Sendable ([RequestEvent<R>]) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var events: [RequestEvent<R>] = []
        var waiters: [Waiter] = []
        var nextWaiter: UInt64 = 0
        var token: ObservationToken?
    }

    private let state = Locked(State())

    /// Creates an empty recorder.
    public init() {}

    /// Registers this recorder with `dispatcher` for `R`, on `queue` (by default on the thread that
    /// produced each event, so events are recorded as soon as they happen).
    @discardableResult
    public func observe(_ dispatcher: Dispatcher, on queue: CallbackQueue = .immediate) -> ObservationToken {
        let token = dispatcher.addObserver(self, for: R.self, on: queue) { recorder, event in recorder.record(event) }
        state.withLock { $0.token = token }
        return token
    }

    /// Stops recording (the registrations made by ``observe(_:on:)`` end); what was recorded stays.
    public func stop() {
        state.withLock { $0.token }?.cancel()
    }

    /// Records one event (the observer callback; call it yourself to feed a recorder by hand).
    public func record(_ event: RequestEvent<R>) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.events.append(event)
            let events = state.events
            var ready: [CheckedContinuation<Bool, Never>] = []
            state.waiters.removeAll { waiter in
                guard waiter.isSatisfied(events) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        ready.forEach { $0.resume(returning: true) }
    }

    /// Forgets every event recorded so far.
    public func reset() {
        state.withLock { $0.events = [] }
    }

    /// Every event so far, in arrival order.
    public var events: [RequestEvent<R>] { state.withLock { $0.events } }

    /// The terminal events so far.
    public var terminalEvents: [RequestEvent<R>] { events.filter(\.isTerminal) }

    /// The events of one send, in order.
    public func events(ofSend sendID: UInt64) -> [RequestEvent<R>] { events.filter { $0.sendID == sendID } }

    /// Waits until at least `count` terminal events arrived or `timeout` passed; returns the events
    /// recorded then (check their count: this form does not throw).
    public func waitForTerminalEvents(_ count: Int, timeout: TimeInterval = 10) async -> [RequestEvent<R>] {
        _ = await wait(timeout: timeout) { $0.lazy.filter(\.isTerminal).count >= count }
        return events
    }

    /// Waits until at least `count` events of any kind arrived or `timeout` passed; returns the events
    /// recorded then.
    public func waitForEvents(_ count: Int, timeout: TimeInterval = 10) async -> [RequestEvent<R>] {
        _ = await wait(timeout: timeout) { $0.count >= count }
        return events
    }

    /// The first terminal event (of send `sendID`, when given), waiting up to `timeout` for it.
    /// - Throws: ``Timeout`` when none arrived in time.
    public func terminalEvent(ofSend sendID: UInt64? = nil, timeout: TimeInterval = 5) async throws -> RequestEvent<R> {
        let matches: @Sendable (RequestEvent<R>) -> Bool = { $0.isTerminal && (sendID == nil || $0.sendID == sendID) }
        if await wait(timeout: timeout, until: { $0.contains(where: matches) }), let event = events.first(where: matches) {
            return event
        }
        throw Timeout(waitingFor: sendID.map { "terminal event of send #\($0)" } ?? "terminal event", seconds: timeout, events: events)
    }

    /// The events recorded once at least `count` arrived, waiting up to `timeout`.
    /// - Throws: ``Timeout`` when fewer arrived in time.
    public func events(count: Int, timeout: TimeInterval = 5) async throws -> [RequestEvent<R>] {
        guard await wait(timeout: timeout, until: { $0.count >= count }) else {
            throw Timeout(waitingFor: "\(count) events", seconds: timeout, events: events)
        }
        return events
    }

    /// Waits until `isSatisfied` holds for the events recorded, or `timeout` passes; returns whether it held.
    private func wait(timeout: TimeInterval, until isSatisfied: @escaping @Sendable ([RequestEvent<R>]) -> Bool) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = state.withLock { state -> UInt64? in
                if isSatisfied(state.events) { return nil }
                state.nextWaiter += 1
                state.waiters.append(Waiter(id: state.nextWaiter, isSatisfied: isSatisfied, continuation: continuation))
                return state.nextWaiter
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            DispatchQueue(label: "switchboard.testing.timeout").asyncAfter(deadline: .now() + timeout) { [weak self] in
                self?.expire(id)
            }
        }
    }

    private func expire(_ id: UInt64) {
        let expired = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index).continuation
        }
        expired?.resume(returning: false)
    }
}
