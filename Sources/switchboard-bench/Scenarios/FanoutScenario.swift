import Foundation
import Switchboard

/// The request type the registry benchmarks post events for.
struct BenchEventRequest: Request {
    var path: String { "/bench" }
}

/// An observer whose callback does the least work that can't be optimised away: it bumps a counter
/// behind a pointer (a stored `var` of a class would add Swift's dynamic exclusivity check, ~10 ns, to
/// every call, the floor's and Switchboard's alike).
final class BenchObserver: @unchecked Sendable {
    // `@unchecked Sendable`: the counter is only touched by the one thread that posts in a benchmark.
    private let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    init() { counter.initialize(to: 0) }
    deinit { counter.deallocate() }
    var count: Int { counter.pointee }
    func changed(_ event: RequestEvent<BenchEventRequest>) { counter.pointee &+= 1 }
    func bump() { counter.pointee &+= 1 }
}

/// One event to N observers: Dispatcher's registry against a plain closure array (the floor), a closure
/// array capturing its observers weakly (the floor for anything that doesn't keep observers alive) and
/// NotificationCenter, with the same N.
enum FanoutScenario {
    static func run(quick: Bool) async throws -> ScenarioResult {
        let rounds = quick ? 2 : 9
        let event = RequestEvent<BenchEventRequest>(.started(BenchEventRequest()), sendID: 1)
        var figures: [Figure] = []
        for n in [1, 100, 10_000] {
            let deliveries = quick ? 100_000 : 3_000_000
            let posts = max(1, deliveries / n)
            let observers = (0..<n).map { _ in BenchObserver() }

            let switchboard = Dispatcher(configuration: Configuration { $0.callbackQueue = .immediate })
            for observer in observers { switchboard.addObserver(observer, for: BenchEventRequest.self, on: .immediate) { $0.changed($1) } }

            let closures: [(RequestEvent<BenchEventRequest>) -> Void] = observers.map { observer in { observer.changed($0) } }
            // What any registry that must not keep its observers alive pays at least: a weak load per call.
            let weakClosures: [(RequestEvent<BenchEventRequest>) -> Void] = observers.map { observer in { [weak observer] in observer?.changed($0) } }

            let center = NotificationCenter()
            let name = Notification.Name("bench")
            let tokens = observers.map { observer in
                center.addObserver(forName: name, object: nil, queue: nil) { _ in observer.bump() }
            }

            var ours: [Double] = [], floor: [Double] = [], weakFloor: [Double] = [], notifications: [Double] = []
            for _ in 0..<rounds {
                floor.append(nanosPerDelivery(posts: posts, n: n) { for closure in closures { closure(event) } })
                weakFloor.append(nanosPerDelivery(posts: posts, n: n) { for closure in weakClosures { closure(event) } })
                ours.append(nanosPerDelivery(posts: posts, n: n) { switchboard.post(event) })
                notifications.append(nanosPerDelivery(posts: max(1, posts / 4), n: n) { center.post(name: name, object: nil) })
            }
            let expected = rounds * (posts + posts + posts + max(1, posts / 4))
            guard observers.allSatisfy({ $0.count == expected }) else {
                throw BenchError("fanout N=\(n): an observer missed deliveries (\(observers[0].count) of \(expected))")
            }
            tokens.forEach(center.removeObserver)
            blackHole &+= observers.reduce(0) { $0 &+ $1.count }
            let target = n == 1 ? "≤ 50 ns per post" : "≤ 25 ns"
            figures.append(Figure(name: "N=\(n) vs closure array", unit: "ns/delivery", candidate: ours, baseline: floor, baselineName: "closures", target: target))
            // Issue 30's target: at the `[weak]` closure floor for many observers (at N=1 the figure is a whole post).
            figures.append(
                Figure(
                    name: "N=\(n) vs weak closure array", unit: "ns/delivery", candidate: ours, baseline: weakFloor, baselineName: "weak closures",
                    target: n == 1 ? nil : "≤ 1.05×"))
            figures.append(Figure(name: "N=\(n) vs NotificationCenter", unit: "ns/delivery", candidate: ours, baseline: notifications, baselineName: "NotificationCenter"))
        }
        return ScenarioResult(
            scenario: "fanout",
            note:
                "One event posted to N observers registered by method reference, delivered immediately (no queue hop); \(rounds) rounds. At N=1 the figure is one whole post: lock, snapshot, delivery.",
            figures: figures
        )
    }

    /// Nanoseconds per delivery for `posts` posts to `n` observers.
    static func nanosPerDelivery(posts: Int, n: Int, _ post: () -> Void) -> Double {
        let start = now()
        for _ in 0..<posts { post() }
        return Double(now() - start) / Double(posts * n)
    }
}
