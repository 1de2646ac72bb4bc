import Foundation

/// A value guarded by an `NSLock`, reachable only inside `withLock { }`.
///
/// `NSLock` (not `Synchronization.Mutex`) because the thread sanitizer on Linux sees pthread mutexes
/// but not `Mutex`.
///
/// `@unchecked Sendable` is safe because `value` is private and only ever read or written while `lock`
/// is held, so no two threads touch it at the same time; `State: Sendable` keeps values that escape
/// the closure safe to share as well.
final class Locked<State: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: State

    init(_ value: State) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the guarded state.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// A one-way flag raised when the server stops, so sleeping handlers and chunk writers can return early.
final class StopSignal: Sendable {
    private let stopped = Locked(false)

    /// Whether the server has been stopped.
    var isStopped: Bool { stopped.withLock { $0 } }

    /// Raises the flag; later calls do nothing.
    func raise() { stopped.withLock { $0 = true } }

    /// Sleeps for `seconds` in short slices; returns `false` as soon as the signal is raised.
    func sleep(_ seconds: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if isStopped { return false }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return true }
            Thread.sleep(forTimeInterval: min(remaining, 0.005))
        }
    }
}
