import Dispatch
import Foundation
import Switchboard
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Large transfers against `curl` side by side, from the loopback server in its own process: a 1 GiB
/// download to a file (throughput against `curl -o`, and how far this process's peak resident
/// memory rises) and a 200 MiB multipart upload from disk (against `curl -F`, and the same memory
/// figure). Rounds alternate curl and Switchboard, so drift of the machine is shared.
enum TransferScenario {
    static func run(quick: Bool) async throws -> ScenarioResult {
        let downloadSize = quick ? 64 << 20 : 1 << 30
        let uploadSize = quick ? 16 << 20 : 200 << 20
        let rounds = quick ? 1 : 3
        let server = try ServerProcess()
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-bench-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let client = Dispatcher(
            configuration: Configuration {
                $0.baseURL = server.baseURL
                $0.callbackQueue = .immediate
                $0.partialDownloadsDirectory = folder.appendingPathComponent("partials")
                $0.temporaryDirectory = folder
            })
        let curl = ["/usr/bin/curl", "/usr/local/bin/curl", "/bin/curl"].first { FileManager.default.isExecutableFile(atPath: $0) }

        let downloadURL = server.baseURL.appendingPathComponent("large/\(downloadSize)")
        let destination = folder.appendingPathComponent("download.bin")
        let source = folder.appendingPathComponent("upload.bin")
        try writeFile(source, size: uploadSize)
        let uploadURL = server.baseURL.appendingPathComponent("upload/sink")

        var samples: [String: [Double]] = [:]
        for round in 0...rounds {
            var measured: [(String, Double)] = []
            if let curl {
                measured.append(("curl download", try timeProcess(curl, ["-s", "-f", "-o", folder.appendingPathComponent("curl.bin").path, downloadURL.absoluteString])))
                measured.append(("curl upload", try timeProcess(curl, ["-s", "-f", "-o", "/dev/null", "-F", "file=@\(source.path)", uploadURL.absoluteString])))
            }
            measured.append(("bare download", try await BareFileDownload.run(downloadURL, to: folder.appendingPathComponent("bare.bin"), expected: downloadSize)))
            let download = try await measureDownload(client, destination: destination, expected: downloadSize)
            measured += [("download", download.seconds), ("download memory", download.growthMiB)]
            measured.append(("bare upload", try await bareUpload(source, to: uploadURL)))
            let upload = try await measureUpload(client, source: source, expected: uploadSize)
            measured += [("upload", upload.seconds), ("upload memory", upload.growthMiB)]
            if round > 0 {  // round 0 warms up (page cache, connections)
                for (name, value) in measured { samples[name, default: []].append(value) }
            }
        }
        let mb = Double(1 << 20)
        func throughput(_ name: String, size: Int) -> [Double] { (samples[name] ?? []).map { Double(size) / mb / $0 } }
        var figures = [
            Figure(
                name: "download \(downloadSize >> 20) MiB to a file", unit: "MiB/s", candidate: throughput("download", size: downloadSize),
                baseline: curl == nil ? nil : throughput("curl download", size: downloadSize), baselineName: "curl -o", target: "≥ 0.9× curl"),
            Figure(
                name: "download \(downloadSize >> 20) MiB to a file", unit: "MiB/s", candidate: throughput("download", size: downloadSize),
                baseline: throughput("bare download", size: downloadSize), baselineName: "URLSession delegate → FileHandle"),
            Figure(name: "download \(downloadSize >> 20) MiB: peak memory growth", unit: "MiB", candidate: samples["download memory"] ?? [], target: "≤ 64 MiB"),
            Figure(
                name: "multipart upload \(uploadSize >> 20) MiB from disk", unit: "MiB/s", candidate: throughput("upload", size: uploadSize),
                baseline: curl == nil ? nil : throughput("curl upload", size: uploadSize), baselineName: "curl -F"),
            Figure(
                name: "multipart upload \(uploadSize >> 20) MiB from disk", unit: "MiB/s", candidate: throughput("upload", size: uploadSize),
                baseline: throughput("bare upload", size: uploadSize), baselineName: "URLSession uploadTask(fromFile:)"),
            Figure(name: "multipart upload \(uploadSize >> 20) MiB: peak memory growth", unit: "MiB", candidate: samples["upload memory"] ?? [], target: "≤ 64 MiB"),
        ]
        if curl == nil { figures.append(Figure(name: "curl not found: no baseline", unit: "-", candidate: [0])) }
        return ScenarioResult(
            scenario: "transfer",
            note:
                "\(rounds) rounds after a warm-up, curl and Switchboard alternating, from the loopback server in its own process. Memory: how far this process's peak resident size (VmHWM, reset first, after returning free heap pages with malloc_trim) rose above its size before the transfer. The upload assembles its body in a temporary file first (the body is over the 10 MiB threshold), which its time includes.",
            figures: figures)
    }

    static func measureDownload(_ client: Dispatcher, destination: URL, expected: Int) async throws -> (seconds: Double, growthMiB: Double) {
        try? FileManager.default.removeItem(at: destination)
        let before = resetPeakMemory()
        let start = now()
        let response = try await client.response(for: Download("/large/\(expected)", to: destination))
        let seconds = Double(now() - start) / 1e9
        let growth = Double(max(0, peakMemoryKiB() - before)) / 1024
        let size = (try FileManager.default.attributesOfItem(atPath: destination.path)[.size] as? NSNumber)?.intValue
        guard response.statusCode == 200, size == expected else { throw BenchError("download: status \(response.statusCode), \(size ?? -1) of \(expected) bytes") }
        return (seconds, growth)
    }

    struct Upload: Request {
        let file: URL
        var method: HTTPMethod { .post }
        var path: String { "/upload/sink" }
        var timeout: TimeInterval? { 600 }
        var body: RequestBody? { .multipart { $0.append(fileAt: file, name: "file") } }
    }

    static func measureUpload(_ client: Dispatcher, source: URL, expected: Int) async throws -> (seconds: Double, growthMiB: Double) {
        let before = resetPeakMemory()
        let start = now()
        let response = try await client.response(for: Upload(file: source))
        let seconds = Double(now() - start) / 1e9
        let growth = Double(max(0, peakMemoryKiB() - before)) / 1024
        guard response.json["parts"][0]["size"].int == expected else { throw BenchError("upload: the server saw \(response.json)") }
        return (seconds, growth)
    }

    /// The floor of an upload from disk through URLSession: `uploadTask(with:fromFile:)` of the same file
    /// (not multipart: no body to assemble), with a completion handler.
    static func bareUpload(_ file: URL, to url: URL) async throws -> Double {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let start = now()
        let status: Int = try await withCheckedThrowingContinuation { continuation in
            session.uploadTask(with: request, fromFile: file) { _, response, error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: (response as? HTTPURLResponse)?.statusCode ?? 0) }
            }.resume()
        }
        guard status == 200 else { throw BenchError("bare upload: status \(status)") }
        return Double(now() - start) / 1e9
    }

    /// Runs `executable` and returns its wall time in seconds; it must exit 0.
    static func timeProcess(_ executable: String, _ arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let start = now()
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("\(executable) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)") }
        return Double(now() - start) / 1e9
    }

    static func writeFile(_ url: URL, size: Int) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var chunk = Data(count: 1 << 20)
        chunk.withUnsafeMutableBytes { raw in
            for index in 0..<raw.count { raw[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 13) }
        }
        var written = 0
        while written < size {
            let count = min(chunk.count, size - written)
            try handle.write(contentsOf: chunk.prefix(count))
            written += count
        }
    }

    /// Resets the peak resident size to the current one (Linux 4.0+) and returns the current, in KiB.
    static func resetPeakMemory() -> Int {
        // Free heap pages go back to the system first, or the transfer could reuse them unseen.
        #if canImport(Glibc)
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            _ = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0)
        }
        #endif
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        return statusField("VmRSS") ?? 0
    }

    static func peakMemoryKiB() -> Int { statusField("VmHWM") ?? 0 }

    static func statusField(_ name: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            return Int(line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }
}

/// The floor of a download through URLSession: a data task whose delegate writes each chunk to a
/// file handle, nothing else (no flow control: its memory is not bounded).
final class BareFileDownload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // `@unchecked Sendable`: `handle` and `continuation` are touched only on the session's serial
    // delegate queue, after `run` set them up before the task started.
    private var handle: FileHandle?
    private var continuation: CheckedContinuation<Void, any Error>?
    private var received = 0

    static func run(_ url: URL, to destination: URL, expected: Int) async throws -> Double {
        let delegate = BareFileDownload()
        _ = FileManager.default.createFile(atPath: destination.path, contents: nil)
        delegate.handle = try FileHandle(forWritingTo: destination)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: queue)
        defer { session.finishTasksAndInvalidate() }
        let start = now()
        try await withCheckedThrowingContinuation { continuation in
            delegate.continuation = continuation
            session.dataTask(with: url).resume()
        }
        let seconds = Double(now() - start) / 1e9
        guard delegate.received == expected else { throw BenchError("bare download: \(delegate.received) of \(expected) bytes") }
        return seconds
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        try? handle?.write(contentsOf: data)
        received += data.count
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        try? handle?.close()
        if let error { continuation?.resume(throwing: error) } else { continuation?.resume() }
        continuation = nil
    }
}
