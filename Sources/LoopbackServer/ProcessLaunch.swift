import Foundation

/// Starts child processes one at a time, for the tests and the demo: Foundation's `Process.run()` on
/// Linux is not safe to call from two threads at once (a test run crashed inside it, in `memcpy`, as two
/// suites started their servers together).
public enum ProcessLaunch {
    private static let lock = NSLock()

    /// Runs `process` (`Process.run()`) while no other launch through here is under way.
    public static func run(_ process: Process) throws {
        lock.lock()
        defer { lock.unlock() }
        try process.run()
    }
}
