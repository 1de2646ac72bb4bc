import Foundation
import Switchboard

/// The figure behind ARCHITECTURE.md's isolation rule: what a send's state transitions cost behind
/// one lock (what Switchboard does) against the same transitions on an actor, called from the threads
/// a send's stages run on (the caller's, the transport's queue, a global queue), so that each one is
/// an executor hop. The pipeline scenario's `response(for:)` row puts the difference beside
/// Switchboard's whole cost per send.
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
            var phase = 0
            for _ in 0..<transitions { phase &+= send.state.withLock { $0.step(worker) } }
            return phase >= 0
        }
        let isolated: @Sendable (Int) async -> Bool = { worker in
            let send = ActorSend()
            var phase = 0
            for _ in 0..<transitions { phase &+= await send.step(worker) }
            return phase >= 0
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
                "\(sends) sends per round, \(transitions) state transitions each (a plain GET's), \(rounds) rounds after a warm-up, interleaved: one lock against an actor hop per transition.",
            figures: figures)
    }
}
