import Foundation
import LoopbackServer
#if canImport(Glibc)
import Glibc
#endif

/// The loopback server in its own process, so the client's CPU time (getrusage) is the client's alone.
final class ServerProcess {
    let process = Process()
    let baseURL: URL

    /// Starts this executable again as the server (`switchboard-bench --serve`), so the bench needs no
    /// other product built.
    init() throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        process.arguments = ["--serve"]
        process.standardOutput = output
        try process.run()
        // The first line is `listening on http://127.0.0.1:PORT`.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw BenchError("the server process exited before listening") }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "http://"), let url = URL(string: String(text[range.lowerBound...]).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("unexpected server output: \(text)")
        }
        baseURL = url
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// `switchboard-bench --serve`: the standard loopback server, until killed.
enum ServeMode {
    static func run() -> Never {
        signal(SIGPIPE, SIG_IGN)
        // A parent spawning us from a libdispatch thread passes its blocked signals on; unblock them so
        // SIGTERM and SIGINT end the server.
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        sigprocmask(SIG_SETMASK, &noSignals, nil)
        do {
            let server = try LoopbackServer.standard()
            print("listening on \(server.baseURL.absoluteString)")
            fflush(nil)
            while true { sleep(3600) }
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
