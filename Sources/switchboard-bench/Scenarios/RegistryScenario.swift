import Dispatch
import Foundation
import Switchboard

/// Observer add + remove pairs per second, on one thread and on two threads contending for one registry.
enum RegistryScenario {
    static func run(quick: Bool) async throws -> ScenarioResult {
        let rounds = quick ? 2 : 9
        let pairs = quick ? 50_000 : 1_000_000
        let observer = BenchObserver()
        let switchboard = Switchboard(configuration: Configuration { $0.callbackQueue = .immediate })
        let center = NotificationCenter()
        let name = Notification.Name("bench")

        var single: [Double] = [], contended: [Double] = [], centerSingle: [Double] = []
        for _ in 0..<rounds {
            centerSingle.append(pairsPerSecond(pairs / 4) {
                let token = center.addObserver(forName: name, object: nil, queue: nil) { _ in }
                center.removeObserver(token)
            })
            single.append(pairsPerSecond(pairs) {
                switchboard.addObserver(observer, for: BenchEventRequest.self, on: .immediate, calling: BenchObserver.changed).cancel()
            })
            let start = now()
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                for _ in 0..<(pairs / 2) {
                    switchboard.addObserver(observer, for: BenchEventRequest.self, on: .immediate, calling: BenchObserver.changed).cancel()
                }
            }
            contended.append(Double(pairs / 2 * 2) / (Double(now() - start) / 1e9))
        }
        guard switchboard.observerCount(for: BenchEventRequest.self) == 0 else {
            throw BenchError("registry: registrations left behind")
        }
        return ScenarioResult(
            scenario: "registry",
            note: "addObserver(_:for:on:calling:) then token.cancel(), \(pairs) pairs a round, \(rounds) rounds; NotificationCenter's block add/remove for reference.",
            figures: [
                Figure(name: "one thread", unit: "pairs/s", candidate: single, baseline: centerSingle, baselineName: "NotificationCenter", target: "≥ 8 M"),
                Figure(name: "two threads contending", unit: "pairs/s", candidate: contended, target: "≥ 3 M"),
            ]
        )
    }

    static func pairsPerSecond(_ pairs: Int, _ body: () -> Void) -> Double {
        let start = now()
        for _ in 0..<pairs { body() }
        return Double(pairs) / (Double(now() - start) / 1e9)
    }
}
