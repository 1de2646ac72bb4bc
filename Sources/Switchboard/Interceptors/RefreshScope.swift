/// The token refreshes a piece of work runs inside: what lets a send made by an
/// ``AuthenticationInterceptor``'s refresh, through the same dispatcher, go out without waiting for
/// that refresh (it would wait for itself).
///
/// A task-local value reaches the sends made in the refresh's own task and its child tasks (and in
/// tasks they create with `Task {}`). It doesn't cross a completion handler: the transport calls it
/// on its own queue. So every send records the scope it was made in, and the dispatcher calls that
/// send's completion closure with the scope bound again (and its interceptors' `adapt` and `retry`):
/// a send made from a completion of a send made by the refresh is inside the refresh too, however
/// deep the chain. Work the refresh hands to a queue of its own (`DispatchQueue.async`) leaves the
/// scope.
struct RefreshScope: Sendable {
    /// The scope of the running code.
    @TaskLocal static var current = RefreshScope()

    /// One running refresh, innermost last.
    private(set) var marks: [RefreshMark] = []

    var isEmpty: Bool { marks.isEmpty }

    /// This scope and one more refresh.
    func adding(_ mark: RefreshMark) -> RefreshScope {
        var copy = self
        copy.marks.append(mark)
        return copy
    }

    /// The innermost refresh of `owner` this scope is inside, if it still runs.
    func runningMark(of owner: ObjectIdentifier) -> RefreshMark? {
        marks.last { $0.owner == owner && $0.isRunning }
    }

    /// Whether this scope is inside a refresh that still runs (any interceptor's).
    var isInsideARunningRefresh: Bool { marks.contains { $0.isRunning } }

    /// Runs `body` with this scope bound: at once when neither it nor the running code's scope has a
    /// refresh (nothing to carry, nothing to hide).
    func run<T>(_ body: () throws -> T) rethrows -> T {
        isEmpty && Self.current.isEmpty ? try body() : try Self.$current.withValue(self, operation: body)
    }

    /// Runs `body` with this scope bound, in a task.
    func running<T>(_ body: () async throws -> T) async rethrows -> T {
        isEmpty && Self.current.isEmpty ? try await body() : try await Self.$current.withValue(self, operation: body)
    }
}

/// One run of a refresh, by identity: running until its refresh ends, refused once one of its own
/// sends got a 401.
final class RefreshMark: Sendable {
    /// The token store whose refresh this is.
    let owner: ObjectIdentifier
    /// Locked: the refresh's task ends it while its sends, on any thread, read it and a 401 refuses it.
    private let state = Locked((running: true, refused: false))

    init(owner: ObjectIdentifier) {
        self.owner = owner
    }

    var isRunning: Bool { state.withLock { $0.running } }
    var isRefused: Bool { state.withLock { $0.refused } }

    /// Marks a running refresh as refused; returns whether it was running.
    func refuse() -> Bool {
        state.withLock { state in
            guard state.running else { return false }
            state.refused = true
            return true
        }
    }

    func end() { state.withLock { $0.running = false } }
}
