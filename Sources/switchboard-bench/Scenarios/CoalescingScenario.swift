import Dispatch
import Foundation
import Switchboard

/// Coalescing: 100 identical GETs sent at once against one GET alone, to an endpoint that answers in
/// 20 ms (the loopback server in its own process). The server counts the requests that reached it;
/// the 100 sends must make exactly one, and take no more than 1.2× the wall time of one send. For
/// context, the same 100 sends with coalescing off (100 requests on the wire).
enum CoalescingScenario {
    /// The endpoint, one path per round so no round shares with another.
    struct Feed: Request {
        let key: String
        var path: String { "/concurrent/\(key)?ms=20" }
    }

    /// The server's count of requests to a path.
    struct Hits: Request {
        let countedPath: String
        var path: String { "/hits" }
        var parameters: JSON? { ["path": .string(countedPath)] }
        var coalescesDuplicates: Bool { false }
    }

    /// Counts terminal events and wakes the waiting sender when all arrived.
    final class Listener: Sendable {
        private let state = Locked((expected: 0, seen: 0, failed: 0))
        let done = DispatchSemaphore(value: 0)

        func expect(_ count: Int) { state.withLock { $0 = (count, 0, 0) } }

        func heard(_ event: RequestEvent<Feed>) {
            guard event.isTerminal else { return }
            let finished = state.withLock { state -> Bool in
                state.seen += 1
                if event.error != nil { state.failed += 1 }
                return state.seen == state.expected
            }
            if finished { done.signal() }
        }

        var failures: Int { state.withLock { $0.failed } }
    }

    static func run(quick: Bool) async throws -> ScenarioResult {
        let rounds = quick ? 2 : 15
        let server = try ServerProcess()
        defer { server.stop() }
        func client(coalescing: Bool) -> Dispatcher {
            Dispatcher(
                configuration: Configuration {
                    $0.baseURL = server.baseURL
                    $0.callbackQueue = .immediate
                    $0.cache = nil
                    $0.coalescesDuplicates = coalescing
                    $0.maximumConnectionsPerHost = 100
                })
        }
        let coalescing = client(coalescing: true), separate = client(coalescing: false)
        let listener = Listener()
        for each in [coalescing, separate] { each.addObserver(listener, for: Feed.self, on: .immediate) { $0.heard($1) } }
        // Warm-up: connections open, code paths paged in.
        _ = try await burst(coalescing, listener, key: "warm-1", count: 100)
        _ = try await burst(separate, listener, key: "warm-2", count: 100)

        var one: [Double] = [], hundred: [Double] = [], uncoalesced: [Double] = []
        var transfers: [Double] = [], separateTransfers: [Double] = []
        for round in 0..<rounds {
            one.append(try await burst(coalescing, listener, key: "one-\(round)", count: 1))
            hundred.append(try await burst(coalescing, listener, key: "hundred-\(round)", count: 100))
            uncoalesced.append(try await burst(separate, listener, key: "separate-\(round)", count: 100))
            transfers.append(Double(try await hits(coalescing, "/concurrent/hundred-\(round)")))
            separateTransfers.append(Double(try await hits(coalescing, "/concurrent/separate-\(round)")))
        }
        guard transfers.allSatisfy({ $0 == 1 }) else { throw BenchError("coalescing: 100 identical sends made \(transfers) requests") }
        return ScenarioResult(
            scenario: "coalescing",
            note:
                "100 identical GETs sent at once (one dispatcher, `.immediate` observers) against one GET alone, to an endpoint answering in 20 ms; \(rounds) rounds after a warm-up, wall time from the first `send` to the last terminal event. Transfers are the server's own count.",
            figures: [
                Figure(name: "100 identical GETs, coalesced", unit: "ms", candidate: hundred, baseline: one, baselineName: "one GET", target: "≤ 1.2× one GET"),
                Figure(name: "100 identical GETs, coalescing off", unit: "ms", candidate: uncoalesced, baseline: one, baselineName: "one GET"),
                Figure(name: "requests reaching the server, coalesced", unit: "requests", candidate: transfers, target: "exactly 1"),
                Figure(name: "requests reaching the server, coalescing off", unit: "requests", candidate: separateTransfers),
            ])
    }

    /// Sends `count` identical requests at once; returns the milliseconds until the last ended.
    private static func burst(_ client: Dispatcher, _ listener: Listener, key: String, count: Int) async throws -> Double {
        listener.expect(count)
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<count { client.send(Feed(key: key)) }
        let done = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: listener.done.wait(timeout: .now() + 30) == .success) }
        }
        guard done, listener.failures == 0 else { throw BenchError("coalescing: a burst of \(count) did not all succeed") }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
    }

    private static func hits(_ client: Dispatcher, _ path: String) async throws -> Int {
        try await client.response(for: Hits(countedPath: path)).json["hits"].int ?? -1
    }
}
