import Foundation
import Switchboard

/// The demo's readable output: lines printed as they come, and kept for the test that checks them.
final class Transcript: Sendable {
    private let lines = Locked<[String]>([])
    private let failures = Locked<[String]>([])
    private let echo: Bool

    init(echo: Bool) {
        self.echo = echo
    }

    /// Adds a line.
    func say(_ line: String) {
        lines.withLock { $0.append(line) }
        if echo { print(line) }
    }

    /// Adds a line and records a failed expectation when `condition` is false.
    func check(_ condition: Bool, _ line: String) {
        say((condition ? "  ✓ " : "  ✗ ") + line)
        if !condition { failures.withLock { $0.append(line) } }
    }

    /// Every line so far.
    var all: [String] { lines.withLock { $0 } }

    /// The failed expectations.
    var failed: [String] { failures.withLock { $0 } }
}
