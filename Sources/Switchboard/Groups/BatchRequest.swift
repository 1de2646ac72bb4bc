import Dispatch

/// Receives a batch's end on the main actor: YTKNetwork's `YTKBatchRequestDelegate`.
@MainActor public protocol BatchRequestDelegate: AnyObject, Sendable {
    /// Every request succeeded.
    func batchRequestFinished(_ batch: BatchRequest)
    /// A request failed (or the batch was stopped, or could not start).
    func batchRequestFailed(_ batch: BatchRequest, error: GroupError)
}

/// Several requests of any types sent together, with one result: YTKNetwork's `YTKBatchRequest`, with
/// what its users asked for — results in the order given, a choice of failure mode, progress, a
/// concurrency limit, `await`, and no casting.
///
/// ```swift
/// let batch = BatchRequest([GetImage("1.jpg"), GetImage("2.jpg"), GetUserInfo(id: "123")])
/// batch.start(success: { responses in
///     let user = responses[2].typed(GetUserInfo.self)?.json["user"]
/// }, failure: { error in
///     print(error.failed?.request as Any, error.error)
/// })
/// ```
/// For fixed types, ``Dispatcher/batch(_:maximumConcurrency:)`` returns a tuple of typed responses.
///
/// - **Fail-fast** (the default): the first failure cancels the other members at once and ends the
///   batch with that member and its error; the cancelled members are not waited for.
/// - **Collect-all**: every member runs; the batch succeeds if all did, else fails with the first
///   failure and every member's outcome in ``GroupError/outcomes``.
///
/// Each member is an ordinary send: observers of its request type get its events, and its retry
/// policy and interceptors apply. The batch's closures, delegate and ``GroupEvent``s run on the
/// dispatcher's ``Configuration/callbackQueue``. A batch starts once; it stays alive while it runs,
/// and nothing keeps it afterwards.
public final class BatchRequest: RequestGroup {
    /// How a batch reacts to a failed member.
    public enum FailureMode: Sendable {
        /// The first failure cancels the rest and ends the batch.
        case failFast
        /// Every member runs to its end.
        case collectAll
    }

    private struct State {
        var handles: [Int: RequestHandle] = [:]
        var results: [Result<any AnyResponse, NetworkError>?]
        var next = 0
        /// Members started and not yet ended (the concurrency limit counts these).
        var running = 0
        var completed = 0
        var failure: GroupError?
        var stopped = false
        var delegate: WeakDelegate?
        var done: (@Sendable (Result<[any AnyResponse], GroupError>) -> Void)?
        /// `done` runs at once, on the queue that ends the batch (for `await`), not on the callback queue.
        var doneAtOnce = false
    }

    private struct WeakDelegate: Sendable {
        weak var value: (any BatchRequestDelegate)?
    }

    /// The requests, in order.
    public let requests: [any Request]
    /// What a failure does.
    public let failureMode: FailureMode
    /// How many members run at once; `nil`: all.
    public let maximumConcurrency: Int?
    private let members: [GroupMember]
    private let dispatcher: Dispatcher
    private let lifecycle: GroupLifecycle
    /// Locked: the app's calls (start, stop, delegate, progress) come from any thread; members' ends come on `queue`.
    private let state: Locked<State>
    /// Where members' ends are handled, one at a time, in order.
    private let queue = DispatchQueue(label: "switchboard.batch")

    /// Creates a batch of requests of any types.
    /// - Parameters:
    ///   - requests: the requests; the results come back in this order.
    ///   - failureMode: fail-fast (default) or collect-all.
    ///   - maximumConcurrency: how many run at once; `nil` (default) for all.
    ///   - dispatcher: what sends them; ``Dispatcher/shared`` by default.
    public init(_ requests: [any Request], failureMode: FailureMode = .failFast, maximumConcurrency: Int? = nil, dispatcher: Dispatcher = .shared) {
        self.requests = requests
        members = requests.map { GroupMember($0) }
        self.failureMode = failureMode
        self.maximumConcurrency = maximumConcurrency.map { max(1, $0) }
        self.dispatcher = dispatcher
        lifecycle = GroupLifecycle(callbackQueue: dispatcher.configuration.callbackQueue)
        state = Locked(State(results: Array(repeating: nil, count: requests.count)))
    }

    /// Receives the batch's end on the main actor; held weakly.
    public var delegate: (any BatchRequestDelegate)? {
        get { state.withLock { $0.delegate?.value } }
        set { state.withLock { $0.delegate = WeakDelegate(value: newValue) } }
    }

    /// Follow the batch's life; set before it starts.
    public var accessories: [any GroupAccessory] {
        get { lifecycle.accessories }
        set { lifecycle.accessories = newValue }
    }

    /// Adds an observer of the batch's ``GroupEvent``s, called on `queue` (default: the callback queue).
    public func addObserver(on queue: CallbackQueue? = nil, _ handler: @escaping @Sendable (GroupEvent) -> Void) {
        lifecycle.addObserver(on: queue, handler)
    }

    public var isFinished: Bool { lifecycle.isFinished }

    public var progress: (completed: Int, total: Int) { (state.withLock { $0.completed }, members.count) }

    /// Starts the batch. Exactly one of `success` and `failure` is called, once, on the callback queue.
    /// Starting a batch twice fails the second start with ``NetworkError/invalidRequest(reason:)``.
    /// - Parameters:
    ///   - progress: called as members finish, with the number finished and the total.
    ///   - success: every response, in the order of ``requests``.
    ///   - failure: the failed member (or why the batch could not run) and every member's outcome.
    public func start(
        progress: (@Sendable (_ completed: Int, _ total: Int) -> Void)? = nil,
        success: (@Sendable ([any AnyResponse]) -> Void)? = nil,
        failure: (@Sendable (GroupError) -> Void)? = nil
    ) {
        if let progress {
            addObserver { event in if case .progress(let completed, let total) = event { progress(completed, total) } }
        }
        run { result in
            switch result {
            case .success(let responses): success?(responses)
            case .failure(let error): failure?(error)
            }
        }
    }

    /// Runs the batch and returns every response in order. Cancelling the calling task stops the batch.
    /// - Throws: ``GroupError``.
    public func run() async throws(GroupError) -> [any AnyResponse] {
        try await awaitGroup(start: { run(done: $0, atOnce: true) }, stop: stop)
    }

    private func run(done: @escaping @Sendable (Result<[any AnyResponse], GroupError>) -> Void, atOnce: Bool = false) {
        guard lifecycle.begin(self) else {
            let error = GroupError(.invalidRequest(reason: "this batch was already started; make a new BatchRequest to send the requests again"))
            (atOnce ? .immediate : lifecycle.callbackQueue).run { done(.failure(error)) }
            return
        }
        let stopped = state.withLock { state in
            state.done = done
            state.doneAtOnce = atOnce
            return state.stopped
        }
        if members.isEmpty || stopped {
            queue.async { self.finish() }
            return
        }
        launchNext()
    }

    /// Starts members up to the concurrency limit.
    private func launchNext() {
        while true {
            let index = state.withLock { state -> Int? in
                guard !state.stopped, state.failure == nil || failureMode == .collectAll, state.next < members.count,
                    state.running < (maximumConcurrency ?? .max)
                else { return nil }
                defer { state.next += 1 }
                state.running += 1
                return state.next
            }
            guard let index else { return }
            let handle = members[index].send(on: dispatcher) { [self] result in
                queue.async { self.memberEnded(index, result) }
            }
            let cancelNow = state.withLock { state -> Bool in
                if state.results[index] == nil { state.handles[index] = handle }
                return state.stopped || (state.failure != nil && failureMode == .failFast)
            }
            if cancelNow { handle.cancel() }
        }
    }

    private func memberEnded(_ index: Int, _ result: Result<any AnyResponse, NetworkError>) {
        let (others, firstFailure) = state.withLock { state -> ([RequestHandle], Bool) in
            state.handles[index] = nil
            state.results[index] = result
            state.completed += 1
            state.running -= 1
            guard case .failure(let error) = result, state.failure == nil, !state.stopped else { return ([], false) }
            state.failure = GroupError(error, failed: MemberOutcome(index: index, request: members[index].request, result: result))
            guard failureMode == .failFast else { return ([], true) }
            defer { state.handles = [:] }
            return (Array(state.handles.values), true)
        }
        let (completed, total) = progress
        lifecycle.emit(.progress(completed: completed, total: total))
        if firstFailure, failureMode == .failFast {
            for handle in others { handle.cancel() }
            finish()  // the cancelled members are not waited for
            return
        }
        if completed == total { finish() } else { launchNext() }
    }

    /// Every member's outcome so far (`.cancelled` for one the batch stopped).
    private func outcomes(_ state: State) -> [MemberOutcome] {
        members.indices.map { index in
            let result = state.results[index] ?? (state.handles[index] != nil || index < state.next ? .failure(.cancelled) : nil)
            return MemberOutcome(index: index, request: members[index].request, result: result)
        }
    }

    private func finish() {
        let (outcome, done, atOnce, delegate) = state.withLock {
            state -> (Result<[any AnyResponse], GroupError>, (@Sendable (Result<[any AnyResponse], GroupError>) -> Void)?, Bool, WeakDelegate?) in
            let outcomes = outcomes(state)
            let result: Result<[any AnyResponse], GroupError>
            if state.stopped {
                result = .failure(GroupError(.cancelled, outcomes: outcomes))
            } else if let failure = state.failure {
                result = .failure(GroupError(failure.error, failed: failure.failed, outcomes: outcomes))
            } else {
                result = .success(outcomes.compactMap(\.response))
            }
            defer { state.done = nil }
            return (result, state.done, state.doneAtOnce, state.delegate)
        }
        if atOnce, done != nil, !lifecycle.isFinished { done?(outcome) }
        let event: GroupEvent
        switch outcome {
        case .success: event = .finished
        case .failure(let error): event = error.isCancelled ? .cancelled : .failed(error)
        }
        lifecycle.end(self, event) { [self] in
            if !atOnce { done?(outcome) }
            guard let delegate else { return }
            onMainActor {
                switch outcome {
                case .success: delegate.value?.batchRequestFinished(self)
                case .failure(let error): delegate.value?.batchRequestFailed(self, error: error)
                }
            }
        }
    }

    /// Stops the batch: its running members are cancelled, the rest never start, and it ends
    /// ``GroupEvent/cancelled`` at once (unless it already ended).
    public func stop() {
        let handles = state.withLock { state -> [RequestHandle]? in
            guard !state.stopped else { return nil }
            state.stopped = true  // also before the start: it then ends at once, cancelled
            guard state.done != nil else { return nil }
            defer { state.handles = [:] }
            return Array(state.handles.values)
        }
        guard let handles else { return }
        for handle in handles { handle.cancel() }
        queue.async { self.finish() }
    }
}
