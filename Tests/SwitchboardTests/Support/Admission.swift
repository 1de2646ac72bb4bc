import Testing

/// How many test cases run at once under a sanitizer: at most 16 in the whole process, whatever width
/// the run was started with. Without a sanitizer (or where one can't be detected: see
/// `runsUnderSanitizer`, Linux only) there is no limit.
///
/// Swift Testing starts the whole suite at once. Under the thread sanitizer everything is several times
/// slower, and beside another build, 726 tests at once left FoundationNetworking's one thread (it
/// serves every URLSession in the process) and Swift's two-thread concurrency pool so far behind that
/// 30 s and 60 s deadlines passed before sends reached their transport: 7 failed checks in 6 tests on
/// 2026-12-07. CI's `SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=16` avoided that only where it was
/// set. It is on every suite that carries ``hangGuard`` (every suite that waits on anything; the
/// others are pure computation). A case waits, suspended, for a place; its own time bounds begin after,
/// but ``hangGuard``'s ten minutes include the wait, and a case cancelled while it waits (that limit)
/// leaves the queue at once and doesn't run.
let admission = Admission(places: runsUnderThreadSanitizer || runsUnderAddressSanitizer ? 16 : nil)

/// A trait that admits at most `places` test cases at once (every test case of the suites it is on,
/// recursively), `nil` for no limit. A case already holding a place in the same gate (the trait applied
/// twice, as a nested suite would) doesn't ask for a second.
struct Admission: SuiteTrait, TestTrait, TestScoping {
    let gate: AdmissionGate?

    init(places: Int?) {
        gate = places.map(AdmissionGate.init)
    }

    var isRecursive: Bool { true }

    /// The gates whose place the current task's case holds (a task the case makes inherits them).
    @TaskLocal static var heldGates: Set<ObjectIdentifier> = []

    /// A place for each test case, not for the suite or the test function around them.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Admission? {
        gate != nil && testCase != nil ? self : nil
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        guard let gate, !Self.heldGates.contains(ObjectIdentifier(gate)) else { return try await function() }
        guard await gate.enter() else { throw CancellationError() }
        defer { gate.leave() }
        try await Self.$heldGates.withValue(Self.heldGates.union([ObjectIdentifier(gate)])) { try await function() }
    }
}

/// A counting gate for tasks: `enter` suspends (never blocks a thread) until a place is free, `leave`
/// frees one, handing it to the longest waiter. A waiter whose task is cancelled leaves the queue at
/// once, without a place.
final class AdmissionGate: Sendable {
    private struct Waiter {
        let ticket: Int
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var free: Int
        var waiting: [Waiter] = []
        var nextTicket = 0
        /// Tickets whose task was cancelled before they joined the queue.
        var cancelledEarly: Set<Int> = []
    }

    private let state: Box<State>
    /// How many tasks the gate admits at once.
    let places: Int

    init(places: Int) {
        self.places = places
        state = Box(State(free: places))
    }

    /// How many tasks wait for a place (for the gate's own test).
    var waiting: Int { state.value.waiting.count }

    /// Waits for a place: `true` once the caller holds one (it must ``leave()``), `false` when its task
    /// was cancelled first (it holds nothing).
    func enter() async -> Bool {
        let ticket = state.mutate { state -> Int in
            state.nextTicket += 1
            return state.nextTicket
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let answer = state.mutate { state -> Bool? in
                    if state.cancelledEarly.remove(ticket) != nil { return false }
                    guard state.free > 0 else {
                        state.waiting.append(Waiter(ticket: ticket, continuation: continuation))
                        return nil
                    }
                    state.free -= 1
                    return true
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = state.mutate { state -> Waiter? in
                if let index = state.waiting.firstIndex(where: { $0.ticket == ticket }) { return state.waiting.remove(at: index) }
                // Not queued yet (it will see this and leave), or already admitted: then the ticket stays
                // in the set, unused, for the run (a few bytes per case cancelled by its time limit).
                state.cancelledEarly.insert(ticket)
                return nil
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    func leave() {
        let next = state.mutate { state -> Waiter? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.continuation.resume(returning: true)
    }
}
