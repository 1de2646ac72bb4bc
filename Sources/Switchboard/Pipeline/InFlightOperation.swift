import Foundation

/// What a dispatcher needs of any in-flight send, whatever its request type: the sweeper's deadline,
/// cancel, and what ``Dispatcher/runningRequests`` and late stream subscribers see.
protocol InFlightOperation: AnyObject, Sendable {
    var id: UInt64 { get }
    var isFinished: Bool { get }
    /// `ObjectIdentifier` of the request type.
    var requestTypeKey: ObjectIdentifier { get }
    /// The object the send belongs to (``Dispatcher/send(_:owner:progress:completion:)``), held weakly.
    var owner: OwnerLink? { get }
    /// What the send is doing, for ``Dispatcher/runningRequests``.
    var snapshot: RunningRequest { get }
    /// The last event posted for the send (not a terminal one), if it is an event of `T`.
    func lastEvent<T: Request>(as type: T.Type) -> RequestEvent<T>?
    /// The last event posted for the send, erased.
    var lastAnyEvent: AnyRequestEvent? { get }
    func cancel()
    /// Ends the send if its attempt's deadline (or a cancel's grace period) has passed by `now`
    /// (uptime nanoseconds), whatever the transport does.
    func expire(now: UInt64)
    /// When the sweeper must look at the send next (uptime nanoseconds): its attempt's deadline, a
    /// stop's grace period, or `.max`.
    var deadline: UInt64 { get }
}

extension RequestOperation {
    var isFinished: Bool {
        state.withLock { if case .finished = $0.phase { true } else { false } }
    }

    var requestTypeKey: ObjectIdentifier { ObjectIdentifier(R.self) }

    var deadline: UInt64 { state.withLock { $0.deadline } }

    var snapshot: RunningRequest {
        let (url, progress, attempts) = state.withLock { ($0.url, $0.progress, $0.attempts) }
        return RunningRequest(id: id, request: request, url: url, startedAt: startedAt, progress: progress, attempts: attempts, hasOwner: owner != nil)
    }

    func lastEvent<T: Request>(as type: T.Type) -> RequestEvent<T>? {
        unfinishedLastEvent.map(event(from:)) as? RequestEvent<T>
    }

    var lastAnyEvent: AnyRequestEvent? {
        unfinishedLastEvent.map { AnyRequestEvent(event(from: $0)) }
    }

    /// The last event, unless the send has finished: its terminal event is then being delivered, and a
    /// late subscriber either gets it live or came after it (a replayed `started` would have no end).
    private var unfinishedLastEvent: LastEvent? {
        state.withLock {
            if case .finished = $0.phase { return nil }
            return $0.lastEvent
        }
    }

    /// The event `last` stands for.
    func event(from last: LastEvent) -> RequestEvent<R> {
        switch last {
        case .started: RequestEvent(.started(request), sendID: id)
        case .progress(let progress, let attempts): RequestEvent(.progress(request, progress), sendID: id, attempts: attempts)
        case .cached(let parts): RequestEvent(.cached(Response(request: request, parts: parts)), sendID: id)
        }
    }
}
