import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The libcurl rows' baseline: a C program driving one libcurl multi handle on one thread
/// (`CClient/curl_client.c`), compiled with the system C compiler the first time it is asked for.
/// It needs libcurl's development headers (Debian: `libcurl4-openssl-dev`); the bench installs
/// nothing, and says why the row is missing when they aren't there.
enum CurlCClient {
    /// The compiled program, or why there is none.
    static let binary: Result<URL, BenchError> = compile()

    /// Requests per second, CPU µs per request and context switches per request of `requests` GETs
    /// of `url` at `concurrency`, measured by the program itself after its warm-up round.
    static func measure(_ url: URL, requests: Int, concurrency: Int) throws -> (rate: Double, cpu: Double, switches: Double) {
        let program = try binary.get()
        let result = try run(program.path, [url.absoluteString, "\(requests)", "\(concurrency)"])
        let fields = result.output.split(separator: " ").compactMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        // Exit 1 with four figures: some requests failed (counted, as the Swift clients count theirs).
        guard result.status == 0 || result.status == 1, fields.count == 4 else {
            throw BenchError("the C libcurl client exited with \(result.status): \(result.output)")
        }
        if fields[3] > 0 { print("the C libcurl client: \(Int(fields[3])) of \(requests) requests failed") }
        return (fields[0], fields[1], fields[2])
    }

    /// Where the program is compiled to.
    private static let output = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-bench-curl-client-\(getpid())")

    /// Removes the compiled program, if it was compiled (at the end of the scenario).
    static func remove() {
        try? FileManager.default.removeItem(at: output)
    }

    private static func compile() -> Result<URL, BenchError> {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("CClient/curl_client.c")
        guard FileManager.default.fileExists(atPath: source.path) else {
            return .failure(BenchError("no \(source.path) (the bench runs from a checkout of the package)"))
        }
        guard let result = try? run("/usr/bin/env", ["cc", "-O2", "-o", output.path, source.path, "-lcurl"]), result.status != 127 else {
            return .failure(BenchError("no C compiler (cc) to build the C libcurl client"))
        }
        guard result.status == 0 else {
            let missingHeaders = result.output.contains("curl/curl.h")
            return .failure(
                BenchError(
                    missingHeaders
                        ? "libcurl's development headers are missing (Debian: apt-get install libcurl4-openssl-dev)"
                        : "cc could not build the C libcurl client: \(result.output.prefix(300))"))
        }
        return .success(output)
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
