import Dispatch
import Foundation
import Switchboard

/// Observer add + remove pairs per second, on one thread and on two threads contending for one registry.
enum RegistryScenario {
    static func run(quick: Bool) async throws -> ScenarioResult {
        let rounds = quick ? 2 : 9
        let pairs = quick ? 50_000 : 1_000_000
        let observer = BenchObserver()
        let switchboard = Dispatcher(configuration: Configuration { $0.callbackQueue = .immediate })
        let center = NotificationCenter()
        let name = Notification.Name("bench")

        // The least a locked registry of weakly held observers with removable tokens can do: allocate the
        // token, append it under the project's lock, find and remove it under the lock.
        let floorRegistry = Locked<[FloorToken]>([])
        // SWITCHBOARD_BENCH_ONLY="one thread" runs only Switchboard's one-thread pairs (for profiling runs).
        if ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_ONLY"] == "one thread" {
            for _ in 0..<rounds {
                let rate = pairsPerSecond(pairs) {
                    switchboard.addObserver(observer, for: BenchEventRequest.self, on: .immediate) { $0.changed($1) }.cancel()
                }
                print("one thread: \(Int(rate)) pairs/s")
            }
            return ScenarioResult(scenario: "registry", note: "one thread only (SWITCHBOARD_BENCH_ONLY)", figures: [])
        }
        var single: [Double] = [], contended: [Double] = [], centerSingle: [Double] = [], floorSingle: [Double] = []
        for _ in 0..<rounds {
            floorSingle.append(
                pairsPerSecond(pairs) {
                    let token = FloorToken(observer)
                    floorRegistry.withLock { $0.append(token) }
                    floorRegistry.withLock { tokens in
                        if let index = tokens.lastIndex(where: { $0 === token }) { tokens.remove(at: index) }
                    }
                })
            centerSingle.append(
                pairsPerSecond(pairs / 4) {
                    let token = center.addObserver(forName: name, object: nil, queue: nil) { _ in }
                    center.removeObserver(token)
                })
            single.append(
                pairsPerSecond(pairs) {
                    switchboard.addObserver(observer, for: BenchEventRequest.self, on: .immediate) { $0.changed($1) }.cancel()
                })
            let start = now()
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                for _ in 0..<(pairs / 2) {
                    switchboard.addObserver(observer, for: BenchEventRequest.self, on: .immediate) { $0.changed($1) }.cancel()
                }
            }
            contended.append(Double(pairs / 2 * 2) / (Double(now() - start) / 1e9))
        }
        guard switchboard.observerCount(for: BenchEventRequest.self) == 0 else {
            throw BenchError("registry: registrations left behind")
        }
        return ScenarioResult(
            scenario: "registry",
            note: "addObserver(_:for:on:handler:) then token.cancel(), \(pairs) pairs a round, \(rounds) rounds; NotificationCenter's block add/remove for reference.",
            figures: [
                Figure(name: "one thread", unit: "pairs/s", candidate: single, baseline: centerSingle, baselineName: "NotificationCenter", target: "≥ 8 M"),
                Figure(
                    name: "one thread vs the floor", unit: "pairs/s", candidate: single, baseline: floorSingle, baselineName: "locked weak-token array",
                    target: "≥ 0.65×"),
                Figure(name: "two threads contending", unit: "pairs/s", candidate: contended, target: "≥ 3 M"),
            ]
        )
    }

    /// A token of the floor registry: a weak reference to its observer.
    final class FloorToken {
        weak var observer: BenchObserver?
        init(_ observer: BenchObserver) { self.observer = observer }
    }

    static func pairsPerSecond(_ pairs: Int, _ body: () -> Void) -> Double {
        let start = now()
        for _ in 0..<pairs { body() }
        return Double(pairs) / (Double(now() - start) / 1e9)
    }
}
