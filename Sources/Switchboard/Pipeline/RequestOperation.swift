import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One send of one request: the driver that runs the stages of `Stages/` in order, from build to the
/// one terminal event. It holds the send's state (``OperationState``, behind one lock that no user code
/// runs under), its cancellation and its deadline; each stage knows nothing of the others. Whoever
/// moves the state to `finished` first delivers: exactly one terminal event, whatever the retries.
/// During a transfer a cancel or a deadline asks the transport to stop, and its completion (after its
/// last progress callback) delivers, so no progress event follows the end; the sweeper's
/// ``expire(now:)`` doesn't wait more than a second for it.
final class RequestOperation<R: Request>: InFlightOperation {
    let id: UInt64
    let owner: OwnerLink?
    let startedAt = Date()
    /// Locked: the sender, the transport's queue, tasks, the sweeper and a cancel from any thread.
    let state: Locked<OperationState>
    /// What the send read once from the request, its pipeline and the configuration.
    let plan: SendPlan<R>
    let delivery: Delivery<R>
    /// The send's own progress closure, called on the completion queue.
    private let progressHandler: (@Sendable (TransferProgress) -> Void)?
    /// `response(for:)`'s continuation. `nonisolated(unsafe)`: written once by ``resume(_:)`` before
    /// ``start(on:)``, read once at delivery, which follows `start`'s taking of the state's lock on the
    /// writing thread (the lock orders the write before the read); until `start` no other thread can
    /// reach the operation.
    private nonisolated(unsafe) var continuation: UnsafeContinuation<Result<Response<R>, NetworkError>, Never>?

    var request: R { plan.check.request }

    init(
        id: UInt64, request: R, configuration: ConfigurationSnapshot, registry: ObserverRegistry, completionQueue: CallbackQueue,
        progress: (@Sendable (TransferProgress) -> Void)? = nil, completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?,
        coalescer: Coalescer? = nil, owner: AnyObject? = nil, deadlines: DeadlineSweeper? = nil, onFinish: @escaping @Sendable (UInt64) -> Void
    ) {
        self.id = id
        state = Locked(OperationState(deadlines: deadlines))
        progressHandler = progress
        plan = SendPlan(request, configuration: configuration, id: id, coalescer: coalescer)
        delivery = Delivery(
            registry: registry, completion: completion, completionQueue: completionQueue, callbackQueue: configuration.value.callbackQueue, onFinish: onFinish,
            refreshScope: RefreshScope.current)
        self.owner = owner.map(OwnerLink.init)
    }

    /// Resumes `continuation` with the result, after the observers (as a completion on `.immediate`
    /// would be called). Call it once, before ``start(on:)``.
    func resume(_ continuation: UnsafeContinuation<Result<Response<R>, NetworkError>, Never>) {
        assert(self.continuation == nil, "an operation resumes one continuation")
        self.continuation = continuation
    }

    /// Posts a non-terminal event, kept first as the send's last one (for late subscribers).
    func post(_ last: LastEvent) {
        state.withLock { $0.lastEvent = last }
        delivery.registry.post(R.self) { event(from: last) }
    }

    /// Posts `started`, then stage 1 (on a global queue when it reads files or streams).
    func start(on transport: any Transport) {
        plan.monitors.each { $0.requestDidStart($1) }
        post(.started)
        // A cancel that came before this point waited for `started` to be posted; deliver it now.
        if takePendingCancel() { return }
        let body = request.body
        if body?.isSlowToBuild == true {
            DispatchQueue.global().async { [self] in build(body, on: transport) }
        } else {
            build(body, on: transport)
        }
    }

    private func build(_ body: RequestBody?, on transport: any Transport) {
        let prepared: RequestBuilder.Prepared
        do {
            prepared = try BuildStage.run(request, body: body, configuration: plan.check.settings)
        } catch {
            return finish(.failure(error))
        }
        attempt(1, prepared, on: transport, cacheSetting: plan.cacheSetting(prepared, cookies: transport.addedCookies))
    }

    /// Stage 2 for attempt `number` (the interceptors in a task: the attempt's deadline runs, a cancel
    /// cancels the task), then stage 3 or 5. `cacheSetting` comes with the first attempt.
    private func attempt(_ number: Int, _ prepared: RequestBuilder.Prepared, on transport: any Transport, cacheSetting: CacheSetting? = nil) {
        let step = AuthenticateStage.run(
            prepared, for: request, configuration: plan.check.settings, adapters: plan.adapters, interceptors: plan.interceptors,
            adaptedBy: plan.adapterIdentities, scope: delivery.refreshScope)
        if case .now(.failure(let error)) = step { return finish(.failure(error)) }
        let deadline = plan.deadline(from: DispatchTime.now().uptimeNanoseconds)
        var adapting: Task<Void, Never>?
        let begun = state.withLock { $0.begin(number, route: (prepared, transport), deadline: deadline, cacheSetting: cacheSetting, intercepts: step.isLater) }
        switch (begun, step) {
        case (nil, _): _ = takePendingCancel()  // cancelled (maybe by an observer of `started`) or finished
        case (_, .later(let intercept)):
            adapting = Task { [self] in
                let adapted = await intercept()
                switch state.withLock({ $0.adapted(number, failure: adapted.failure) }) {
                case .ignore: break
                case .failed(let error): complete(.failure(error))
                case .stopped(let reason): decide(.failure(reason), attempt: number)
                case .lookUp(let setting): if case .success(let final) = adapted { lookUp(number, final, prepared, setting, on: transport) }
                case .transfer: if case .success(let final) = adapted { transfer(number, final, prepared, on: transport) }
                }
            }
        case (.lookUp(let setting)?, .now(.success(let urlRequest))): lookUp(number, urlRequest, prepared, setting, on: transport)
        case (_, .now(let adapted)): if case .success(let urlRequest) = adapted { transfer(number, urlRequest, prepared, on: transport) }
        }
        if let adapting, !state.withLock({ $0.keepAdapting(adapting, attempt: number) }) { adapting.cancel() }
    }

    /// Stage 3: from memory at once, from disk in a task.
    private func lookUp(_ number: Int, _ urlRequest: URLRequest, _ prepared: RequestBuilder.Prepared, _ setting: CacheSetting, on transport: any Transport) {
        let step = CacheLookupStage.run(
            urlRequest, prepared: prepared, setting: setting, fromParts: plan.adaptsNothing, check: plan.check,
            watch: state, attempt: number)
        switch step {
        case .now(let found): lookedUp(number, found, urlRequest, prepared, setting, on: transport)
        case .later(let reading):
            Task { [self] in
                lookedUp(number, await reading(), urlRequest, prepared, setting, on: transport)
                setting.cache.answeredLookUps.withLock { $0 += 1 }
            }
        }
    }

    /// Stage 3's answer ends the send (a fresh entry) or starts stage 5.
    private func lookedUp(
        _ number: Int, _ found: CacheLookupStage.Found, _ urlRequest: URLRequest, _ prepared: RequestBuilder.Prepared, _ setting: CacheSetting,
        on transport: any Transport
    ) {
        switch state.withLock({ $0.lookedUp(number, context: found.context, fresh: found.fresh) }) {
        case true?:
            if let stored = found.stored { complete(.success(stored)) }
        case false?:
            if let stored = found.stored, setting.policy.mode == .cachedThenLoad { post(.cached(stored)) }
            transfer(number, urlRequest, prepared, on: transport)
        case nil:
            break  // a cancel or the deadline ended the attempt meanwhile
        }
    }

    /// Stages 4 and 5 for attempt `number` (the state is `starting`).
    private func transfer(_ number: Int, _ adapted: URLRequest, _ prepared: RequestBuilder.Prepared, on transport: any Transport) {
        if let stopped = state.withLock({ $0.stoppedBeforeTransfer(number) }) { return decide(.failure(stopped), attempt: number) }
        var urlRequest = adapted
        if plan.cachePolicy != nil, case let (setting?, current) = state.withLock({ ($0.cacheSetting, $0.cache) }) {
            let context: CacheContext?
            (urlRequest, context) = CacheStage.conditional(adapted, attempt: number, setting: setting, current: current)
            if number > 1 { state.withLock { $0.cache = context } }
        }
        plan.monitors.didAdapt(urlRequest, attempt: number)
        if !plan.interceptors.isEmpty { state.withLock { $0.sent = urlRequest } }
        var report: (@Sendable (TransferProgress) -> Void)?
        if request.reportsProgress || progressHandler != nil {
            report = { [weak self, progressHandler, toObservers = request.reportsProgress, queue = delivery.completionQueue] value in
                guard let self, self.state.withLock({ $0.isTransferring(number) }) else { return }
                if toObservers { self.post(.progress(value, attempts: number)) }
                // Queued before the terminal event, which comes from this queue later: never after it.
                if let progressHandler { queue.run { progressHandler(value) } }
            }
        }
        // The state, not `self`, records: a weak reference to the operation would give it a side table.
        let record: @Sendable (TransferProgress) -> Void = { [state] value in state.withLock { $0.progress = value } }
        let callbacks = TransferCallbacks.attempt(record: record, report: report, completion: { [self] in transferEnded($0, attempt: number) })
        let options = TransferOptions(for: request, prepared, timeout: plan.timeout, configuration: plan.check.settings)
        let shared = plan.coalescer.flatMap {
            CoalesceStage.run(TransportStage.request(urlRequest, prepared, origin: request), options: options, callbacks: callbacks, coalescer: $0, on: transport)
        }
        let task =
            shared
            ?? TransportStage.run(
                urlRequest, prepared: prepared, origin: request, download: plan.download, partialDownloads: plan.check.settings.value.partialDownloadsDirectory,
                options: options, callbacks: callbacks, on: transport)
        // Stopped while `perform` ran (its completion ends the attempt), or already ended: either way the
        // task is told to stop, which is harmless for a finished one.
        if !state.withLock({ $0.running(number, task: task, url: urlRequest.url) }) { task.cancel() }
    }

    /// The transport's completion of attempt `number`. Stages 6 to 8 run off the transport's queue when
    /// the body is large or user code (hooks, plan.monitors) will run. A late report is ignored.
    private func transferEnded(_ result: Result<TransportResponse, NetworkError>, attempt number: Int) {
        let (current, stopReason, replaced) = state.withLock { $0.transferEnded(number) }
        withExtendedLifetime(replaced) {}  // its task (maybe user code) released outside the lock
        guard current else { return }
        if plan.checksInline(result, stopped: stopReason != nil) {
            endAttempt(number, result, stopReason: stopReason)
        } else if stopReason != nil {
            // A cancel or a deadline the transport reported: never behind the global queue's workers.
            WorkerQueue.async { [self] in endAttempt(number, result, stopReason: stopReason) }
        } else {
            DispatchQueue.global().async { [self] in endAttempt(number, result, stopReason: stopReason) }
        }
    }

    /// Stages 6 to 8 on the transport's result (a 304 to a conditional request is the stored
    /// response), or the stop's reason; then stage 9. A method, not a closure: the usual case allocates nothing.
    private func endAttempt(_ number: Int, _ result: Result<TransportResponse, NetworkError>, stopReason: NetworkError?) {
        if let stopReason { return decide(.failure(stopReason), attempt: number) }
        plan.monitors.each { $0.request($1, didReceive: result, attempt: number) }
        var (received, origin) = (result, ResponseOrigin.network)
        if plan.cachePolicy != nil, case .success(let response) = result, let revalidated = CacheStage.revalidated(response, state.withLock({ $0.cache })) {
            (received, origin) = (.success(revalidated), .revalidated)
        }
        let outcome = received.flatMap { plan.check.validate($0, origin: origin) }
        if !plan.monitors.isEmpty, case .success = result { plan.monitors.didDecode(outcome, of: request, attempt: number) }
        decide(outcome, attempt: number)
    }

    /// Stage 9: the interceptors (in a task: a cancel ends the send at once, the deadline hands the
    /// decision to the retry policy), else the retry policy.
    private func decide(_ outcome: Outcome, attempt number: Int) {
        let decision = DecideStage.run(
            after: number, outcome, policy: plan.retryPolicy, method: request.method, interceptors: plan.interceptors, scope: delivery.refreshScope)
        guard case .ask(let error, let policyDelay, let answer) = decision else {
            if case .settle(let delay) = decision { settle(outcome, attempt: number, delay: delay) }
            return
        }
        let deadline = plan.deadline(from: DispatchTime.now().uptimeNanoseconds)
        guard let asked = state.withLock({ $0.beginDeciding(number, error: error, outcome: outcome, policyDelay: policyDelay, deadline: deadline) }) else {
            return settle(outcome, attempt: number, delay: policyDelay)
        }
        let context = RetryContext(request: asked.sent, original: request, error: error, attempt: number, errors: asked.errors)
        let task = Task { [self] in settle(outcome, attempt: number, delay: await answer(context), decidedByInterceptors: true) }
        if !state.withLock({ $0.keepDeciding(task, attempt: number) }) { task.cancel() }
    }

    /// Ends attempt `number`: a retry after `delay` (the wait holds the send weakly, so a cancel
    /// releases it at once), or stages 10 and 11.
    private func settle(_ outcome: Outcome, attempt number: Int, delay: TimeInterval?, decidedByInterceptors: Bool = false) {
        switch state.withLock({ $0.settle(number, delay: delay, decidedByInterceptors: decidedByInterceptors) }) {
        case .ignore: break
        case .cancelled: complete(.failure(.cancelled))
        case .finish: complete(outcome)
        case .retry(let delay):
            if let error = outcome.failure { plan.monitors.each { $0.request($1, willRetry: number + 1, after: delay, because: error) } }
            guard let route = state.withLock({ $0.route }) else { return }
            WorkerQueue.asyncAfter(deadline: .now() + delay) { [weak self] in self?.attempt(number + 1, route.prepared, on: route.transport) }
        }
    }

    /// Cancels the send. Before it is built, `cancelled` comes right after `started`; while interceptors
    /// adapt or decide, during a cache lookup or waiting to retry, at once, on this thread; during a
    /// transfer or its check the transport is stopped and its completion (or the check's end) delivers
    /// `cancelled` (the sweeper does after a second without it).
    func cancel() {
        switch state.withLock({ $0.cancel(now: DispatchTime.now().uptimeNanoseconds) }) {
        case .none: break
        case .deliver: complete(.failure(.cancelled))
        case .stop(let task): task.cancel()
        case .cancelTask(let task, let deliver):
            task?.cancel()
            if deliver { complete(.failure(.cancelled)) }
        }
    }

    /// The sweeper's check: an attempt past its deadline is told to stop (its completion then reports
    /// `timedOut`); a stop not reported within the grace period ends without the transport. Only the
    /// stop runs on the sweeper's queue (a transport's `cancel` must not block); a task's cancellation
    /// handlers (an interceptor's nested send) and delivery are user code, run off it (``WorkerQueue``:
    /// never waiting for a free worker of the global queues).
    func expire(now: UInt64) {
        let expired = state.withLock { $0.expire(now: now, timeout: plan.timeout) }
        if case .stop(let task) = expired { return task.cancel() }
        if case .none = expired { return }
        WorkerQueue.async { [self] in
            switch expired {
            case .none, .stop: break
            case .cancelAdapting(let task): task?.cancel()
            case .cancelDeciding(let task, let attempt, let outcome, let delay):
                task?.cancel()
                settle(outcome, attempt: attempt, delay: delay)
            case .endWithoutTransport(let attempt, let reason): decide(.failure(reason), attempt: attempt)
            }
        }
    }

    /// Finishes a send whose next attempt could not be built or adapted.
    private func finish(_ result: Outcome) {
        let (finishes, cancelled) = state.withLock { $0.finishBeforeAttempt() }
        if finishes { complete(cancelled ? .failure(.cancelled) : result) }
    }

    /// Delivers `cancelled` if a cancel came while pending; returns whether it did.
    private func takePendingCancel() -> Bool {
        let cancelled = state.withLock { $0.takePendingCancel() }
        if cancelled { complete(.failure(.cancelled)) }
        return cancelled
    }

    /// Stages 10 and 11 (the state is `finished`). What the attempts sent is released (an assembled
    /// body's temporary file goes now: a handle may outlive the send).
    private func complete(_ result: Outcome) {
        // Moved out, not copied: a copy of the route goes through the transport existential's witnesses.
        let (attempts, route, cache) = state.withLock { state in (state.transfers, state.route.take(), state.cache) }
        route?.prepared.temporaryFile?.remove()
        let final = result.failure?.isCancelled == true ? result : CacheStoreStage.run(result, context: cache, check: plan.check)
        delivery.run(final, of: request, id: id, attempts: attempts, hooks: plan.check.hooks, monitors: plan.monitors, continuation: continuation, operation: self)
    }
}
