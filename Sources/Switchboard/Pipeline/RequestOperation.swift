import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a dispatcher needs of any in-flight send, whatever its request type.
protocol InFlightOperation: AnyObject, Sendable {
    var id: UInt64 { get }
    var isFinished: Bool { get }
    func cancel()
    /// Ends the send if its attempt's deadline (or a cancel's grace period) has passed by `now`
    /// (uptime nanoseconds), whatever the transport does.
    func expire(now: UInt64)
}

/// One send of one request, from build to its single terminal event.
///
/// The state lives in a lock; whoever moves it to `finished` first delivers the terminal event, so there
/// is exactly one, whatever the retries. While a transfer runs, a cancel only asks the transport to stop:
/// the transport's completion (which comes after its last progress callback, on the same queue) then
/// delivers `cancelled`, so no progress event can follow the terminal event. The deadline of each
/// attempt is kept here, above the transport: the dispatcher's sweeper calls ``expire(now:)``, so a
/// transport that never calls back still ends in `timedOut` (or `cancelled`, a moment after a cancel).
final class RequestOperation<R: Request>: InFlightOperation {
    private enum Phase {
        /// Registered; `started` is being posted and the request built.
        case pending
        /// Cancelled before the first attempt: `start` delivers `cancelled` after `started`.
        case pendingCancelled
        /// `transport.perform` for this attempt is being called.
        case starting(attempt: Int)
        /// This attempt's transfer runs.
        case running(attempt: Int, task: any TransportTask)
        /// Waiting to retry.
        case waiting
        /// Cancel was asked during attempt `attempt`; its completion delivers `cancelled` (or the sweeper,
        /// once the grace period has passed).
        case cancelling(attempt: Int, since: UInt64)
        case finished
    }

    private struct State {
        var phase = Phase.pending
        /// Attempts started so far.
        var attempts = 0
        /// When the current attempt's deadline passes (uptime nanoseconds).
        var deadline = UInt64.max
        /// What the attempts send, and through which transport (for a retry after a deadline).
        var route: (request: URLRequest, transport: any Transport)?
    }

    /// How long a cancelled transfer may take to report before `cancelled` is delivered without it.
    static var cancelGrace: UInt64 { 1_000_000_000 }

    let id: UInt64
    let request: R
    let configuration: Configuration
    private let registry: ObserverRegistry
    private let completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?
    private let completionQueue: CallbackQueue
    private let onFinish: @Sendable (UInt64) -> Void
    private let state = Locked(State())
    private let accessories: [any RequestAccessory]
    private let hooks: [any ResponseHook]
    /// `nil` when logging is off, so a send without logging allocates nothing for it.
    private let log: RequestLog?

    init(
        id: UInt64,
        request: R,
        configuration: Configuration,
        registry: ObserverRegistry,
        completionQueue: CallbackQueue,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?,
        onFinish: @escaping @Sendable (UInt64) -> Void
    ) {
        self.id = id
        self.request = request
        self.configuration = configuration
        self.registry = registry
        self.completionQueue = completionQueue
        self.completion = completion
        self.onFinish = onFinish
        accessories = configuration.accessories + request.accessories
        hooks = (request.usesConfigurationResponseHooks ? configuration.responseHooks : []) + request.responseHooks
        log = configuration.logMode == .off ? nil : RequestLog(id: id, mode: configuration.logMode, logger: configuration.logger, redaction: configuration.redaction)
    }

    var isFinished: Bool {
        state.withLock { if case .finished = $0.phase { true } else { false } }
    }

    /// Posts `started`, builds the URLRequest and hands it to `transport`.
    func start(on transport: any Transport) {
        for accessory in accessories { accessory.willStart(request) }
        registry.post(RequestEvent<R>(.started(request), sendID: id))
        // A cancel that came before this point waited for `started` to be posted; deliver it now.
        if takePendingCancel() { return }
        let urlRequest: URLRequest
        do {
            urlRequest = try RequestBuilder.build(request, configuration: configuration)
        } catch {
            finish(.failure(error))
            return
        }
        log?.started(urlRequest)
        attempt(1, urlRequest, on: transport)
    }

    /// Delivers `cancelled` if a cancel came while pending; returns whether it did.
    private func takePendingCancel() -> Bool {
        let cancelled = state.withLock { state -> Bool in
            guard case .pendingCancelled = state.phase else { return false }
            state.phase = .finished
            return true
        }
        if cancelled { complete(.failure(.cancelled), attempts: 0) }
        return cancelled
    }

    private func attempt(_ number: Int, _ urlRequest: URLRequest, on transport: any Transport) {
        let timeout = request.timeout ?? configuration.timeout
        let proceed = state.withLock { state -> Bool in
            switch state.phase {
            case .pending, .waiting:
                state.phase = .starting(attempt: number)
                state.attempts = number
                state.route = (urlRequest, transport)
                state.deadline = DispatchTime.now().uptimeNanoseconds &+ Self.nanoseconds(timeout)
                return true
            default:
                return false  // cancelled (maybe by an observer of `started`) or finished
            }
        }
        guard proceed else {
            _ = takePendingCancel()
            return
        }
        let options = TransferOptions(
            timeout: timeout,
            priority: request.priority.taskPriority,
            credentials: request.credentials,
            maximumResponseSize: configuration.maximumResponseSize
        )
        let progress: (@Sendable (TransferProgress) -> Void)?
        if request.reportsProgress {
            progress = { [weak self, registry, request, id] value in
                guard let self, self.isTransferring else { return }
                registry.post(RequestEvent<R>(.progress(request, value), sendID: id, attempts: number))
            }
        } else {
            progress = nil
        }
        let task = transport.perform(urlRequest, options: options, progress: progress) { [self] result in
            // Decoding a large body and running response hooks (user code) happen off the transport's
            // queue, so they delay no other transfer's callbacks.
            if hooks.isEmpty, (try? result.get().data.count) ?? 0 < Self.inlineDecodeLimit {
                transferEnded(result, attempt: number, urlRequest, on: transport)
            } else {
                DispatchQueue.global().async { self.transferEnded(result, attempt: number, urlRequest, on: transport) }
            }
        }
        let keep = state.withLock { state -> Bool in
            switch state.phase {
            case .starting(let attempt) where attempt == number:
                state.phase = .running(attempt: number, task: task)
                return true
            case .cancelling(let attempt, _) where attempt == number:
                return false  // cancel came while `perform` ran; the completion delivers `cancelled`
            default:
                // The attempt already ended: the transport completed at once (cancelling is then
                // harmless), or the deadline passed while `perform` ran.
                return false
            }
        }
        if !keep { task.cancel() }
    }

    /// Bodies up to this size are validated on the transport's queue (a few hundred microseconds at most);
    /// larger ones on a global queue.
    static var inlineDecodeLimit: Int { 64 << 10 }

    static func nanoseconds(_ seconds: TimeInterval) -> UInt64 {
        UInt64(max(0, min(seconds, 1e9)) * 1e9)
    }

    /// Whether a transfer runs and no cancel was asked (progress is posted only then).
    private var isTransferring: Bool {
        state.withLock { state in
            switch state.phase {
            case .starting, .running: true
            default: false
            }
        }
    }

    /// The end of attempt `number` (from the transport, or from the sweeper at its deadline): retry, or
    /// finish. An attempt that already ended is ignored.
    private func transferEnded(_ result: Result<TransportResponse, NetworkError>, attempt number: Int, _ urlRequest: URLRequest, on transport: any Transport) {
        let validated = result.flatMap { ResponseValidator.validate($0, for: request, configuration: configuration) }
        let delay: TimeInterval? = validated.failure.flatMap { retryDelay(after: number, error: $0) }
        let next = state.withLock { state -> TransferOutcome in
            switch state.phase {
            case .starting(let attempt) where attempt == number, .running(let attempt, _) where attempt == number:
                guard let delay else {
                    state.phase = .finished
                    return .finish
                }
                state.phase = .waiting
                state.deadline = .max
                return .retry(delay)
            case .cancelling(let attempt, _) where attempt == number:
                state.phase = .finished
                return .cancelled
            default:
                return .ignore
            }
        }
        switch next {
        case .ignore:
            return
        case .cancelled:
            complete(.failure(.cancelled), attempts: number)
        case .finish:
            complete(validated, attempts: number)
        case .retry(let delay):
            if let error = validated.failure { log?.retrying(attempt: number + 1, after: delay, because: error) }
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
                attempt(number + 1, urlRequest, on: transport)
            }
        }
    }

    private func retryDelay(after attempt: Int, error: NetworkError) -> TimeInterval? {
        (request.retryPolicy ?? configuration.retryPolicy).delay(afterAttempt: attempt, error: error, method: request.method)
    }

    /// Cancels the send. Before its first transfer `cancelled` is delivered right after `started`; while
    /// waiting to retry, at once, on this thread; during a transfer the transport is stopped and its
    /// completion delivers `cancelled` on the transport's queue (or the dispatcher's sweeper, if the
    /// transport does not report within a second). Nothing happens if the send already finished.
    func cancel() {
        let action = state.withLock { state -> CancelAction in
            switch state.phase {
            case .finished, .cancelling, .pendingCancelled:
                return .none
            case .pending:
                state.phase = .pendingCancelled
                return .none
            case .waiting:
                state.phase = .finished
                return .deliver(attempts: state.attempts)
            case .starting(let attempt):
                state.phase = .cancelling(attempt: attempt, since: DispatchTime.now().uptimeNanoseconds)
                return .none
            case .running(let attempt, let task):
                state.phase = .cancelling(attempt: attempt, since: DispatchTime.now().uptimeNanoseconds)
                return .cancelTask(task)
            }
        }
        switch action {
        case .none: break
        case .deliver(let attempts): complete(.failure(.cancelled), attempts: attempts)
        case .cancelTask(let task): task.cancel()
        }
    }

    func expire(now: UInt64) {
        let action = state.withLock { state -> ExpireAction in
            switch state.phase {
            case .starting(let attempt) where now >= state.deadline:
                guard let route = state.route else { return .none }
                state.deadline = .max  // handled once; later ticks skip it
                return .timeOut(attempt: attempt, task: nil, route: route)
            case .running(let attempt, let task) where now >= state.deadline:
                guard let route = state.route else { return .none }
                state.deadline = .max
                return .timeOut(attempt: attempt, task: task, route: route)
            case .cancelling(let attempt, let since) where now >= state.deadline || now &- since >= Self.cancelGrace:
                state.phase = .finished
                return .cancelled(attempts: attempt)
            default:
                return .none
            }
        }
        // The delivery (user code for `.immediate` observers) leaves the sweeper's queue, so a slow
        // callback can't hold up another send's deadline.
        switch action {
        case .none:
            break
        case .timeOut(let attempt, let task, let route):
            let timeout = request.timeout ?? configuration.timeout
            DispatchQueue.global().async { [self] in
                // Ends the attempt as the transport would have (a retry may follow), then stops the
                // transfer.
                transferEnded(.failure(.timedOut(after: timeout)), attempt: attempt, route.request, on: route.transport)
                task?.cancel()
            }
        case .cancelled(let attempts):
            DispatchQueue.global().async { [self] in complete(.failure(.cancelled), attempts: attempts) }
        }
    }

    /// Finishes a send that never reached a transfer (a request that could not be built).
    private func finish(_ result: Result<Response<R>, NetworkError>) {
        let first = state.withLock { state -> Bool in
            if case .finished = state.phase { return false }
            state.phase = .finished
            return true
        }
        if first { complete(result, attempts: 0) }
    }

    /// Runs the hooks and delivers the one terminal event; the state is already `finished`.
    private func complete(_ result: Result<Response<R>, NetworkError>, attempts: Int) {
        var final = result.failure?.isCancelled == true ? result : applyHooks(to: result)
        if case .success(var response) = final {
            response.attempts = attempts
            response.sendID = id
            final = .success(response)
        }
        deliver(final, attempts: attempts)
    }

    private func applyHooks(to result: Result<Response<R>, NetworkError>) -> Result<Response<R>, NetworkError> {
        guard !hooks.isEmpty else { return result }
        var outcome = result
        if case .success(let response) = outcome {
            let context = ResponseContext(request: request, httpResponse: response.httpResponse, data: response.data, json: response.json)
            do {
                for hook in hooks { try hook.didSucceed(context) }
            } catch {
                outcome = .failure(error)
            }
        }
        if case .failure(var error) = outcome {
            for hook in hooks { error = hook.didFail(error, for: request) }
            outcome = .failure(error)
        }
        return outcome
    }

    /// The one terminal event: willStop → observers, then the call's own closure → didStop.
    private func deliver(_ result: Result<Response<R>, NetworkError>, attempts: Int) {
        onFinish(id)
        log?.finished(result)
        let error = result.failure
        let callbackQueue = configuration.callbackQueue
        if !accessories.isEmpty {
            callbackQueue.run { [accessories, request] in
                for accessory in accessories { accessory.willStop(request, error: error) }
            }
        }
        let event = RequestEvent(request: request, result: result, sendID: id, attempts: attempts)
        if let completion {
            registry.post(event, then: completionQueue) { completion(result) }
        } else {
            registry.post(event)
        }
        if !accessories.isEmpty {
            callbackQueue.run { [accessories, request] in
                for accessory in accessories { accessory.didStop(request, error: error) }
            }
        }
    }
}

/// What to do after a transfer ended.
private enum TransferOutcome {
    case ignore, cancelled, retry(TimeInterval), finish
}

/// What a cancel does once the state is updated.
private enum CancelAction {
    case none, deliver(attempts: Int), cancelTask(any TransportTask)
}

/// What the sweeper does to an operation.
private enum ExpireAction {
    case none
    case timeOut(attempt: Int, task: (any TransportTask)?, route: (request: URLRequest, transport: any Transport))
    case cancelled(attempts: Int)
}

extension Result {
    /// The error, or `nil` on success.
    package var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
