import Dispatch

/// Receives a chain's end on the main actor: YTKNetwork's `YTKChainRequestDelegate`.
@MainActor public protocol ChainRequestDelegate: AnyObject, Sendable {
    /// Every request succeeded.
    func chainRequestFinished(_ chain: ChainRequest)
    /// A request failed (``GroupError/failed`` names it), or the chain was stopped.
    func chainRequestFailed(_ chain: ChainRequest, error: GroupError)
}

/// Requests sent one after another, each maybe built from the one before: YTKNetwork's
/// `YTKChainRequest`, with closures and `await` beside the delegate, and nothing kept alive after it
/// ends (YTKNetwork's chain leaked without a delegate).
///
/// ```swift
/// let chain = ChainRequest()
/// chain.add(Register(username: "ada", password: "secret")) { chain, response in
///     chain.add(GetUserInfo(id: response.json["userId"].string ?? ""))
/// }
/// let responses = try await chain.run()
/// ```
///
/// A request's callback runs after it succeeded and before the next request starts, on
/// ``Configuration/callbackQueue``; it may add requests. The chain ends when its last request
/// succeeded (with every response, in order) or at the first failure (with that request). ``stop()``
/// cancels the running request and drops the rest; afterwards no callback runs but the cancellation.
public final class ChainRequest: RequestGroup {
    private struct Link: Sendable {
        let member: GroupMember
        let callback: (@Sendable (ChainRequest, any AnyResponse) -> Void)?
    }

    private struct State {
        var links: [Link] = []
        var responses: [any AnyResponse] = []
        var current: RequestHandle?
        var failedIndex: Int?
        var stopped = false
        var running = false
        var delegate: WeakDelegate?
        var done: (@Sendable (Result<[any AnyResponse], GroupError>) -> Void)?
        var doneAtOnce = false
    }

    private struct WeakDelegate: Sendable {
        weak var value: (any ChainRequestDelegate)?
    }

    private let dispatcher: Dispatcher
    private let lifecycle: GroupLifecycle
    /// Locked: the app's calls (add, stop, delegate) come from any thread; ends come on `queue`, callbacks on the callback queue.
    private let state = Locked(State())
    /// Where requests' ends and a stop are handled, one at a time, in order.
    private let queue = DispatchQueue(label: "switchboard.chain")

    /// Creates an empty chain.
    /// - Parameter dispatcher: what sends the requests; ``Dispatcher/shared`` by default.
    public init(dispatcher: Dispatcher = .shared) {
        self.dispatcher = dispatcher
        lifecycle = GroupLifecycle(callbackQueue: dispatcher.configuration.callbackQueue)
    }

    /// Appends a request; `callback` runs after it succeeded, before the next one starts (add the next
    /// request there to build it from this response).
    /// - Parameters:
    ///   - request: the request.
    ///   - callback: the chain and the request's response, on ``Configuration/callbackQueue``.
    public func add<R: Request>(_ request: R, then callback: (@Sendable (ChainRequest, Response<R>) -> Void)? = nil) {
        var erased: (@Sendable (ChainRequest, any AnyResponse) -> Void)?
        if let callback {
            erased = { chain, response in
                if let typed = response.typed(R.self) { callback(chain, typed) }
            }
        }
        let link = Link(member: GroupMember(request), callback: erased)
        state.withLock { $0.links.append(link) }
    }

    /// The requests added so far, in order.
    public var requests: [any Request] { state.withLock { $0.links.map(\.member.request) } }

    /// Receives the chain's end on the main actor; held weakly.
    public var delegate: (any ChainRequestDelegate)? {
        get { state.withLock { $0.delegate?.value } }
        set { state.withLock { $0.delegate = WeakDelegate(value: newValue) } }
    }

    /// Follow the chain's life; set before it starts.
    public var accessories: [any GroupAccessory] {
        get { lifecycle.accessories }
        set { lifecycle.accessories = newValue }
    }

    /// Adds an observer of the chain's ``GroupEvent``s, called on `queue` (default: the callback queue).
    public func addObserver(on queue: CallbackQueue? = nil, _ handler: @escaping @Sendable (GroupEvent) -> Void) {
        lifecycle.addObserver(on: queue, handler)
    }

    public var isFinished: Bool { lifecycle.isFinished }

    public var progress: (completed: Int, total: Int) { state.withLock { ($0.responses.count, $0.links.count) } }

    /// Starts the chain. Exactly one of `success` and `failure` is called, once, on the callback queue.
    /// Starting a chain twice fails the second start with ``NetworkError/invalidRequest(reason:)``.
    public func start(success: (@Sendable ([any AnyResponse]) -> Void)? = nil, failure: (@Sendable (GroupError) -> Void)? = nil) {
        begin(atOnce: false) { result in
            switch result {
            case .success(let responses): success?(responses)
            case .failure(let error): failure?(error)
            }
        }
    }

    /// Runs the chain and returns every response in order. Cancelling the calling task stops it.
    /// - Throws: ``GroupError``.
    public func run() async throws(GroupError) -> [any AnyResponse] {
        try await awaitGroup(start: { begin(atOnce: true, done: $0) }, stop: stop)
    }

    private func begin(atOnce: Bool, done: @escaping @Sendable (Result<[any AnyResponse], GroupError>) -> Void) {
        guard lifecycle.begin(self) else {
            let error = GroupError(.invalidRequest(reason: "this chain was already started; make a new ChainRequest to send its requests again"))
            (atOnce ? .immediate : lifecycle.callbackQueue).run { done(.failure(error)) }
            return
        }
        state.withLock { state in
            state.done = done
            state.doneAtOnce = atOnce
            state.running = true
        }
        queue.async { self.sendNext() }  // a stop before the start ends it here, cancelled
    }

    /// Sends the next request, or ends the chain when there is none.
    private func sendNext() {
        let next = state.withLock { state -> (index: Int, link: Link)? in
            guard !state.stopped, state.responses.count < state.links.count else { return nil }
            let index = state.responses.count
            return (index, state.links[index])
        }
        guard let next else {
            finish()
            return
        }
        let handle = next.link.member.send(on: dispatcher) { [self] result in queue.async { self.ended(next.index, next.link, result) } }
        let cancel = state.withLock { state -> Bool in
            guard !state.stopped else { return true }
            // Only while it is still the current request (with `.immediate` its end, and the next
            // request's start, may already have come).
            if state.responses.count == next.index { state.current = handle }
            return false
        }
        if cancel { handle.cancel() }
    }

    private func ended(_ index: Int, _ link: Link, _ result: Result<any AnyResponse, NetworkError>) {
        let proceed = state.withLock { state -> Bool in
            state.current = nil
            guard !state.stopped else { return false }
            switch result {
            case .success(let response):
                state.responses.append(response)
                return true
            case .failure:
                state.failedIndex = index
                return false
            }
        }
        guard proceed, case .success(let response) = result else {
            finish(failure: result.failure.map { (index, link, $0) })
            return
        }
        let (completed, total) = progress
        lifecycle.emit(.progress(completed: completed, total: total))
        // The callback (user code: it may add requests) on the callback queue, then the next request.
        lifecycle.callbackQueue.run { [self] in
            if !state.withLock({ $0.stopped }) { link.callback?(self, response) }
            sendNext()
        }
    }

    private func finish(failure: (index: Int, link: Link, error: NetworkError)? = nil) {
        let (outcome, done, atOnce, delegate) = state.withLock {
            state -> (Result<[any AnyResponse], GroupError>, (@Sendable (Result<[any AnyResponse], GroupError>) -> Void)?, Bool, WeakDelegate?) in
            let outcomes = state.links.indices.map { index -> MemberOutcome in
                let result: Result<any AnyResponse, NetworkError>? =
                    index < state.responses.count
                    ? .success(state.responses[index])
                    : index == state.responses.count && (failure != nil || state.stopped) && index < state.links.count
                        ? .failure(failure?.error ?? .cancelled) : nil
                return MemberOutcome(index: index, request: state.links[index].member.request, result: result)
            }
            let result: Result<[any AnyResponse], GroupError>
            if let failure, !state.stopped {
                result = .failure(GroupError(failure.error, failed: outcomes[failure.index], outcomes: outcomes))
            } else if state.stopped {
                result = .failure(GroupError(.cancelled, outcomes: outcomes))
            } else {
                result = .success(state.responses)
            }
            defer {
                state.done = nil
                state.running = false
                // Let go of the callbacks (they may capture whoever owns the chain).
                state.links = state.links.map { Link(member: $0.member, callback: nil) }
            }
            return (result, state.done, state.doneAtOnce, state.delegate)
        }
        guard let done else { return }
        if atOnce { done(outcome) }
        let event: GroupEvent
        switch outcome {
        case .success: event = .finished
        case .failure(let error): event = error.isCancelled ? .cancelled : .failed(error)
        }
        lifecycle.end(self, event) { [self] in
            if !atOnce { done(outcome) }
            guard let delegate else { return }
            onMainActor {
                switch outcome {
                case .success: delegate.value?.chainRequestFinished(self)
                case .failure(let error): delegate.value?.chainRequestFailed(self, error: error)
                }
            }
        }
    }

    /// Stops the chain: the running request is cancelled, the rest are dropped, and the chain ends
    /// ``GroupEvent/cancelled`` (unless it already ended). No request's callback runs afterwards.
    public func stop() {
        let current = state.withLock { state -> RequestHandle?? in
            guard !state.stopped else { return .none }
            state.stopped = true  // also before the start: it then ends at once, cancelled
            guard state.running else { return .none }
            defer { state.current = nil }
            return .some(state.current)
        }
        guard let current else { return }
        current?.cancel()
        queue.async { self.finish() }
    }
}
