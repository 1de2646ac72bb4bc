import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The `curl` command-line tool fetching the same URL `requests` times with `--parallel`: an outside
/// reference for the libcurl transport (same machine, same server). Its CPU and context switches are
/// the child process's (getrusage of waited-for children).
enum CurlCommandLine {
    /// Whether `curl` is on the PATH and supports `--parallel` (7.66+).
    static let isAvailable: Bool = {
        guard let output = try? run(["--version"]).output else { return false }
        return output.hasPrefix("curl ")
    }()

    /// Requests per second, CPU µs per request and context switches per request.
    static func measure(_ url: URL, requests: Int, concurrency: Int) throws -> (rate: Double, cpu: Double, switches: Double) {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-bench-curl-\(getpid()).txt")
        defer { try? FileManager.default.removeItem(at: config) }
        var lines = ""
        for _ in 0..<requests { lines += "url = \"\(url.absoluteString)\"\noutput = \"/dev/null\"\n" }
        try lines.write(to: config, atomically: true, encoding: .utf8)
        let before = childUsage()
        let start = DispatchTime.now().uptimeNanoseconds
        let result = try run(["--silent", "--show-error", "--fail", "--parallel", "--parallel-max", "\(concurrency)", "--config", config.path])
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard result.status == 0 else { throw BenchError("curl --parallel exited with \(result.status)") }
        let after = childUsage()
        return (Double(requests) / seconds, (after.cpu - before.cpu) / Double(requests), (after.switches - before.switches) / Double(requests))
    }

    private static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    private static func childUsage() -> (cpu: Double, switches: Double) {
        var usage = rusage()
        #if canImport(Glibc)
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        #else
        getrusage(RUSAGE_CHILDREN, &usage)
        #endif
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
        return (cpu, Double(usage.ru_nvcsw + usage.ru_nivcsw))
    }
}
