import Dispatch

/// Requests with dependencies: each runs once the requests it depends on succeeded, independent ones
/// in parallel (up to a limit), and a request can be built from its dependencies' responses — the
/// "multiple network requests after topology sorting" YTKNetwork's docs hint at.
///
/// ```swift
/// let graph = RequestGraph()
/// graph.add("user", GetUserInfo(id: "123"))
/// graph.add("avatar", dependsOn: ["user"]) { done in
///     GetImage(done["user"]?.json["user"]["avatar"].string ?? "default.jpg")
/// }
/// graph.add("friends", dependsOn: ["user"], GetFriends(of: "123"))
/// let results = try await graph.run()
/// let avatar = results.response("avatar", as: GetImage.self)
/// ```
///
/// Before anything is sent, a cycle, a missing dependency or a name used twice fails the graph with
/// ``NetworkError/invalidRequest(reason:)``. When a node fails, the nodes that depend on it (directly or
/// not) never start and end ``NetworkError/cancelled``; independent nodes still run; then the graph
/// fails with the failed node (``GroupError/failed``, whose ``MemberOutcome/name`` is the node's).
public final class RequestGraph: RequestGroup {
    private struct Node: Sendable {
        let name: String
        let dependencies: [String]
        let make: @Sendable (GraphResults) throws -> GroupMember
        /// The request, when given as a value (for outcomes before it is built).
        let given: (any Request)?
    }

    private enum NodeState {
        case waiting, running(RequestHandle?), succeeded(any AnyResponse), failed(NetworkError), cancelled
    }

    private struct State {
        var nodes: [Node] = []
        var states: [String: NodeState] = [:]
        var built: [String: any Request] = [:]
        var firstFailure: String?
        var stopped = false
        var done: (@Sendable (Result<GraphResults, GroupError>) -> Void)?
        var doneAtOnce = false
        var started = false
        /// A node added after the start (refused: the graph fails with it when it ends).
        var lateNode: String?
    }

    /// How many nodes run at once.
    public let maximumConcurrency: Int
    private let dispatcher: Dispatcher
    private let lifecycle: GroupLifecycle
    /// Locked: the app's calls (add, start, stop, response(_:)) come from any thread; nodes' ends come on `queue`.
    private let state = Locked(State())
    /// Where nodes' ends are handled, one at a time.
    private let queue = DispatchQueue(label: "switchboard.graph")

    /// Creates an empty graph.
    /// - Parameters:
    ///   - maximumConcurrency: how many nodes run at once (default 4).
    ///   - dispatcher: what sends the requests; ``Dispatcher/shared`` by default.
    public init(maximumConcurrency: Int = 4, dispatcher: Dispatcher = .shared) {
        self.maximumConcurrency = max(1, maximumConcurrency)
        self.dispatcher = dispatcher
        lifecycle = GroupLifecycle(callbackQueue: dispatcher.configuration.callbackQueue)
    }

    /// Adds a node with a request given as it is.
    /// - Parameters:
    ///   - name: the node's name, unique in the graph.
    ///   - dependencies: the names of the nodes that must succeed first.
    ///   - request: the request.
    public func add<R: Request>(_ name: String, dependsOn dependencies: [String] = [], _ request: R) {
        let member = GroupMember(request)
        append(Node(name: name, dependencies: dependencies, make: { _ in member }, given: request))
    }

    /// Adds a node before the start; one added later is refused and fails the graph when it ends.
    private func append(_ node: Node) {
        state.withLock { state in
            if state.started {
                if state.lateNode == nil { state.lateNode = node.name }
            } else {
                state.nodes.append(node)
            }
        }
    }

    /// Adds a node whose request is built from its dependencies' responses, when they have all
    /// succeeded (on a queue of the graph's own). A `make` that throws fails the node with
    /// ``NetworkError/invalidRequest(reason:)``.
    /// - Parameters:
    ///   - name: the node's name, unique in the graph.
    ///   - dependencies: the names of the nodes that must succeed first.
    ///   - make: builds the request from the responses so far.
    public func add<R: Request>(_ name: String, dependsOn dependencies: [String] = [], _ make: @escaping @Sendable (GraphResults) throws -> R) {
        append(Node(name: name, dependencies: dependencies, make: { GroupMember(try make($0)) }, given: nil))
    }

    /// Follow the graph's life; set before it starts.
    public var accessories: [any GroupAccessory] {
        get { lifecycle.accessories }
        set { lifecycle.accessories = newValue }
    }

    /// Adds an observer of the graph's ``GroupEvent``s, called on `queue` (default: the callback queue).
    public func addObserver(on queue: CallbackQueue? = nil, _ handler: @escaping @Sendable (GroupEvent) -> Void) {
        lifecycle.addObserver(on: queue, handler)
    }

    public var isFinished: Bool { lifecycle.isFinished }

    public var progress: (completed: Int, total: Int) {
        state.withLock { state in
            (state.states.values.filter { if case .waiting = $0 { false } else if case .running = $0 { false } else { true } }.count, state.nodes.count)
        }
    }

    /// Starts the graph; `completion` gets every node's response, or the failure, once, on the
    /// callback queue. Starting a graph twice fails the second start with ``NetworkError/invalidRequest(reason:)``.
    public func start(_ completion: @escaping @Sendable (Result<GraphResults, GroupError>) -> Void) {
        begin(atOnce: false, done: completion)
    }

    /// Runs the graph and returns every node's response. Cancelling the calling task stops it.
    /// - Throws: ``GroupError``.
    public func run() async throws(GroupError) -> GraphResults {
        try await awaitGroup(start: { begin(atOnce: true, done: $0) }, stop: stop)
    }

    private func begin(atOnce: Bool, done: @escaping @Sendable (Result<GraphResults, GroupError>) -> Void) {
        let deliverNow: CallbackQueue = atOnce ? .immediate : lifecycle.callbackQueue
        guard lifecycle.begin(self) else {
            let error = GroupError(.invalidRequest(reason: "this graph was already started; make a new RequestGraph to send its requests again"))
            deliverNow.run { done(.failure(error)) }
            return
        }
        let problem = state.withLock { state -> String? in
            state.done = done
            state.doneAtOnce = atOnce
            state.started = true
            for node in state.nodes { state.states[node.name] = .waiting }
            return Self.problem(in: state.nodes)
        }
        if let problem {
            finish(invalid: problem)
            return
        }
        queue.async { self.launchReady() }
    }

    /// A name used twice, a missing dependency or a cycle (named by its path), or `nil`.
    private static func problem(in nodes: [RequestGraph.Node]) -> String? {
        var seen = Set<String>()
        for node in nodes {
            guard seen.insert(node.name).inserted else { return "the graph has two nodes named \(node.name.debugDescription)" }
        }
        for node in nodes {
            if let missing = node.dependencies.first(where: { !seen.contains($0) }) {
                return "node \(node.name.debugDescription) depends on \(missing.debugDescription), which is not in the graph"
            }
        }
        // Depth-first search; a node met again while on the path closes a cycle.
        let byName = Dictionary(uniqueKeysWithValues: nodes.map { ($0.name, $0) })
        var finished = Set<String>()
        var path: [String] = []
        func visit(_ name: String) -> [String]? {
            if finished.contains(name) { return nil }
            if let start = path.firstIndex(of: name) { return Array(path[start...]) + [name] }
            path.append(name)
            for dependency in byName[name]?.dependencies ?? [] {
                if let cycle = visit(dependency) { return cycle }
            }
            path.removeLast()
            finished.insert(name)
            return nil
        }
        for node in nodes {
            if let cycle = visit(node.name) { return "the graph has a cycle: \(cycle.reversed().joined(separator: " → "))" }
        }
        return nil
    }

    /// Starts every node whose dependencies all succeeded, up to the limit; ends the graph when
    /// nothing runs and nothing can start. On the graph's queue.
    private func launchReady() {
        while true {
            let next = state.withLock { state -> (node: Node, results: GraphResults)? in
                guard !state.stopped else { return nil }
                let running = state.states.values.filter { if case .running = $0 { true } else { false } }.count
                guard running < maximumConcurrency else { return nil }
                guard
                    let node = state.nodes.first(where: { node in
                        guard case .waiting? = state.states[node.name] else { return false }
                        return node.dependencies.allSatisfy { if case .succeeded? = state.states[$0] { true } else { false } }
                    })
                else { return nil }
                state.states[node.name] = .running(nil)
                return (node, GraphResults(responses(state)))
            }
            guard let next else { break }
            let member: GroupMember
            do {
                member = try next.node.make(next.results)
            } catch {
                nodeEnded(next.node.name, .failure(.invalidRequest(reason: "node \(next.node.name.debugDescription) could not build its request: \(error)")))
                continue
            }
            let name = next.node.name
            state.withLock { $0.built[name] = member.request }
            let handle = member.send(on: dispatcher) { [self] result in queue.async { self.nodeEnded(name, result) } }
            let cancel = state.withLock { state -> Bool in
                if case .running? = state.states[name] { state.states[name] = .running(handle) }
                return state.stopped
            }
            if cancel { handle.cancel() }
        }
        let idle = state.withLock { state in
            !state.states.values.contains { if case .running = $0 { true } else { false } }
        }
        if idle { finish() }
    }

    private func responses(_ state: State) -> [String: any AnyResponse] {
        var responses: [String: any AnyResponse] = [:]
        for (name, nodeState) in state.states { if case .succeeded(let response) = nodeState { responses[name] = response } }
        return responses
    }

    /// A node ended: on failure, everything that depends on it is cancelled. On the graph's queue.
    private func nodeEnded(_ name: String, _ result: Result<any AnyResponse, NetworkError>) {
        let changed = state.withLock { state -> Bool in
            guard case .running? = state.states[name] else { return false }
            switch result {
            case .success(let response):
                state.states[name] = .succeeded(response)
            case .failure(let error):
                state.states[name] = state.stopped ? .cancelled : .failed(error)
                if !state.stopped, state.firstFailure == nil { state.firstFailure = name }
                // Its dependents, directly or not, never start.
                var doomed: Set<String> = [name]
                var grew = true
                while grew {
                    grew = false
                    for node in state.nodes where !doomed.contains(node.name) && node.dependencies.contains(where: doomed.contains) {
                        doomed.insert(node.name)
                        grew = true
                        if case .waiting? = state.states[node.name] { state.states[node.name] = .cancelled }
                    }
                }
            }
            return true
        }
        guard changed else { return }
        let (completed, total) = progress
        lifecycle.emit(.progress(completed: completed, total: total))
        launchReady()
    }

    private func outcomes(_ state: State) -> [MemberOutcome] {
        state.nodes.enumerated().map { index, node in
            let result: Result<any AnyResponse, NetworkError>?
            switch state.states[node.name] {
            case .succeeded(let response)?: result = .success(response)
            case .failed(let error)?: result = .failure(error)
            case .cancelled?, .running?: result = .failure(.cancelled)
            case .waiting?, nil: result = nil
            }
            let request = state.built[node.name] ?? node.given ?? NotBuilt(node: node.name)
            return MemberOutcome(index: index, name: node.name, request: request, result: result)
        }
    }

    private func finish(invalid: String? = nil) {
        let (outcome, done, atOnce) = state.withLock { state -> (Result<GraphResults, GroupError>, (@Sendable (Result<GraphResults, GroupError>) -> Void)?, Bool) in
            let outcomes = outcomes(state)
            let result: Result<GraphResults, GroupError>
            if let invalid = invalid ?? state.lateNode.map({ "node \($0.debugDescription) was added after the graph started; add every node before" }) {
                result = .failure(GroupError(.invalidRequest(reason: invalid), outcomes: outcomes))
            } else if state.stopped {
                result = .failure(GroupError(.cancelled, outcomes: outcomes))
            } else if let failed = state.firstFailure, let outcome = outcomes.first(where: { $0.name == failed }) {
                result = .failure(GroupError(outcome.error ?? .cancelled, failed: outcome, outcomes: outcomes))
            } else {
                result = .success(GraphResults(responses(state)))
            }
            defer {
                state.done = nil
                // Let go of the builders (they may capture whoever owns the graph).
                state.nodes = state.nodes.map { node in Node(name: node.name, dependencies: node.dependencies, make: { _ in throw GroupEnded() }, given: node.given) }
            }
            return (result, state.done, state.doneAtOnce)
        }
        guard let done else { return }
        if atOnce { done(outcome) }
        let event: GroupEvent
        switch outcome {
        case .success: event = .finished
        case .failure(let error): event = error.isCancelled ? .cancelled : .failed(error)
        }
        lifecycle.end(self, event) { if !atOnce { done(outcome) } }
    }

    /// Stops the graph: running nodes are cancelled, the rest never start, and it ends
    /// ``GroupEvent/cancelled`` (unless it already ended).
    public func stop() {
        let handles = state.withLock { state -> [RequestHandle]? in
            guard !state.stopped else { return nil }
            state.stopped = true  // also before the start: it then ends at once, cancelled
            guard state.done != nil else { return nil }
            return state.states.values.compactMap { if case .running(let handle) = $0 { handle } else { nil } }
        }
        guard let handles else { return }
        for handle in handles { handle.cancel() }
        queue.async { self.finish() }
    }
}

/// Every node's response, by name, as a graph hands them on: to the nodes built from them, and at the end.
public struct GraphResults: Sendable {
    /// The responses by node name.
    public let responses: [String: any AnyResponse]

    init(_ responses: [String: any AnyResponse]) {
        self.responses = responses
    }

    /// The response of node `name`.
    public subscript(name: String) -> (any AnyResponse)? { responses[name] }

    /// The response of node `name` as the response to a request of type `R`.
    public func response<R: Request>(_ name: String, as type: R.Type = R.self) -> Response<R>? {
        responses[name]?.typed(R.self)
    }
}

/// Thrown by a node's builder once its graph ended (the builders are let go of then).
private struct GroupEnded: Error {}

/// Stands in for a graph node's request that was never built (its dependencies failed first).
public struct NotBuilt: Request {
    /// The node's name.
    public let node: String
    /// Not sent.
    public var path: String { "" }
}
