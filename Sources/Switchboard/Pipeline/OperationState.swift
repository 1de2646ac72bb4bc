import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The phase of a send (outside the generic ``RequestOperation``, as ``OperationState`` is, so that
/// its state needs no generic metadata: every lock taken in a send used to look it up).
enum OperationPhase {
    /// Registered; `started` is being posted and the request built.
    case pending
    /// Cancelled before the first attempt: `start` delivers `cancelled` after `started`.
    case pendingCancelled
    /// The interceptors adapt this attempt's request, in `task` (the deadline runs).
    case adapting(attempt: Int, task: Task<Void, Never>?)
    /// The response cache is read for this attempt's final request (the deadline runs).
    case lookingUp(attempt: Int)
    /// `transport.perform` for this attempt is being called.
    case starting(attempt: Int)
    /// This attempt's transfer runs.
    case running(attempt: Int, task: any TransportTask)
    /// This attempt's transfer ended; its response is being validated (the deadline no longer runs).
    case validating(attempt: Int)
    /// The interceptors decide whether failed attempt `attempt` is retried, in `task`.
    case deciding(attempt: Int, task: Task<Void, Never>?)
    /// Waiting to retry.
    case waiting
    /// Attempt `attempt` was told to stop because of `reason` (a cancel or its deadline); its
    /// completion ends it with that reason (or the sweeper does, once the grace period has passed).
    case stopping(attempt: Int, reason: NetworkError)
    case finished
}

/// What an attempt, and then the send, ends with, before the request is added to the response.
typealias Outcome = Result<ResponseParts, NetworkError>

/// A send's mutable state, all of it behind its operation's one lock. Every transition is a method
/// here: it changes the state and returns what the driver does next, outside the lock.
struct OperationState {
    var phase = OperationPhase.pending
    /// The attempt in progress (or the last one), from 1.
    var attempts = 0
    /// Transfers started so far: what the terminal event reports as `attempts`.
    var transfers = 0
    /// When the sweeper acts (uptime nanoseconds): the attempt's deadline while it runs, the end of the
    /// grace period while it stops, `.max` otherwise. An earlier moment is told to the sweeper.
    var deadline = UInt64.max {
        didSet { if deadline < oldValue { deadlines?.ensure(by: deadline) } }
    }
    /// The dispatcher's sweeper (`nil` for an operation no dispatcher watches).
    let deadlines: DeadlineSweeper?
    /// What the attempts send (before the adapters, which run again for each), and on which transport.
    var route: (prepared: RequestBuilder.Prepared, transport: any Transport)?
    /// What the current attempt sent, for the interceptors' retry decision.
    var sent: URLRequest?
    /// Every failed attempt's error so far.
    var errors: [NetworkError] = []
    /// While deciding: the attempt's outcome and the retry policy's delay, for the deadline.
    var undecided: (outcome: Outcome, policyDelay: TimeInterval?)?
    /// Whether and how the send may use the response cache (set once, with the first attempt).
    var cacheSetting: CacheSetting?
    /// Whether the cache answered a lookup (a lookup a deadline cut short leaves it to the next attempt).
    var cacheRead = false
    /// What the current attempt does with the response cache, if anything.
    var cache: CacheContext?
    /// The last event posted before the terminal one (replayed to late subscribers).
    var lastEvent: LastEvent?
    /// The last progress the transport reported.
    var progress: TransferProgress?
    /// The URL of the current attempt's transfer.
    var url: URL?

    init(deadlines: DeadlineSweeper?) {
        self.deadlines = deadlines
    }

    /// How long a transfer told to stop may take to report before the send ends without it.
    static var stopGrace: UInt64 { 1_000_000_000 }

    /// What an attempt does first.
    enum Begin { case adapt, lookUp(CacheSetting), transfer }

    /// Starts attempt `number` from `pending` or `waiting`; `nil` when the send was cancelled or ended.
    mutating func begin(_ number: Int, route: (RequestBuilder.Prepared, any Transport), deadline: UInt64, cacheSetting: CacheSetting?, intercepts: Bool) -> Begin? {
        if let cacheSetting { self.cacheSetting = cacheSetting }
        switch phase {
        case .pending, .waiting: break
        default: return nil
        }
        attempts = number
        self.route = route
        self.deadline = deadline
        guard !intercepts else {
            phase = .adapting(attempt: number, task: nil)
            sent = nil
            return .adapt
        }
        return lookUpOrStart(number).map(Begin.lookUp) ?? .transfer
    }

    /// `lookingUp` for a send that uses the cache until the cache has answered once, otherwise
    /// `starting` (a transfer counted). Returns the setting to look up with.
    mutating func lookUpOrStart(_ number: Int) -> CacheSetting? {
        if let setting = cacheSetting, !cacheRead {
            phase = .lookingUp(attempt: number)
            return setting
        }
        phase = .starting(attempt: number)
        transfers += 1
        return nil
    }

    /// What follows the interceptors' adapt of attempt `number`.
    enum Adapted { case ignore, lookUp(CacheSetting), transfer, stopped(NetworkError), failed(NetworkError) }

    mutating func adapted(_ number: Int, failure: NetworkError?) -> Adapted {
        switch phase {
        case .adapting(let attempt, _) where attempt == number:
            guard let failure else { return lookUpOrStart(number).map(Adapted.lookUp) ?? .transfer }
            phase = .finished
            return .failed(failure)
        case .stopping(let attempt, let reason) where attempt == number:
            return .stopped(reason)  // a cancel or the deadline (a retry may follow a deadline)
        default:
            return .ignore
        }
    }

    /// Keeps the task of attempt `number`'s interceptors' adapt; `false` when the attempt was stopped
    /// before it was stored (then the task is cancelled).
    mutating func keepAdapting(_ task: Task<Void, Never>, attempt number: Int) -> Bool {
        switch phase {
        case .adapting(let attempt, nil) where attempt == number:
            phase = .adapting(attempt: number, task: task)
            return true
        case .stopping(let attempt, _) where attempt == number:
            return false
        case .finished:
            return false  // cancelled before the task was stored
        default:
            return true
        }
    }

    /// Keeps the task of the interceptors' retry decision about attempt `number`; `false` when the send
    /// ended meanwhile (a cancel: the decision is not needed).
    mutating func keepDeciding(_ task: Task<Void, Never>, attempt number: Int) -> Bool {
        switch phase {
        case .deciding(let attempt, nil) where attempt == number:
            phase = .deciding(attempt: number, task: task)
            return true
        case .deciding, .validating, .running, .starting, .adapting, .waiting:
            return true
        default:
            return false
        }
    }

    /// Whether attempt `number` is still looking up the cache (a late disk read of an ended attempt is
    /// not).
    func isLookingUp(_ number: Int) -> Bool {
        if case .lookingUp(let attempt) = phase { attempt == number } else { false }
    }

    /// Ends attempt `number`'s cache lookup: `true` to answer from the cache (the send is finished),
    /// `false` to start the transfer, `nil` when a cancel or the deadline ended the attempt meanwhile.
    mutating func lookedUp(_ number: Int, context: CacheContext?, fresh: Bool) -> Bool? {
        guard case .lookingUp(let attempt) = phase, attempt == number else { return nil }
        cache = context
        cacheRead = true
        if fresh {
            phase = .finished
            return true
        }
        // `starting` before a `cached` event: a cancel from now on stops the transfer, whose end can
        // only follow the event.
        phase = .starting(attempt: number)
        transfers += 1
        return false
    }

    /// Attempt `number`'s transfer was started as `task`: `false` when it must be told to stop (a cancel
    /// or the deadline came while `perform` ran, or the transport already completed).
    mutating func running(_ number: Int, task: any TransportTask, url: URL?) -> Bool {
        guard case .starting(let attempt) = phase, attempt == number else { return false }
        phase = .running(attempt: number, task: task)
        self.url = url
        return true
    }

    /// The reason attempt `number` was stopped before its transfer began (a cancel or the deadline
    /// while it was starting: an `.immediate` observer of `cached` may cancel), or `nil` to go on. The
    /// attempt then ends without a transfer, and the sweeper no longer ends it.
    mutating func stoppedBeforeTransfer(_ number: Int) -> NetworkError? {
        guard case .stopping(let attempt, let reason) = phase, attempt == number else { return nil }
        deadline = .max
        return reason
    }

    /// Whether attempt `number`'s transfer runs and wasn't told to stop (progress is posted only then).
    func isTransferring(_ number: Int) -> Bool {
        switch phase {
        case .starting(let attempt), .running(let attempt, _): attempt == number
        default: false
        }
    }

    /// The transport's completion of attempt `number`: whether it is still current, the reason it was
    /// stopped (if it was), and the phase it replaced (released by the caller, outside the lock).
    mutating func transferEnded(_ number: Int) -> (current: Bool, stopReason: NetworkError?, replaced: OperationPhase?) {
        switch phase {
        case .starting(let attempt) where attempt == number, .running(let attempt, _) where attempt == number:
            let replaced = phase
            phase = .validating(attempt: number)
            deadline = .max
            return (true, nil, replaced)
        case .stopping(let attempt, let reason) where attempt == number:
            return (true, reason, nil)
        default:
            return (false, nil, nil)
        }
    }

    /// Hands failed attempt `number` to the interceptors' retry decision: the request it sent and the
    /// errors so far, or `nil` when the attempt already ended, was cancelled (a cancel is never
    /// retried: the caller settles it) or sent nothing to show them.
    mutating func beginDeciding(_ number: Int, error: NetworkError, outcome: Outcome, policyDelay: TimeInterval?, deadline: UInt64) -> (
        sent: OutgoingRequest, errors: [NetworkError]
    )? {
        switch phase {
        // Stopped by its deadline, not by a cancel: a cancel is never retried.
        case .validating(let attempt) where attempt == number, .stopping(let attempt, .timedOut) where attempt == number:
            guard let sent, let outgoing = try? OutgoingRequest(sent) else { return nil }
            errors.append(error)
            phase = .deciding(attempt: number, task: nil)
            undecided = (outcome, policyDelay)
            self.deadline = deadline
            return (outgoing, errors)
        default:
            return nil
        }
    }

    /// What follows the decision about attempt `number`.
    enum Settled { case ignore, cancelled, retry(TimeInterval), finish }

    /// Ends attempt `number`: a retry after `delay`, or the send's end. `decidedByInterceptors`: their
    /// decision counts only while they are still asked (not after the deadline took it from them).
    mutating func settle(_ number: Int, delay: TimeInterval?, decidedByInterceptors: Bool) -> Settled {
        switch phase {
        case .deciding(let attempt, _) where attempt == number && decidedByInterceptors:
            undecided = nil
        case .validating(let attempt) where attempt == number && !decidedByInterceptors:
            break
        case .stopping(let attempt, let reason) where attempt == number:
            if reason.isCancelled {
                phase = .finished
                return .cancelled
            }
        default:
            return .ignore
        }
        guard let delay else {
            phase = .finished
            return .finish
        }
        phase = .waiting
        deadline = .max
        return .retry(delay)
    }

    /// What a cancel does once the state is updated.
    enum Cancel { case none, deliver, stop(any TransportTask), cancelTask(Task<Void, Never>?, deliver: Bool) }

    mutating func cancel(now: UInt64) -> Cancel {
        let grace = now &+ Self.stopGrace
        switch phase {
        case .finished, .pendingCancelled:
            return .none
        case .pending:
            phase = .pendingCancelled
            return .none
        case .deciding(_, let task):
            phase = .finished
            undecided = nil
            return .cancelTask(task, deliver: true)
        case .lookingUp, .waiting:
            // Nothing to stop: a cache answer or a retry timer that comes later finds the send ended.
            phase = .finished
            return .deliver
        case .adapting(_, let task):
            // Ends now, whether or not the interceptor heeds its task's cancel: what it returns later
            // finds the send ended.
            phase = .finished
            return .cancelTask(task, deliver: true)
        case .stopping(let attempt, let reason):
            // A cancel during a deadline's stop turns it into a cancel, within the grace period.
            if !reason.isCancelled { phase = .stopping(attempt: attempt, reason: .cancelled) }
            deadline = min(deadline, grace)
            return .none
        case .starting(let attempt), .validating(let attempt):
            phase = .stopping(attempt: attempt, reason: .cancelled)
            deadline = grace
            return .none
        case .running(let attempt, let task):
            phase = .stopping(attempt: attempt, reason: .cancelled)
            deadline = grace
            return .stop(task)
        }
    }

    /// What the sweeper does to a send.
    enum Expire {
        case none
        /// Tell the transfer to stop (its deadline passed).
        case stop(any TransportTask)
        /// Cancel the interceptors' adapt (the deadline passed while they adapted).
        case cancelAdapting(Task<Void, Never>?)
        /// Cancel the interceptors' decision and let the retry policy settle the attempt alone.
        case cancelDeciding(Task<Void, Never>?, attempt: Int, outcome: Outcome, delay: TimeInterval?)
        /// The transfer didn't report its stop in time (or there was none to stop): end the attempt.
        case endWithoutTransport(attempt: Int, reason: NetworkError)
    }

    mutating func expire(now: UInt64, timeout: TimeInterval) -> Expire {
        guard now >= deadline else { return .none }
        let grace = now &+ Self.stopGrace
        let timedOut = NetworkError.timedOut(after: timeout)
        switch phase {
        case .starting(let attempt):
            phase = .stopping(attempt: attempt, reason: timedOut)
            deadline = grace
            return .none  // the attempt stops the task once `perform` returns
        case .lookingUp(let attempt):
            // Nothing to stop: the attempt ends now (the retry policy decides what follows).
            phase = .stopping(attempt: attempt, reason: timedOut)
            deadline = .max
            return .endWithoutTransport(attempt: attempt, reason: timedOut)
        case .adapting(let attempt, let task):
            phase = .stopping(attempt: attempt, reason: timedOut)
            deadline = grace
            return .cancelAdapting(task)
        case .running(let attempt, let task):
            phase = .stopping(attempt: attempt, reason: timedOut)
            deadline = grace
            return .stop(task)
        case .stopping(let attempt, let reason):
            deadline = .max
            return .endWithoutTransport(attempt: attempt, reason: reason)
        case .deciding(let attempt, let task):
            // The interceptors took longer than the deadline: the retry policy decides alone.
            guard let undecided else { return .none }
            deadline = .max
            phase = .validating(attempt: attempt)
            return .cancelDeciding(task, attempt: attempt, outcome: undecided.outcome, delay: undecided.policyDelay)
        default:
            deadline = .max
            return .none
        }
    }

    /// Finishes a send whose next attempt could not be built or adapted: whether this call did, and
    /// whether a cancel came first (then the send ends `cancelled`, not with the build's error).
    mutating func finishBeforeAttempt() -> (finishes: Bool, cancelled: Bool) {
        switch phase {
        case .pending, .waiting:
            phase = .finished
            return (true, false)
        case .pendingCancelled:
            phase = .finished
            return (true, true)
        default:
            return (false, false)
        }
    }

    /// Finishes a send cancelled while pending: `true` if this call did.
    mutating func takePendingCancel() -> Bool {
        guard case .pendingCancelled = phase else { return false }
        phase = .finished
        return true
    }
}

/// The last non-terminal event of a send, without its request (the operation rebuilds the
/// `RequestEvent` when a late subscriber asks).
enum LastEvent {
    case started
    case progress(TransferProgress, attempts: Int)
    /// The cache's answer, before the network's.
    case cached(ResponseParts)
}
