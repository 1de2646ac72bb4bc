import Testing

/// Every suite's limit on how many of its test cases run at once under a sanitizer: 16, whatever width
/// the run was started with. Without a sanitizer there is no limit.
///
/// Swift Testing starts the whole suite at once. Under the thread sanitizer everything is several times
/// slower, and beside another build, 726 tests at once left FoundationNetworking's one thread (it
/// serves every URLSession in the process) and Swift's two-thread concurrency pool so far behind that
/// 30 s and 60 s deadlines passed before sends reached their transport: 7 failed checks in 6 tests on
/// 2026-12-07. CI's `SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=16` avoided that only where it was
/// set; this limit holds for `swift test --sanitize=thread` as anyone types it. A test case waits for a
/// place before it starts (its own time bounds begin after), so the wait is suspended, not polled.
let admission = Admission(places: runsUnderThreadSanitizer || runsUnderAddressSanitizer ? 16 : nil)

/// A trait that admits at most `places` test cases at once (every test case of the suites it is on,
/// recursively); `nil` for no limit.
struct Admission: SuiteTrait, TestTrait, TestScoping {
    let gate: AdmissionGate?

    init(places: Int?) {
        gate = places.map(AdmissionGate.init)
    }

    var isRecursive: Bool { true }

    /// A place for each test case, not for the suite or the test function around them.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Admission? {
        gate != nil && testCase != nil ? self : nil
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        guard let gate else { return try await function() }
        await gate.enter()
        defer { gate.leave() }
        try await function()
    }
}

/// A counting gate for tasks: `enter` suspends (never blocks a thread) until a place is free, `leave`
/// frees one, handing it to the longest waiter.
final class AdmissionGate: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Box<State>

    init(places: Int) {
        state = Box(State(free: places))
    }

    func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.mutate { state -> Bool in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if admitted { continuation.resume() }
        }
    }

    /// How many tasks wait for a place (for the gate's own test).
    var waiting: Int { state.value.waiting.count }

    func leave() {
        let next = state.mutate { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
