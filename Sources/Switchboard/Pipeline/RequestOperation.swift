import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a dispatcher needs of any in-flight send, whatever its request type.
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

/// The phase of a ``RequestOperation``, outside the generic class (as ``OperationState`` is), so that
/// its state needs no generic metadata: every lock taken in a send used to look it up.
private enum OperationPhase {
    /// Registered; `started` is being posted and the request built.
    case pending
    /// Cancelled before the first attempt: `start` delivers `cancelled` after `started`.
    case pendingCancelled
    /// The interceptors adapt this attempt's request, in `task` (the deadline runs).
    case adapting(attempt: Int, task: Task<Void, Never>?)
    /// The response cache is read for this attempt's final request, maybe from disk on the cache's
    /// queue (the deadline runs). Its answer starts the transfer or ends the send.
    case lookingUp(attempt: Int)
    /// `transport.perform` for this attempt is being called.
    case starting(attempt: Int)
    /// This attempt's transfer runs.
    case running(attempt: Int, task: any TransportTask)
    /// This attempt's transfer ended; its response is being validated (the deadline no longer runs).
    case validating(attempt: Int)
    /// The interceptors decide whether failed attempt `attempt` is retried, in `task`. A cancel ends
    /// the send at once; so does the deadline (with the outcome as the retry policy has it).
    case deciding(attempt: Int, task: Task<Void, Never>?)
    /// Waiting to retry.
    case waiting
    /// Attempt `attempt` was told to stop, because of `reason` (a cancel or its deadline); its
    /// completion ends it with that reason (or the sweeper does, once the grace period has passed).
    case stopping(attempt: Int, reason: NetworkError)
    case finished
}

/// A ``RequestOperation``'s mutable state, all of it behind its one lock.
private struct OperationState {
    var phase = OperationPhase.pending
    /// The attempt in progress (or the last one), from 1.
    var attempts = 0
    /// Transfers started so far: what the terminal event reports as `attempts`.
    var transfers = 0
    /// When the sweeper acts (uptime nanoseconds): the attempt's deadline while it runs; the end of
    /// the grace period while it stops; `.max` otherwise. A moment earlier than before is told to the
    /// sweeper, whose one timer is set for the earliest it knows.
    var deadline = UInt64.max {
        didSet { if deadline < oldValue { deadlines?.ensure(by: deadline) } }
    }
    /// The dispatcher's sweeper (`nil` for an operation no dispatcher watches).
    let deadlines: DeadlineSweeper?

    init(deadlines: DeadlineSweeper?) {
        self.deadlines = deadlines
    }
    /// What the attempts send (before the adapters, which run again for each), and through which
    /// transport.
    var route: (prepared: RequestBuilder.Prepared, transport: any Transport)?
    /// What the current attempt sent, for the interceptors' retry decision.
    var sent: URLRequest?
    /// Every failed attempt's error so far.
    var errors: [NetworkError] = []
    /// While deciding: the attempt's outcome and the retry policy's delay, for the deadline.
    var undecided: (outcome: Outcome, policyDelay: TimeInterval?)?
    /// Whether and how the send may use the response cache (set once, when the request is built).
    var cacheSetting: CacheSetting?
    /// Whether the cache answered a lookup (an attempt whose lookup a deadline cut short leaves the
    /// next one to look up).
    var cacheRead = false
    /// What the current attempt does with the response cache, if anything.
    var cache: CacheContext?
    /// The last event posted to observers before the terminal one (replayed to late subscribers).
    var lastEvent: LastEvent?
    /// The last progress the transport reported.
    var progress: TransferProgress?
    /// The URL of the current attempt's transfer.
    var url: URL?
}

/// `first` and `second` as one array, allocating only when both have elements. Outside the generic
/// operation, so that each element type's call is specialized (inside, it went through witness tables).
private func joined<Element>(_ first: [Element], _ second: [Element]) -> [Element] {
    first.isEmpty ? second : second.isEmpty ? first : first + second
}

/// What an attempt, and then the send, ends with, before the request is added to the response.
private typealias Outcome = Result<ResponseParts, NetworkError>

/// What a cache lookup found for an attempt: the setting and key it looked up with, and the usable
/// entry, if any.
private struct Lookup {
    let setting: CacheSetting
    let key: String
    let entry: CachedEntry?
}

/// The last non-terminal event of a send, without its request (the operation has it):
/// ``RequestOperation`` rebuilds the `RequestEvent` when a late subscriber asks.
private enum LastEvent {
    case started
    case progress(TransferProgress, attempts: Int)
    /// The cache's answer, before the network's.
    case cached(ResponseParts)
}

/// One send of one request, from build to its single terminal event.
///
/// The state lives in a lock; whoever moves it to `finished` first delivers the terminal event, so there
/// is exactly one, whatever the retries. While a transfer runs, neither a cancel nor a deadline delivers
/// at once: both ask the transport to stop, and its completion (which comes after its last progress
/// callback, on the same queue) then delivers `cancelled` or `timedOut`, so no progress event follows
/// the terminal event. The deadline of each attempt is kept here, above the transport: the dispatcher's
/// sweeper calls ``expire(now:)``, and a transport that doesn't report within a second of being told to
/// stop is not waited for any longer.
final class RequestOperation<R: Request>: InFlightOperation {
    /// How long a transfer told to stop may take to report before the send ends without it.
    static var stopGrace: UInt64 { 1_000_000_000 }

    /// The most attempts a send makes, whatever interceptors decide.
    static var maximumAttempts: Int { 16 }

    let id: UInt64
    let request: R
    let configuration: Configuration
    private let registry: ObserverRegistry
    private let completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?
    private let completionQueue: CallbackQueue
    private let onFinish: @Sendable (UInt64) -> Void
    private let state: Locked<OperationState>
    private let hooks: [any ResponseHook]
    private let retryPolicy: RetryPolicy
    /// The send's monitors (logging first, when on); empty, with no context allocated, when none.
    private let monitors: Monitors
    private let interceptors: [any RequestInterceptor]
    /// The deadline of each attempt, in seconds (the request's, read once: no user code under the lock).
    private let timeout: TimeInterval
    /// The send's own progress closure, called on the completion queue.
    private let progressHandler: (@Sendable (TransferProgress) -> Void)?
    /// For a ``DownloadRequest``: where the file goes and whether it resumes (read once).
    private let download: (destination: DownloadDestination, resumes: Bool)?
    /// Where identical transfers are shared, when this request may share one.
    private let coalescer: Coalescer?
    /// The request's cache policy (read once: it is the request's code).
    private let cachePolicy: CachePolicy?
    /// The request adapters, the configuration's then the request's (its `pipeline`, read once).
    private let adapters: [any RequestAdapter]
    /// Whether adapters or interceptors may change the request's headers.
    private let adaptsRequests: Bool
    let owner: OwnerLink?
    private let startedAt = Date()
    /// `response(for:)`'s continuation, resumed with the result instead of a completion closure.
    /// `nonisolated(unsafe)`: written once by ``resume(_:)`` before ``start(on:)`` and read once, by
    /// ``deliver(_:attempts:)`` (from ``complete(_:)``), which runs only after `start` took the state's
    /// lock on the writing thread (the lock orders the write before the read). Until `start`, the
    /// operation is in no table the sweeper or a scope can reach.
    private nonisolated(unsafe) var continuation: UnsafeContinuation<Result<Response<R>, NetworkError>, Never>?
    /// The token refreshes the send was made inside (``RefreshScope``): bound again around its
    /// interceptors and its completion closure, so that what they send is inside them too.
    private let refreshScope = RefreshScope.current

    init(
        id: UInt64,
        request: R,
        configuration: Configuration,
        registry: ObserverRegistry,
        completionQueue: CallbackQueue,
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        completion: (@Sendable (Result<Response<R>, NetworkError>) -> Void)?,
        coalescer: Coalescer? = nil,
        owner: AnyObject? = nil,
        deadlines: DeadlineSweeper? = nil,
        onFinish: @escaping @Sendable (UInt64) -> Void
    ) {
        state = Locked(OperationState(deadlines: deadlines))
        progressHandler = progress
        // A struct's type asked first (a metatype's conformance is cached, a value's cast boxes it); a
        // class's value always, since a subclass may be the download.
        download =
            R.self is AnyClass || R.self is any DownloadRequest.Type ? (request as? any DownloadRequest).map { ($0.destination, $0.resumes) } : nil
        self.id = id
        self.request = request
        self.configuration = configuration
        self.registry = registry
        self.completionQueue = completionQueue
        self.completion = completion
        self.onFinish = onFinish
        let pipeline = request.pipeline
        // Arrays joined only when both have elements (joining allocates, even for two empty ones).
        hooks = joined(pipeline.usesConfigurationResponseHooks ? configuration.responseHooks : [], pipeline.responseHooks)
        retryPolicy = pipeline.retryPolicy ?? configuration.retryPolicy
        monitors = Monitors(joined(configuration.allMonitors, pipeline.monitors), id: id, request: request)
        interceptors = configuration.interceptors
        timeout = request.timeout ?? configuration.timeout
        self.owner = owner.map(OwnerLink.init)
        cachePolicy = request.cachePolicy
        adapters = joined(configuration.adapters, pipeline.adapters)
        adaptsRequests = !(adapters.isEmpty && interceptors.isEmpty)
        self.coalescer = configuration.coalescesDuplicates && download == nil && request.coalescesDuplicates ? coalescer : nil
    }

    /// Resumes `continuation` with the result, after the observers (as a completion on `.immediate`
    /// would be called). Call it once, before ``start(on:)``.
    func resume(_ continuation: UnsafeContinuation<Result<Response<R>, NetworkError>, Never>) {
        assert(self.continuation == nil, "an operation resumes one continuation")
        self.continuation = continuation
    }

    var isFinished: Bool {
        state.withLock { if case .finished = $0.phase { true } else { false } }
    }

    var requestTypeKey: ObjectIdentifier { ObjectIdentifier(R.self) }

    var snapshot: RunningRequest {
        let (url, progress, attempts) = state.withLock { ($0.url, $0.progress, $0.attempts) }
        return RunningRequest(id: id, request: request, url: url, startedAt: startedAt, progress: progress, attempts: attempts, hasOwner: owner != nil)
    }

    func lastEvent<T: Request>(as type: T.Type) -> RequestEvent<T>? {
        state.withLock { $0.lastEvent }.map(event(from:)) as? RequestEvent<T>
    }

    var lastAnyEvent: AnyRequestEvent? {
        state.withLock { $0.lastEvent }.map { AnyRequestEvent(event(from: $0)) }
    }

    /// The event `last` stands for.
    private func event(from last: LastEvent) -> RequestEvent<R> {
        switch last {
        case .started: RequestEvent(.started(request), sendID: id)
        case .progress(let progress, let attempts): RequestEvent(.progress(request, progress), sendID: id, attempts: attempts)
        case .cached(let parts): RequestEvent(.cached(Response(request: request, parts: parts)), sendID: id)
        }
    }

    /// Posts a non-terminal event, kept first as the send's last one (for late subscribers).
    private func post(_ last: LastEvent) {
        state.withLock { $0.lastEvent = last }
        registry.post(R.self) { event(from: last) }
    }

    /// Posts `started`, builds the URLRequest and hands it to `transport`.
    func start(on transport: any Transport) {
        monitors.each { $0.requestDidStart($1) }
        post(.started)
        // A cancel that came before this point waited for `started` to be posted; deliver it now.
        if takePendingCancel() { return }
        let body = request.body
        if case .multipart(let form)? = body, form.mayBeSlowToAssemble {
            // Files or streams to read, maybe a temporary file to write: not on the sender's thread
            // (the main thread, often). A cancel meanwhile is taken when the attempt starts.
            DispatchQueue.global().async { [self] in prepareAndAttempt(body, on: transport) }
        } else {
            prepareAndAttempt(body, on: transport)
        }
    }

    private func prepareAndAttempt(_ body: RequestBody?, on transport: any Transport) {
        let prepared: RequestBuilder.Prepared
        do {
            prepared = try RequestBuilder.prepare(request, body: body, configuration: configuration)
        } catch {
            finish(.failure(error))
            return
        }
        // The cache is read later, against the request as the adapters and interceptors leave it.
        let setting =
            cachePolicy == nil
            ? nil
            : CacheStage.setting(
                for: request, isDownload: download != nil, prepared: prepared, configuration: configuration, policy: cachePolicy, cookies: transport.addedCookies)
        attempt(1, prepared, on: transport, cacheSetting: setting)
    }

    /// A stored entry as a response to this request, validated like one from the network.
    private func cachedResponse(_ entry: CachedEntry, origin: ResponseOrigin) -> Outcome {
        guard let transported = CacheStage.transportResponse(entry) else { return .failure(.invalidRequest(reason: "an unusable cache entry")) }
        return ResponseValidator.validate(transported, for: request, configuration: configuration, origin: origin, parsed: entry.decoded?.json)
    }

    /// Delivers `cancelled` if a cancel came while pending; returns whether it did.
    private func takePendingCancel() -> Bool {
        let cancelled = state.withLock { state -> Bool in
            guard case .pendingCancelled = state.phase else { return false }
            state.phase = .finished
            return true
        }
        if cancelled { complete(.failure(.cancelled)) }
        return cancelled
    }

    /// Runs the adapters (for every attempt: a retry may carry a fresh token) and starts the transfer.
    /// - Parameter cacheSetting: the send's use of the cache, given with the first attempt (kept in the
    ///   state under the attempt's own lock, not one more).
    private func attempt(_ number: Int, _ prepared: RequestBuilder.Prepared, on transport: any Transport, cacheSetting: CacheSetting? = nil) {
        let urlRequest: URLRequest
        do {
            urlRequest = try RequestBuilder.adapt(prepared, for: request, configuration: configuration, adapters: adapters)
        } catch {
            finish(.failure(error))  // nothing reads the cache setting once the send has ended
            return
        }
        let timeout = request.timeout ?? configuration.timeout
        let deadline = DispatchTime.now().uptimeNanoseconds &+ Self.nanoseconds(timeout)
        if interceptors.isEmpty {
            let proceed = state.withLock { state -> CacheSetting?? in
                if let cacheSetting { state.cacheSetting = cacheSetting }
                switch state.phase {
                case .pending, .waiting:
                    let lookingUp = Self.looksUpCache(attempt: number, &state)
                    state.attempts = number
                    state.route = (prepared, transport)
                    state.deadline = deadline
                    return .some(lookingUp)
                default:
                    return .none  // cancelled (maybe by an observer of `started`) or finished
                }
            }
            guard let lookingUp = proceed else {
                _ = takePendingCancel()
                return
            }
            if let lookingUp { lookUp(number, urlRequest, prepared, lookingUp, on: transport) } else { transfer(number, urlRequest, prepared, on: transport) }
        } else {
            intercept(number, urlRequest, prepared: prepared, on: transport, deadline: deadline, cacheSetting: cacheSetting)
        }
    }

    /// Runs the interceptors' `adapt` for attempt `number` in a task (the attempt's deadline runs, and a
    /// cancel cancels the task), then starts the transfer.
    private func intercept(
        _ number: Int, _ urlRequest: URLRequest, prepared: RequestBuilder.Prepared, on transport: any Transport, deadline: UInt64, cacheSetting: CacheSetting?
    ) {
        let proceed = state.withLock { state -> Bool in
            if let cacheSetting { state.cacheSetting = cacheSetting }
            switch state.phase {
            case .pending, .waiting:
                state.phase = .adapting(attempt: number, task: nil)
                state.attempts = number
                state.sent = nil
                state.route = (prepared, transport)
                state.deadline = deadline
                return true
            default:
                return false
            }
        }
        guard proceed else {
            _ = takePendingCancel()
            return
        }
        let task = Task { [self] in
            var adapted: URLRequest
            do {
                var outgoing = try OutgoingRequest(urlRequest)
                for interceptor in interceptors {
                    do {
                        let given = outgoing
                        outgoing = try await refreshScope.running { try await interceptor.adapt(given, for: request) }
                    } catch let error as NetworkError {
                        throw error
                    } catch {
                        throw NetworkError.invalidRequest(reason: "interceptor \(type(of: interceptor)) threw: \(error)")
                    }
                }
                try RequestBuilder.check(url: outgoing.url, method: outgoing.method.rawValue, headers: outgoing.headers)
                adapted = outgoing.urlRequest
            } catch {
                let failure = error as? NetworkError ?? .invalidRequest(reason: "\(error)")
                let end = state.withLock { state -> (error: NetworkError, stopped: Bool)? in
                    switch state.phase {
                    case .adapting(let attempt, _) where attempt == number:
                        state.phase = .finished
                        return (failure, false)
                    case .stopping(let attempt, let reason) where attempt == number:
                        return (reason, true)  // a cancel or the deadline: ended as such (a retry may follow a deadline)
                    default:
                        return nil
                    }
                }
                if let end {
                    if end.stopped { decide(.failure(end.error), attempt: number) } else { complete(.failure(end.error)) }
                }
                return
            }
            let next = state.withLock { state -> AdaptedNext in
                switch state.phase {
                case .adapting(let attempt, _) where attempt == number:
                    return Self.looksUpCache(attempt: number, &state).map(AdaptedNext.lookUp) ?? .transfer
                case .stopping(let attempt, let reason) where attempt == number:
                    return .stopped(reason)
                default:
                    return .ignore
                }
            }
            switch next {
            case .ignore: return
            case .lookUp(let setting): lookUp(number, adapted, prepared, setting, on: transport)
            case .transfer: transfer(number, adapted, prepared, on: transport)
            case .stopped(let reason): decide(.failure(reason), attempt: number)
            }
        }
        let cancelNow = state.withLock { state -> Bool in
            switch state.phase {
            case .adapting(let attempt, nil) where attempt == number:
                state.phase = .adapting(attempt: number, task: task)
                return false
            case .stopping(let attempt, _) where attempt == number:
                return true  // a cancel or the deadline came before the task was stored
            default:
                return false
            }
        }
        if cancelNow { task.cancel() }
    }

    /// Moves the state on to attempt `number` (under the lock): `lookingUp` for a send that uses the
    /// cache until the cache has answered once, otherwise `starting` (a transfer counted). Returns
    /// the cache setting it looks up with, `nil` when it doesn't.
    private static func looksUpCache(attempt number: Int, _ state: inout OperationState) -> CacheSetting? {
        if let setting = state.cacheSetting, !state.cacheRead {
            state.phase = .lookingUp(attempt: number)
            return setting
        }
        state.phase = .starting(attempt: number)
        state.transfers += 1
        return nil
    }

    /// Reads the cache for attempt `number`'s final request (from memory here, from disk on the
    /// cache's queue), then answers from it or starts the transfer; the state is `lookingUp`.
    private func lookUp(_ number: Int, _ urlRequest: URLRequest, _ prepared: RequestBuilder.Prepared, _ setting: CacheSetting, on transport: any Transport) {
        let key: String?
        if !adaptsRequests, let parts = prepared.parts {
            // The request as the builder made it: the key from what it put there.
            key = CacheKey.make(for: parts, headers: prepared.mayCarryCredentialHeaders ? urlRequest.allHTTPHeaderFields : nil, setting)
        } else {
            key = CacheKey.make(for: urlRequest, setting)
        }
        guard let key else {
            // Credentials the policy doesn't let the cache see: neither served nor stored.
            lookedUp(nil, nil, attempt: number, urlRequest, prepared, on: transport)
            return
        }
        guard !setting.policy.ignoresCache else {
            lookedUp(Lookup(setting: setting, key: key, entry: nil), nil, attempt: number, urlRequest, prepared, on: transport)
            return
        }
        let found = setting.cache.lookUp(key) { [self] entry in
            answer(from: entry, setting, key: key, attempt: number, urlRequest, prepared, on: transport)
        }
        if case .now(let entry) = found { answer(from: entry, setting, key: key, attempt: number, urlRequest, prepared, on: transport) }
    }

    /// What the cache found for attempt `number`: the entry it may answer with, validated like a
    /// response from the network.
    private func answer(
        from found: CachedEntry?, _ setting: CacheSetting, key: String, attempt number: Int, _ urlRequest: URLRequest, _ prepared: RequestBuilder.Prepared,
        on transport: any Transport
    ) {
        var entry = CacheStage.usable(found, key: key, for: urlRequest, setting)
        var stored: ResponseParts?
        if let usable = entry {
            if case .success(let parts) = cachedResponse(usable, origin: .cache) {
                stored = parts
                // Parsed here, off the sender's thread: a later hit from memory won't parse it again.
                if usable.decoded == nil { setting.cache.rememberDecoded(usable, head: parts.head.response, json: parts.json) }
            } else {
                entry = nil
            }
        }
        lookedUp(Lookup(setting: setting, key: key, entry: entry), stored, attempt: number, urlRequest, prepared, on: transport)
    }

    /// Ends the cache lookup of attempt `number`: a fresh entry under ``CachePolicy/Mode/cacheElseLoad``
    /// answers without the network; otherwise (after the `cached` event under
    /// ``CachePolicy/Mode/cachedThenLoad``) the transfer starts, conditional on the entry when it has
    /// validators. A cancel or deadline that came meanwhile ends the attempt as such.
    private func lookedUp(
        _ lookup: Lookup?, _ stored: ResponseParts?, attempt number: Int, _ urlRequest: URLRequest, _ prepared: RequestBuilder.Prepared, on transport: any Transport
    ) {
        let policy = lookup?.setting.policy
        let fresh = stored != nil && policy?.mode == .cacheElseLoad && lookup?.entry?.isFresh(at: Date()) == true
        // A fresh answer ends the send: nothing after reads a context, so none is made for it.
        let context = fresh ? nil : lookup.map { CacheStage.context($0.setting, key: $0.key, request: urlRequest, stored: $0.entry) }
        let next = state.withLock { state -> LookupNext in
            switch state.phase {
            case .lookingUp(let attempt) where attempt == number:
                state.cache = context
                state.cacheRead = true
                if fresh {
                    state.phase = .finished
                    return .answer
                }
                // `starting` before the `cached` event: a cancel from now on stops the transfer, and
                // its end (the terminal event) can only follow the transfer's start, after the event.
                state.phase = .starting(attempt: number)
                state.transfers += 1
                return .transfer
            default:
                return .ignore  // a cancel or the deadline ended the attempt meanwhile
            }
        }
        switch next {
        case .answer:
            if let stored { complete(.success(stored)) }
        case .transfer:
            if let stored, policy?.mode == .cachedThenLoad { post(.cached(stored)) }
            transfer(number, urlRequest, prepared, on: transport)
        case .ignore:
            break
        }
    }

    /// Attempt `number`'s request with the cache's conditional headers; from the second attempt on (an
    /// interceptor may have put a new token on it), the cache context of its own key.
    private func withCache(_ number: Int, _ urlRequest: URLRequest) -> URLRequest {
        let (setting, current) = state.withLock { ($0.cacheSetting, $0.cache) }
        guard let setting else { return urlRequest }
        var context = current
        if number > 1 {
            let key = CacheKey.make(for: urlRequest, setting)
            if let key, key == current?.key, let current {
                context = CacheStage.context(setting, key: key, request: urlRequest, stored: current.stored)
            } else {
                context = key.map { CacheStage.context(setting, key: $0, request: urlRequest, stored: nil) }
            }
            state.withLock { $0.cache = context }
        }
        return context.map { CacheStage.conditional(urlRequest, $0) } ?? urlRequest
    }

    /// Starts attempt `number`'s transfer; the state is `starting`.
    private func transfer(_ number: Int, _ adapted: URLRequest, _ prepared: RequestBuilder.Prepared, on transport: any Transport) {
        let urlRequest = cachePolicy == nil ? adapted : withCache(number, adapted)
        if let context = monitors.context {
            context.record(urlRequest)
            monitors.each { $0.request($1, didAdapt: urlRequest, attempt: number) }
        }
        if !interceptors.isEmpty { state.withLock { $0.sent = urlRequest } }
        let timeout = request.timeout ?? configuration.timeout
        let options = TransferOptions(
            timeout: timeout,
            priority: request.priority.taskPriority,
            credentials: request.credentials,
            maximumResponseSize: configuration.maximumResponseSize,
            redirects: configuration.redirects,
            idleTimeout: configuration.idleTimeout
        )
        // The last value is always kept (``Dispatcher/runningRequests``); observers and the send's
        // closure get values through the gate, when they asked for progress.
        // The state, not `self`: a weak reference to the operation would give it a side table.
        var progress: @Sendable (TransferProgress) -> Void = { [state] value in state.withLock { $0.progress = value } }
        var gate: ProgressGate?
        if request.reportsProgress || progressHandler != nil {
            let toObservers = request.reportsProgress
            let post: @Sendable (TransferProgress) -> Void = { [weak self, progressHandler, completionQueue] value in
                guard let self, self.isTransferring(attempt: number) else { return }
                if toObservers { self.post(.progress(value, attempts: number)) }
                // Queued before the terminal event, which comes from this queue later: never after it.
                if let progressHandler { completionQueue.run { progressHandler(value) } }
            }
            let admitting = ProgressGate(post)
            let keep = progress
            (progress, gate) = (
                {
                    keep($0); admitting.offer($0)
                }, admitting
            )
        }
        let callbacks = TransferCallbacks(progress: progress) { [self, gate] result in
            // The last value held back by the gate goes out before the result: progress ends at the total.
            if case .success = result { gate?.flush() }
            transferEnded(result, attempt: number)
        }
        let task: any TransportTask
        if let download {
            task = DownloadTransfer.perform(
                urlRequest, body: prepared.body, origin: request, destination: download.destination, resumes: download.resumes,
                directory: configuration.partialDownloadsDirectory, transport: transport, options: options, callbacks: callbacks
            )
        } else {
            let transportRequest = TransportRequest(urlRequest, body: prepared.body, origin: request)
            if let coalescer, let key = CoalescingKey(transportRequest, options: options) {
                task = coalescer.perform(transportRequest, key: key, options: options, callbacks: callbacks, on: transport)
            } else {
                task = transport.perform(transportRequest, options: options, callbacks: callbacks)
            }
        }
        let (keep, stopping) = state.withLock { state -> (keep: Bool, stopping: Bool) in
            switch state.phase {
            case .starting(let attempt) where attempt == number:
                state.phase = .running(attempt: number, task: task)
                state.url = urlRequest.url
                return (true, false)
            case .stopping(let attempt, _) where attempt == number:
                return (false, true)  // cancel or deadline came while `perform` ran
            default:
                // The attempt already ended: the transport completed at once (stopping it is then
                // harmless).
                return (false, false)
            }
        }
        // Stopped while `perform` ran (its completion ends the attempt), or already ended: either way
        // the task is told to stop, which is harmless for a finished one.
        if !keep || stopping { task.cancel() }
    }

    /// Bodies up to this size are validated on the transport's queue (a few hundred microseconds at most);
    /// larger ones on a global queue.
    static var inlineDecodeLimit: Int { 64 << 10 }

    static func nanoseconds(_ seconds: TimeInterval) -> UInt64 {
        UInt64(max(0, min(seconds, 1e9)) * 1e9)
    }

    /// Whether attempt `number`'s transfer runs and wasn't told to stop (progress is posted only then).
    private func isTransferring(attempt number: Int) -> Bool {
        state.withLock { state in
            switch state.phase {
            case .starting(let attempt), .running(let attempt, _): attempt == number
            default: false
            }
        }
    }

    /// The transport's completion of attempt `number`: validates (off the transport's queue when the
    /// body is large, hooks will run or logging is on), then retries or finishes. A stopped attempt ends
    /// with its stop's reason; a late report of an attempt that already ended is ignored.
    private func transferEnded(_ result: Result<TransportResponse, NetworkError>, attempt number: Int) {
        let (stopReason, current, replaced) = state.withLock { state -> (NetworkError?, Bool, OperationPhase?) in
            switch state.phase {
            case .starting(let attempt) where attempt == number, .running(let attempt, _) where attempt == number:
                // The replaced phase (and its task) is released below, outside the lock: a transport's
                // task may be user code.
                let replaced = state.phase
                state.phase = .validating(attempt: number)
                state.deadline = .max
                return (nil, true, replaced)
            case .stopping(let attempt, let reason) where attempt == number:
                return (reason, true, nil)
            default:
                return (nil, false, nil)
            }
        }
        withExtendedLifetime(replaced) {}
        guard current else { return }
        if hooks.isEmpty, monitors.isEmpty, stopReason != nil || (try? result.get().data.count) ?? 0 < Self.inlineDecodeLimit {
            endAttempt(number, result, stopReason: stopReason)
        } else {
            // Decoding a large body, hooks and monitors (user code) run off the transport's queue, so
            // they delay no other transfer's callbacks.
            DispatchQueue.global().async { [self] in endAttempt(number, result, stopReason: stopReason) }
        }
    }

    /// The rest of ``transferEnded(_:attempt:)``: validates the transport's result (or takes the stop's
    /// reason), then retries or finishes. A method, not a closure, so the usual inline case allocates
    /// nothing.
    private func endAttempt(_ number: Int, _ result: Result<TransportResponse, NetworkError>, stopReason: NetworkError?) {
        if let stopReason {
            decide(.failure(stopReason), attempt: number)
            return
        }
        monitors.each { $0.request($1, didReceive: result, attempt: number) }
        // A 304 to a conditional request from the cache answers with the stored response.
        var received = result
        var origin = ResponseOrigin.network
        if case .success(let response) = result, let revalidated = CacheStage.revalidated(response, state.withLock({ $0.cache })) {
            (received, origin) = (.success(revalidated), .revalidated)
        }
        let outcome = received.flatMap { ResponseValidator.validate($0, for: request, configuration: configuration, origin: origin) }
        if !monitors.isEmpty, case .success = result {
            let decoded = context(of: outcome)
            monitors.each { $0.request($1, didDecode: decoded, attempt: number) }
        }
        decide(outcome, attempt: number)
    }

    /// Retries or finishes attempt `number` with `outcome`, unless the attempt already ended. A cancel
    /// that came meanwhile wins.
    private func decide(_ outcome: Outcome, attempt number: Int) {
        // The retry policy is read before taking the lock (`retryPolicy` is the request's own code).
        let policyDelay: TimeInterval? = outcome.failure.flatMap { $0.isCancelled ? nil : retryDelay(after: number, error: $0) }
        guard !interceptors.isEmpty, let error = outcome.failure, !error.isCancelled, number < Self.maximumAttempts else {
            settle(outcome, attempt: number, delay: policyDelay)
            return
        }
        // The interceptors have a say first; they may suspend (a token refresh), in a task, in the
        // `deciding` phase: a cancel ends the send at once, and so does the deadline.
        let deadline = DispatchTime.now().uptimeNanoseconds &+ Self.nanoseconds(timeout)
        let context = state.withLock { state -> RetryContext? in
            switch state.phase {
            case .validating(let attempt) where attempt == number, .stopping(let attempt, _) where attempt == number:
                guard let sent = state.sent, let outgoing = try? OutgoingRequest(sent) else { return nil }
                state.errors.append(error)
                state.phase = .deciding(attempt: number, task: nil)
                state.undecided = (outcome, policyDelay)
                state.deadline = deadline
                return RetryContext(request: outgoing, original: request, error: error, attempt: number, errors: state.errors)
            default:
                return nil
            }
        }
        guard let context else {
            settle(outcome, attempt: number, delay: policyDelay)
            return
        }
        let task = Task { [self] in
            var delay = policyDelay
            for interceptor in interceptors {
                switch await refreshScope.running({ await interceptor.retry(context) }) {
                case .doNotRetry: continue
                case .retry: delay = 0
                case .retryAfter(let seconds): delay = max(0, seconds)
                }
                break
            }
            settle(outcome, attempt: number, delay: delay, decidedByInterceptors: true)
        }
        let cancelNow = state.withLock { state -> Bool in
            switch state.phase {
            case .deciding(let attempt, nil) where attempt == number:
                state.phase = .deciding(attempt: number, task: task)
                return false
            case .deciding, .validating, .running, .starting, .adapting, .waiting:
                return false
            default:
                return true  // ended meanwhile (a cancel): the decision is not needed
            }
        }
        if cancelNow { task.cancel() }
    }

    /// Ends attempt `number` with `outcome`: a retry after `delay`, or the send's end. Nothing happens
    /// if the attempt already ended; a cancel that came meanwhile wins.
    /// `decidedByInterceptors`: the interceptors' decision, which counts only while they are still
    /// asked (not after the deadline took the decision from them).
    private func settle(_ outcome: Outcome, attempt number: Int, delay: TimeInterval?, decidedByInterceptors: Bool = false) {
        let next = state.withLock { state -> TransferOutcome in
            switch state.phase {
            case .deciding(let attempt, _) where attempt == number && decidedByInterceptors:
                state.undecided = nil
            case .validating(let attempt) where attempt == number && !decidedByInterceptors:
                break
            case .stopping(let attempt, let reason) where attempt == number:
                if reason.isCancelled {
                    state.phase = .finished
                    return .cancelled
                }
            default:
                return .ignore
            }
            guard let delay else {
                state.phase = .finished
                return .finish
            }
            state.phase = .waiting
            state.deadline = .max
            return .retry(delay)
        }
        switch next {
        case .ignore:
            return
        case .cancelled:
            complete(.failure(.cancelled))
        case .finish:
            complete(outcome)
        case .retry(let delay):
            if let error = outcome.failure { monitors.each { $0.request($1, willRetry: number + 1, after: delay, because: error) } }
            guard let route = state.withLock({ $0.route }) else { return }
            // Weakly: a send cancelled during the wait is finished and released at once (the
            // dispatcher's in-flight table holds it until then).
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
                self?.attempt(number + 1, route.prepared, on: route.transport)
            }
        }
    }

    private func retryDelay(after attempt: Int, error: NetworkError) -> TimeInterval? {
        retryPolicy.delay(afterAttempt: attempt, error: error, method: request.method)
    }

    /// Cancels the send. Before its first transfer `cancelled` is delivered right after `started`; while
    /// waiting to retry, at once, on this thread; during a transfer the transport is stopped and its
    /// completion delivers `cancelled` on the transport's queue (or a global queue, if the transport does
    /// not report within a second). Nothing happens if the send already finished.
    func cancel() {
        let action = state.withLock { state -> CancelAction in
            switch state.phase {
            case .finished, .pendingCancelled:
                return .none
            case .deciding(_, let task):
                state.phase = .finished
                state.undecided = nil
                return .cancelDeciding(task)
            case .adapting(let attempt, let task):
                state.phase = .stopping(attempt: attempt, reason: .cancelled)
                state.deadline = DispatchTime.now().uptimeNanoseconds &+ Self.stopGrace
                return .cancelAdapting(task)
            case .lookingUp:
                // Nothing to stop: the cache's answer, when it comes, finds the send ended.
                state.phase = .finished
                return .deliver
            case .stopping(let attempt, let reason):
                // A cancel during a deadline's stop turns it into a cancel, within the grace period.
                if !reason.isCancelled { state.phase = .stopping(attempt: attempt, reason: .cancelled) }
                state.deadline = min(state.deadline, DispatchTime.now().uptimeNanoseconds &+ Self.stopGrace)
                return .none
            case .pending:
                state.phase = .pendingCancelled
                return .none
            case .waiting:
                state.phase = .finished
                return .deliver
            case .starting(let attempt), .validating(let attempt):
                state.phase = .stopping(attempt: attempt, reason: .cancelled)
                state.deadline = DispatchTime.now().uptimeNanoseconds &+ Self.stopGrace
                return .none
            case .running(let attempt, let task):
                state.phase = .stopping(attempt: attempt, reason: .cancelled)
                state.deadline = DispatchTime.now().uptimeNanoseconds &+ Self.stopGrace
                return .cancelTask(task)
            }
        }
        switch action {
        case .none: break
        case .deliver: complete(.failure(.cancelled))
        case .cancelTask(let task): task.cancel()
        case .cancelAdapting(let task): task?.cancel()
        case .cancelDeciding(let task):
            task?.cancel()
            complete(.failure(.cancelled))
        }
    }

    /// The sweeper's check: an attempt past its deadline is told to stop (its completion then reports
    /// `timedOut`); a stop the transport hasn't reported within the grace period ends without it.
    var deadline: UInt64 { state.withLock { $0.deadline } }

    func expire(now: UInt64) {
        var settleLater: (attempt: Int, outcome: Outcome, delay: TimeInterval?)?
        let action = state.withLock { state -> ExpireAction in
            guard now >= state.deadline else { return .none }
            let grace = now &+ Self.stopGrace
            switch state.phase {
            case .starting(let attempt):
                state.phase = .stopping(attempt: attempt, reason: .timedOut(after: timeout))
                state.deadline = grace
                return .none  // `attempt` cancels the task once `perform` returns
            case .lookingUp(let attempt):
                // Nothing to stop: the attempt ends now (the retry policy decides what follows); the
                // cache's answer, when it comes, finds it ended.
                state.phase = .stopping(attempt: attempt, reason: .timedOut(after: timeout))
                state.deadline = .max
                return .endWithoutTransport(attempt: attempt, reason: .timedOut(after: timeout))
            case .adapting(let attempt, let task):
                state.phase = .stopping(attempt: attempt, reason: .timedOut(after: timeout))
                state.deadline = grace
                return .cancelAdapting(task)
            case .running(let attempt, let task):
                state.phase = .stopping(attempt: attempt, reason: .timedOut(after: timeout))
                state.deadline = grace
                return .stop(task)
            case .stopping(let attempt, let reason):
                state.deadline = .max
                return .endWithoutTransport(attempt: attempt, reason: reason)
            case .deciding(let attempt, let task):
                // The interceptors took longer than the deadline: the retry policy decides alone.
                guard let undecided = state.undecided else { return .none }
                state.deadline = .max
                state.phase = .validating(attempt: attempt)
                settleLater = (attempt, undecided.outcome, undecided.policyDelay)
                return .cancelDeciding(task)
            default:
                state.deadline = .max
                return .none
            }
        }
        switch action {
        case .none:
            break
        case .stop(let task):
            task.cancel()
        case .cancelAdapting(let task):
            task?.cancel()
        case .cancelDeciding(let task):
            task?.cancel()
            if let (attempt, outcome, delay) = settleLater {
                DispatchQueue.global().async { [self] in settle(outcome, attempt: attempt, delay: delay) }
            }
        case .endWithoutTransport(let attempt, let reason):
            // Off the sweeper's queue: delivering runs user code (`.immediate` observers).
            DispatchQueue.global().async { [self] in decide(.failure(reason), attempt: attempt) }
        }
    }

    /// Finishes a send whose next attempt could not be built or adapted.
    private func finish(_ result: Outcome) {
        let first = state.withLock { state -> Bool in
            switch state.phase {
            case .finished: return false
            case .pending, .pendingCancelled, .waiting:
                state.phase = .finished
                return true
            default:
                return false
            }
        }
        if first { complete(result) }
    }

    /// Runs the hooks and delivers the one terminal event; the state is already `finished`.
    private func complete(_ result: Outcome) {
        // The state is final: the count of transfers started no longer changes. What the attempts
        // sent is no longer needed (a handle may outlive the send; an assembled body's temporary
        // file goes now); it is released outside the lock.
        let (attempts, route) = state.withLock { state in
            defer { state.route = nil }
            return (state.transfers, state.route)
        }
        route?.prepared.temporaryFile?.remove()
        var final = result.failure?.isCancelled == true ? result : applyHooks(to: cached(result))
        if case .success(var response) = final {
            response.attempts = attempts
            response.sendID = id
            final = .success(response)
        }
        deliver(final, attempts: attempts)
    }

    /// The cache's part in the end of a send: the network's success is stored; with
    /// ``CachePolicy/Mode/networkElseCache`` a network failure is answered by the stored entry.
    private func cached(_ result: Outcome) -> Outcome {
        guard let context = state.withLock({ $0.cache }) else { return result }
        switch result {
        case .success(let response) where response.origin == .network || response.origin == .revalidated:
            CacheStage.store(response, context)
        case .failure(let error) where context.policy.mode == .networkElseCache && CacheStage.isNetworkFailure(error):
            if let entry = context.stored, case .success(let stale) = cachedResponse(entry, origin: .stale) { return .success(stale) }
        default:
            break
        }
        return result
    }

    private func applyHooks(to result: Outcome) -> Outcome {
        guard !hooks.isEmpty else { return result }
        var outcome = result
        if case .success(let response) = outcome {
            let answered = context(of: response)
            do {
                for hook in hooks { try hook.didSucceed(answered) }
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

    /// The one terminal event: monitors' didFinish, willDeliver → observers, then the call's own
    /// closure → didDeliver.
    private func deliver(_ outcome: Outcome, attempts: Int) {
        let error = outcome.failure
        let callbackQueue = configuration.callbackQueue
        if !monitors.isEmpty {
            let finished = context(of: outcome)
            monitors.each { $0.request($1, didFinish: finished) }
            callbackQueue.run { [monitors] in
                monitors.each { $0.requestWillDeliver($1, error: error) }
            }
        }
        let result: Result<Response<R>, NetworkError>
        switch outcome {
        case .success(let parts): result = .success(Response(request: request, parts: parts))
        case .failure(let error): result = .failure(error)
        }
        func event() -> RequestEvent<R> { RequestEvent(request: request, result: result, sendID: id, attempts: attempts) }
        if let completion, completionQueue.dispatchQueue != nil {
            // Observers first, then the completion, on its queue (in their block when they share it).
            registry.post(R.self, then: completionQueue, event) { [refreshScope] in refreshScope.run { completion(result) } }
            onFinish(id)
        } else {
            // The event is made only if something observes it; the completion (or the continuation)
            // runs here, after the `.immediate` observers.
            registry.post(R.self, event)
            // It leaves the count after its `.immediate` observers ran, before its caller resumes.
            onFinish(id)
            if let continuation {
                SanitizerHandOff.release(self)
                continuation.resume(returning: result)
            } else if let completion {
                refreshScope.run { completion(result) }
            }
        }
        if !monitors.isEmpty {
            callbackQueue.run { [monitors] in
                monitors.each { $0.requestDidDeliver($1, error: error) }
            }
        }
    }

    /// A result as monitors see it, whatever the request type.
    private func context(of outcome: Outcome) -> Result<ResponseContext, NetworkError> {
        outcome.map(context(of:))
    }

    /// A response as hooks and monitors see it.
    private func context(of response: ResponseParts) -> ResponseContext {
        ResponseContext(request: request, httpResponse: response.head.response, data: response.data, json: response.json, httpVersion: response.head.httpVersion)
    }
}

/// Passes on at most one progress value per 16 ms (a screen frame), and always one that completes the
/// body sent or received: a transport reports every 16 KiB chunk, 65,000 times a GiB. The last value
/// held back is passed on by ``flush()`` when the transfer succeeds.
private final class ProgressGate: Sendable {
    private let state = Locked((last: UInt64(0), held: TransferProgress?.none))
    private let post: @Sendable (TransferProgress) -> Void

    init(_ post: @escaping @Sendable (TransferProgress) -> Void) {
        self.post = post
    }

    func offer(_ progress: TransferProgress) {
        let complete =
            progress.bytesReceived == progress.expectedBytesToReceive
            || (progress.bytesReceived == 0 && progress.bytesSent == progress.expectedBytesToSend)
        let now = DispatchTime.now().uptimeNanoseconds
        let admitted = state.withLock { state -> Bool in
            guard complete || now &- state.last >= 16_000_000 else {
                state.held = progress
                return false
            }
            state.last = now
            state.held = nil
            return true
        }
        if admitted { post(progress) }
    }

    func flush() {
        if let held = state.withLock({ state in
            defer { state.held = nil }; return state.held
        }) {
            post(held)
        }
    }
}

/// What comes after the interceptors adapted an attempt's request.
private enum AdaptedNext {
    case ignore, lookUp(CacheSetting), transfer, stopped(NetworkError)
}

/// What comes after the cache answered an attempt's lookup.
private enum LookupNext {
    case ignore, answer, transfer
}

/// What to do after a transfer ended.
private enum TransferOutcome {
    case ignore, cancelled, retry(TimeInterval), finish
}

/// What a cancel does once the state is updated.
private enum CancelAction {
    case none, deliver, cancelTask(any TransportTask), cancelAdapting(Task<Void, Never>?), cancelDeciding(Task<Void, Never>?)
}

/// What the sweeper does to an operation.
private enum ExpireAction {
    case none
    /// Tell the transfer to stop (its deadline passed).
    case stop(any TransportTask)
    /// Cancel the interceptors' task (the deadline passed while they adapted).
    case cancelAdapting(Task<Void, Never>?)
    /// Cancel the interceptors' retry decision (the deadline passed while they decided).
    case cancelDeciding(Task<Void, Never>?)
    /// The transfer didn't report its stop in time: end the attempt without it.
    case endWithoutTransport(attempt: Int, reason: NetworkError)
}

extension Result {
    /// The error, or `nil` on success.
    package var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
