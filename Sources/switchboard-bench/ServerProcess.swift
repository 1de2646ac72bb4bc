import Foundation

/// The loopback server in its own process, so the client's CPU time (getrusage) is the client's alone.
final class ServerProcess {
    let process = Process()
    let baseURL: URL

    /// Starts `loopback-server` from the same build folder as this executable.
    init() throws {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let executable = here.appendingPathComponent("loopback-server")
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw BenchError("no loopback-server beside \(CommandLine.arguments[0]); build it: swift build -c release --product loopback-server")
        }
        let output = Pipe()
        process.executableURL = executable
        process.standardOutput = output
        try process.run()
        // The first line is `listening on http://127.0.0.1:PORT`.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw BenchError("loopback-server exited before listening") }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "http://"), let url = URL(string: String(text[range.lowerBound...]).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("unexpected loopback-server output: \(text)")
        }
        baseURL = url
    }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
