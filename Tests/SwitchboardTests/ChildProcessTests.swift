import Foundation
import LoopbackServer
import Testing

/// The tests' own child processes (`ChildProcess`, `posix_spawn`): they end when told, inherit nothing
/// of the test process's descriptors, and report how they ended.
@Suite(hangGuard, admission) struct ChildProcessTests {
    /// Started from a pool thread, whose signal mask blocks SIGTERM: the child must not inherit it.
    @Test func aChildStartedFromThePoolEndsOnSIGTERM() async throws {
        let child = try await Task.detached { try ChildProcess("/bin/sleep", ["30"]) }.value
        #expect(child.isRunning)
        child.terminate()
        #expect(try await offPool { child.wait(upTo: 10) }, "SIGTERM did not end the child")
        #expect(child.terminationSignal == SIGTERM)
    }

    @Test func statusOutputAndInheritedDescriptors() async throws {
        let (status, output) = try await offPool {
            try ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2; ls /proc/self/fd | wc -l; exit 3"], mergingErrors: true)
        }
        #expect(status == 3)
        let lines = output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.prefix(2) == ["out", "err"])
        // 0, 1, 2 and the directory `ls` reads: nothing of the test process's (sockets, pipes).
        #expect(Int(lines.last ?? "") == 4, "\(output)")
    }

    @Test func aMissingExecutableIsAnError() {
        #expect(throws: ChildProcessError.self) { try ChildProcess("/nonexistent/program", []) }
    }
}
