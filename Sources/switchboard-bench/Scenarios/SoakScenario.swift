import Foundation
import Switchboard
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `GET <path>` with a deadline, for the soak's mixed outcomes.
struct SoakGet: Request {
    var path: String
    var timeout: TimeInterval?
}

/// Memory over a long run with mixed outcomes (successes, 500s, 404s, deadlines), Switchboard against a
/// bare URLSession in the same run: FoundationNetworking's own resident memory grows with the number of
/// requests, with or without a library on top, so only the difference says anything about the library.
enum SoakScenario {
    static func run(quick: Bool) async throws -> ScenarioResult {
        let server = try ServerProcess()
        defer { server.stop() }
        let requests = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_SOAK_REQUESTS"].flatMap { Int($0) } ?? (quick ? 400 : 20_000)
        let concurrency = 16
        let paths = ["/small", "/status/500", "/nothing-here", "/delay/2000"]

        let settings = URLSessionConfiguration.ephemeral
        settings.httpMaximumConnectionsPerHost = concurrency
        settings.urlCache = nil
        let session = URLSession(configuration: settings)
        let base = server.baseURL
        let raw: @Sendable (Int) async -> Void = { n in
            var request = URLRequest(url: base.appendingPathComponent(paths[n % paths.count]))
            request.timeoutInterval = 0.1  // the delay route times out, as Switchboard's deadline does below
            _ = try? await session.data(for: request)
        }
        let client = Dispatcher(configuration: Configuration {
            $0.baseURL = server.baseURL
            $0.maximumConnectionsPerHost = concurrency
            $0.callbackQueue = .immediate
        })
        let ours: @Sendable (Int) async -> Void = { n in
            _ = try? await client.response(for: SoakGet(path: paths[n % paths.count], timeout: 0.1))
        }

        // Warm both up, so first-use allocations don't count as growth.
        try await drive(raw, requests: min(200, requests), concurrency: concurrency)
        try await drive(ours, requests: min(200, requests), concurrency: concurrency)
        var rawGrowth: [Double] = [], oursGrowth: [Double] = []
        for _ in 0..<(quick ? 1 : 2) {
            let beforeRaw = residentMiB()
            try await drive(raw, requests: requests, concurrency: concurrency)
            rawGrowth.append(residentMiB() - beforeRaw)
            let beforeOurs = residentMiB()
            try await drive(ours, requests: requests, concurrency: concurrency)
            oursGrowth.append(residentMiB() - beforeOurs)
        }
        guard client.inFlightCount == 0 else {
            throw BenchError("soak: \(client.inFlightCount) sends never ended")
        }
        return ScenarioResult(
            scenario: "soak",
            note: "\(requests) requests per client per round (success, 500, 404, a 0.1 s deadline against a 2 s answer), concurrency \(concurrency), \(quick ? 1 : 2) rounds, clients interleaved; resident memory (/proc/self/statm) growth over each client's run, after a warm-up.",
            figures: [
                Figure(name: "resident memory growth", unit: "MiB", candidate: oursGrowth, baseline: rawGrowth, baselineName: "URLSession"),
            ]
        )
    }

    /// Runs `requests` calls of `work` with `concurrency` workers.
    private static func drive(_ work: @escaping @Sendable (Int) async -> Void, requests: Int, concurrency: Int) async throws {
        let counter = RunCounter(total: requests)
        let numbers = NumberSource()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    while counter.take() { await work(numbers.next()) }
                }
            }
        }
    }

    /// The resident set size of this process in MiB (0 where /proc is missing).
    static func residentMiB() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Double(fields[1]) else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }
}

/// Hands out 0, 1, 2… to concurrent workers.
final class NumberSource: Sendable {
    private let value = Locked(0)
    func next() -> Int { value.withLock { value in defer { value += 1 }; return value } }
}
