import Foundation
import LoopbackServer
#if canImport(Glibc)
import Glibc
#endif

/// The loopback server in its own process, so the client's CPU time (getrusage) is the client's alone.
final class ServerProcess {
    let process: ChildProcess
    let baseURL: URL

    /// Starts this executable again as the server (`switchboard-bench --serve <this pid>`), so the bench
    /// needs no other product built. The server ends itself when this process is gone.
    init() throws {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
        process = try ChildProcess(executable, ["--serve", "\(getpid())"])
        // The first line is `listening on http://127.0.0.1:PORT`.
        let text = process.readLine()
        if text.isEmpty { throw BenchError("the server process exited before listening") }
        guard let range = text.range(of: "http://"), let url = URL(string: String(text[range.lowerBound...]).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("unexpected server output: \(text)")
        }
        baseURL = url
    }

    func stop() {
        process.kill()
        process.wait()
    }
}

/// `switchboard-bench --serve [parent pid]`: the standard loopback server, until killed or until the
/// parent is gone.
enum ServeMode {
    static func run() -> Never {
        signal(SIGPIPE, SIG_IGN)
        // A parent spawning us from a libdispatch thread passes its blocked signals on; unblock them so
        // SIGTERM and SIGINT end the server.
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        sigprocmask(SIG_SETMASK, &noSignals, nil)
        // The bench that started us: when it is gone (killed, timed out), so are we.
        let parent = CommandLine.arguments.dropFirst(2).first.flatMap { pid_t($0) }
        do {
            let server = try LoopbackServer.standard()
            print("listening on \(server.baseURL.absoluteString)")
            fflush(nil)
            while true {
                sleep(1)
                if let parent, getppid() != parent { exit(0) }
            }
        } catch {
            FileHandle.standardError.write(Data("switchboard-bench --serve: \(error)\n".utf8))
            exit(1)
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
