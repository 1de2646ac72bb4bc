import Foundation

/// A point where route handlers hold their answer: until the test opens the gate, or until a given
/// number of requests have reached it (then it opens itself). A test says "answer once all N requests
/// are in" or "answer when I say" with it, instead of guessing with a delay that a loaded machine
/// outlasts.
///
/// ```swift
/// let allIn = RequestGate(opensAt: 4)
/// server.route("GET", "/together") { request in
///     allIn.pass(request)
///     return .json(["arrived": allIn.arrived])
/// }
/// ```
///
/// A held handler wakes when the server stops (``pass(_:timeout:)`` then returns `false`), so a test
/// that fails never leaves a connection thread behind.
public final class RequestGate: Sendable {
    private struct State: Sendable {
        var arrived = 0
        var isOpen = false
    }

    private let state = Locked(State())
    private let opensAt: Int?

    /// A gate that opens when `opensAt` requests have reached it, or when ``open()`` is called.
    public init(opensAt: Int? = nil) {
        self.opensAt = opensAt
        if let opensAt, opensAt <= 0 { state.withLock { $0.isOpen = true } }
    }

    /// How many requests have reached the gate.
    public var arrived: Int { state.withLock { $0.arrived } }

    /// Whether the gate is open.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Opens the gate: every held handler goes on, and later ones pass at once.
    public func open() { state.withLock { $0.isOpen = true } }

    /// Counts `request` as arrived, then waits until the gate is open. Returns `true` when it opened,
    /// `false` when the server stopped or `timeout` passed first.
    @discardableResult
    public func pass(_ request: ServerRequest, timeout: TimeInterval = 60) -> Bool {
        state.withLock { state in
            state.arrived += 1
            if let opensAt, state.arrived >= opensAt { state.isOpen = true }
        }
        return request.wait(timeout: timeout) { isOpen }
    }
}
