import Foundation
import Switchboard

/// The figure behind ARCHITECTURE.md's isolation rule: what a send's state transitions cost behind
/// one lock (what Switchboard does) against the same transitions on an actor. A send's transitions
/// are reached from synchronous code — `send` itself, a transport's callbacks on its queue or thread,
/// a cancel, the deadline timer — so on an actor each one is a `Task` that hops to it; behind the
/// lock each is a call. Both variants make their transitions from synchronous code and wait for the
/// last, so the difference is what the actor costs. (Called from async code an uncontended actor costs
/// about what the lock does: that is not where a send's transitions come from.)
enum IsolationScenario {
    /// Transitions per send: the times a plain GET takes its operation's lock.
    static let transitions = 7

    /// A send's state, reduced to what a transition does: read a phase, write it, count.
    struct State {
        var phase = 0
        var count = 0
        mutating func step(_ worker: Int) -> Int {
            phase = (phase &+ worker &+ 1) & 7
            count &+= 1
            return phase
        }
    }

    final class LockedSend: Sendable {
        let state = Locked(State())
    }

    actor ActorSend {
        var state = State()
        func step(_ worker: Int) -> Int { state.step(worker) }
    }

    static func run(quick: Bool) async throws -> ScenarioResult {
        let sends = quick ? 2000 : 100_000
        let rounds = quick ? 1 : 5
        let locked: @Sendable (Int) async -> Bool = { worker in
            let send = LockedSend()
            return await withCheckedContinuation { continuation in
                var phase = 0
                for _ in 0..<transitions { phase &+= send.state.withLock { $0.step(worker) } }
                continuation.resume(returning: phase >= 0)
            }
        }
        let isolated: @Sendable (Int) async -> Bool = { worker in
            let send = ActorSend()
            let left = Locked(transitions)
            return await withCheckedContinuation { continuation in
                for _ in 0..<transitions {
                    Task {
                        _ = await send.step(worker)
                        if left.withLock({ left in
                            left -= 1
                            return left == 0
                        }) {
                            continuation.resume(returning: true)
                        }
                    }
                }
            }
        }
        var figures: [Figure] = []
        for concurrency in try E2EScenario.concurrencyLevels(default: [1, 8]) {
            var samples: [String: [Double]] = [:]
            for round in 0...rounds {
                for (name, body) in [("one lock", locked), ("actor", isolated)] {
                    let run = try await PipelineScenario.measure(body, sends: sends, concurrency: concurrency)
                    if round > 0 { samples[name, default: []].append(run.cpu) }  // round 0 warms up
                }
            }
            figures.append(
                Figure(
                    name: "\(transitions) transitions on an actor, c=\(concurrency)", unit: "CPU µs/send", candidate: samples["actor"]!, baseline: samples["one lock"]!,
                    baselineName: "\(transitions) under one lock"))
        }
        return ScenarioResult(
            scenario: "isolation",
            note:
                "\(sends) sends per round, \(transitions) state transitions each (a plain GET's), \(rounds) rounds after a warm-up, interleaved: from synchronous code: one lock against a task that hops to an actor per transition.",
            figures: figures)
    }
}
