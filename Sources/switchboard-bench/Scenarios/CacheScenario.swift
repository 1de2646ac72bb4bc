import Dispatch
import Foundation
import Switchboard

/// The response cache for a 1 KiB JSON response, from `send` to the observer's event: a memory-tier
/// hit, a disk-tier hit, and the network round trip to the loopback server (its own process) in the
/// same run, one send at a time.
enum CacheScenario {
    struct Cached: Request {
        let key: Int
        var path: String { "/json/1?key=\(key)" }
        var cachePolicy: CachePolicy? { CachePolicy(timeToLive: 3600) }
    }

    struct Uncached: Request {
        var path: String { "/json/1" }
    }

    /// Counts events and wakes the waiting sender.
    final class Listener: Sendable {
        let arrived = DispatchSemaphore(value: 0)
        func heard<R: Request>(_ event: RequestEvent<R>) { if event.isTerminal { arrived.signal() } }
    }

    static func run(quick: Bool) async throws -> ScenarioResult {
        let sends = quick ? 200 : 5000
        let rounds = quick ? 1 : 5
        let server = try ServerProcess()
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-bench-cache-\(getpid())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let memory = ResponseCache(directory: nil, logger: nil)
        // One entry in memory: two keys taking turns always read the other from disk.
        let disk = ResponseCache(directory: folder, memoryCountLimit: 1, logger: nil)
        func client(_ cache: ResponseCache?) -> Dispatcher {
            Dispatcher(
                configuration: Configuration {
                    $0.baseURL = server.baseURL
                    $0.callbackQueue = .immediate
                    $0.cache = cache
                })
        }
        let memoryClient = client(memory), diskClient = client(disk), networkClient = client(nil)
        let listener = Listener()
        for each in [memoryClient, diskClient] { each.addObserver(listener, for: Cached.self, on: .immediate) { $0.heard($1) } }
        networkClient.addObserver(listener, for: Uncached.self, on: .immediate) { $0.heard($1) }
        // Fill both caches (the disk writes finish before measuring).
        for key in 0..<2 {
            _ = try await memoryClient.response(for: Cached(key: key))
            _ = try await diskClient.response(for: Cached(key: key))
        }
        disk.flush()

        // For profiling: `SWITCHBOARD_BENCH_ONLY=memory` runs memory-tier hits alone, for a while.
        if ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_ONLY"] == "memory" {
            let hits = Int(ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_HITS"] ?? "") ?? 400_000
            let perSend = measure(sends: hits, listener) { memoryClient.send(Cached(key: 0)) }
            print("memory-tier hit: \(format(perSend, 1)) µs per send")
            return ScenarioResult(scenario: "cache", note: "memory-tier hits only", figures: [Figure(name: "memory-tier hit", unit: "µs/send", candidate: [perSend])])
        }
        var samples: [String: [Double]] = [:]
        for round in 0...rounds {
            let network = measure(sends: max(1, sends / 10), listener) { networkClient.send(Uncached()) }
            let memoryHit = measure(sends: sends, listener) { memoryClient.send(Cached(key: 0)) }
            var turn = 0
            let diskHit = measure(sends: sends, listener) {
                turn ^= 1
                diskClient.send(Cached(key: turn))
            }
            if round > 0 {
                samples["network", default: []].append(network)
                samples["memory", default: []].append(memoryHit)
                samples["disk", default: []].append(diskHit)
            }
        }
        guard memory.memoryCount == 2 else { throw BenchError("cache: the memory tier lost its entries") }
        return ScenarioResult(
            scenario: "cache",
            note:
                "\(sends) sends per figure per round (the network: a tenth), one at a time, \(rounds) rounds after a warm-up; wall time from `send` to the observer's terminal event, both on `.immediate`. The disk tier keeps one entry in memory and two keys take turns, so every hit reads and decodes a file.",
            figures: [
                Figure(
                    name: "memory-tier hit, 1 KiB JSON", unit: "µs/send", candidate: samples["memory"]!, baseline: samples["network"]!, baselineName: "network round trip",
                    target: "≤ 20 µs"),
                Figure(
                    name: "disk-tier hit, 1 KiB JSON", unit: "µs/send", candidate: samples["disk"]!, baseline: samples["network"]!, baselineName: "network round trip",
                    target: "≤ 150 µs"),
            ])
    }

    /// Mean µs from `send` to the terminal event, `sends` times in a row.
    private static func measure(sends: Int, _ listener: Listener, _ send: () -> Void) -> Double {
        let start = now()
        for _ in 0..<sends {
            send()
            listener.arrived.wait()
        }
        return Double(now() - start) / 1e3 / Double(sends)
    }
}
