import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// A transport that accepts every transfer and never reports anything, not even a cancel: the worst
/// case a deadline must survive.
final class SilentTransport: Transport {
    let performed = Box(0)
    let cancelled = Box(0)

    func perform(_ request: TransportRequest, options: TransferOptions, callbacks: TransferCallbacks) -> any TransportTask {
        performed.mutate { $0 += 1 }
        return SilentTask(cancelled: cancelled)
    }

    struct SilentTask: TransportTask {
        let cancelled: Box<Int>
        func cancel() { cancelled.mutate { $0 += 1 } }
    }
}

/// Deadlines are kept above the transport: a send ends in exactly one terminal event within about its
/// deadline, whatever the transport and the server do.
@Suite(hangGuard, admission) struct DeadlineTests {
    @Test func aTransportThatNeverCallsBackStillEndsInTimedOut() async {
        let transport = SilentTransport()
        let client = Dispatcher(
            configuration: Configuration {
                $0.baseURL = URL(string: "http://127.0.0.1:9"); $0.callbackQueue = .immediate
            }, transport: transport)
        let started = Date()
        let error = await client.result(Get("/x").with(\.timeout, 0.3)).failure
        guard case .timedOut(let after) = error else {
            Issue.record("expected timedOut, got \(String(describing: error))")
            return
        }
        #expect(after == 0.3)
        // A bound that only a hang can break (a loaded CI machine may be slow, never 60 s slow).
        #expect(Date().timeIntervalSince(started) < 30 * timeScale)
        #expect(transport.cancelled.value == 1, "the transfer is told to stop")
        #expect(client.inFlightCount == 0)
    }

    /// A deadline or a cancel ends even while every worker of `DispatchQueue.global()` is blocked (an
    /// app's code, or its hooks, may block them): the end's delivery runs on a queue of its own
    /// (``WorkerQueue``). In a child process (`switchboard-probe starved`): blocking every global worker
    /// stalls the whole process, and in this one FoundationNetworking's file reads with it, which then
    /// crash a cancelled upload running beside (LinuxNotes).
    /// The proof is an order: a block queued on the global queue after the blocked ones has not run
    /// when the send ends (with the end's delivery on the global queue it queued behind that block,
    /// and behind the blocked ones, which Linux's pool, as many workers as cores and one more about
    /// every second, takes about a minute to reach). The cancel, of a typed request whose transport
    /// reports it at once, must also end before the sweeper's grace second, which otherwise ends it
    /// (a report queued on the global queue left it to that sweep: 1.0 s).
    @Test(arguments: ["deadline", "cancel"]) func aDeadlineOrACancelEndsWhileTheGlobalQueuesWorkersAreAllBlocked(_ mode: String) async throws {
        let outcome = try await ChildProcessFaultTests.runProbe(arguments: ["starved", mode], limit: 120)
        #expect(!outcome.timedOut && !outcome.crashed && outcome.status == 0, "the probe: \(outcome.output) \(outcome.errors.suffix(400))")
        let line = outcome.output.split(separator: "\n").last.map(String.init) ?? ""
        #expect(line.contains("sentinel=false"), "the send's end waited for the global queue: \(line)")
        if mode == "cancel" {
            #expect(line.hasPrefix("ended cancelled"), "\(line)")
            let after = line.split(separator: "=").last.flatMap { Double($0) } ?? .infinity
            #expect(after < 0.9, "the cancel was ended by the sweeper's grace second, not the transport's report: \(line)")
        } else {
            #expect(line.hasPrefix("ended timed out after 0.3"), "\(line)")
        }
    }

    @Test func aTimedOutAttemptIsRetriedByThePolicy() async {
        let transport = SilentTransport()
        let client = Dispatcher(
            configuration: Configuration {
                $0.baseURL = URL(string: "http://127.0.0.1:9")
                $0.callbackQueue = .immediate
                $0.retryPolicy = RetryPolicy(maximumAttempts: 3, initialDelay: 0.01, jitter: 0)
            }, transport: transport)
        let recorder = EventLog<Get>()
        client.addObserver(recorder, for: Get.self, on: .immediate) { $0.record($1) }
        let error = await client.result(Get("/x").with(\.timeout, 0.2)).failure
        guard case .timedOut = error else {
            Issue.record("expected timedOut, got \(String(describing: error))")
            return
        }
        #expect(transport.performed.value == 3)
        #expect(recorder.events.last?.attempts == 3)
        #expect(recorder.events.filter(\.isTerminal).count == 1)
    }

    @Test func aCancelTheTransportNeverReportsStillEndsInCancelled() async {
        let transport = SilentTransport()
        let client = Dispatcher(
            configuration: Configuration {
                $0.baseURL = URL(string: "http://127.0.0.1:9"); $0.callbackQueue = .immediate
            }, transport: transport)
        let result = Box<Result<Response<Get>, NetworkError>?>(nil)
        let ended = Box<Date?>(nil)
        let handle = client.send(Get("/x").with(\.timeout, 300)) { value in
            ended.mutate { $0 = Date() }
            result.mutate { $0 = value }
        }
        // The transfer is with the transport, which will never report the cancel.
        #expect(await eventually(timeout: 30) { transport.performed.value == 1 })
        let cancelled = Date()
        handle.cancel()
        #expect(await eventually(timeout: 30) { transport.cancelled.value == 1 }, "the transport was asked")
        #expect(await eventually(timeout: 60) { result.value != nil })
        #expect(result.value?.failure?.isCancelled == true)
        // At most about a second later (RELIABILITY.md): the grace period the transport gets, then the
        // dispatcher's sweep; with room for a starved or sanitized machine, far from the 300 s deadline.
        let took = (ended.value ?? .distantFuture).timeIntervalSince(cancelled)
        #expect(took < 1 + 2 * timeScale, "ended \(took) s after the cancel")
    }

    @Test func aReleasedDispatcherStillEndsItsSendsAgainstASilentTransport() async {
        let transport = SilentTransport()
        let result = Box<Result<Response<Get>, NetworkError>?>(nil)
        do {
            let client = Dispatcher(
                configuration: Configuration {
                    $0.baseURL = URL(string: "http://127.0.0.1:9"); $0.callbackQueue = .immediate
                }, transport: transport)
            client.send(Get("/x").with(\.timeout, 300)) { value in result.mutate { $0 = value } }
        }
        #expect(await eventually(timeout: 60) { result.value != nil })
        #expect(result.value?.failure?.isCancelled == true)
    }

    /// The soak that would have caught the send that never ended: many short deadlines against a
    /// server that never answers, mixed with successes and cancels, at concurrency 64. 600 sends in
    /// the suite; `SWITCHBOARD_SOAK_SENDS=100000 swift test --filter soak` for the long run.
    @Test(arguments: TransportUnderTest.network) func soakEverySendEndsOnceWithinItsDeadline(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            server.route(nil, "/never") { _ in ServerResponse(status: 200, body: .never) }
            let client = makeClient(server, on: kind) { $0.maximumConnectionsPerHost = 64 }
            let total = ProcessInfo.processInfo.environment["SWITCHBOARD_SOAK_SENDS"].flatMap(Int.init) ?? (runsUnderThreadSanitizer ? 150 : 600)
            let terminals = Box<[UInt64: Int]>([:])
            let lateness = Box<[Double]>([])
            client.addObserver(terminals, for: Get.self, on: .immediate) { box, event in
                if event.isTerminal { box.mutate { $0[event.sendID, default: 0] += 1 } }
            }
            await withTaskGroup(of: Void.self) { group in
                let next = Box(0)
                for _ in 0..<(runsUnderThreadSanitizer ? 16 : 64) {
                    group.addTask {
                        while true {
                            let n = next.mutate { value -> Int in
                                defer { value += 1 }; return value
                            }
                            guard n < total else { return }
                            let start = Date()
                            switch n % 4 {
                            case 0, 1:
                                _ = await client.result(Get("/never").with(\.timeout, 0.25))
                                lateness.mutate { $0.append(Date().timeIntervalSince(start) - 0.25) }
                            case 2:
                                _ = await client.result(Get("/small"))
                            default:
                                let handle = client.send(Get("/never").with(\.timeout, 5))
                                handle.cancel()
                            }
                        }
                    }
                }
            }
            #expect(await eventually(timeout: 30) { terminals.value.count == total }, "\(total - terminals.value.count) sends never ended")
            #expect(terminals.value.values.allSatisfy { $0 == 1 }, "a send with more than one terminal event")
            // A hang shows as a send that never ends, not as slowness: this bound is generous.
            #expect((lateness.value.max() ?? 0) < 30, "a deadline overran by \(lateness.value.max() ?? 0) s")
            #expect(client.inFlightCount == 0)
        }
    }
}

/// What the deadline's and the dispatcher's ends leave behind.
@Suite(hangGuard, admission) struct DeadlineCleanupTests {
    @Test func aSendThatEndsAfterItsDispatcherWasReleasedLeavesNothingRunning() async {
        let weakTransport = WeakBox<SilentTransport>()
        let result = Box<Result<Response<Get>, NetworkError>?>(nil)
        do {
            let transport = SilentTransport()
            weakTransport.set(transport)
            let client = Dispatcher(
                configuration: Configuration {
                    $0.baseURL = URL(string: "http://127.0.0.1:9"); $0.callbackQueue = .immediate
                }, transport: transport)
            client.send(Get("/x").with(\.timeout, 300)) { value in result.mutate { $0 = value } }
        }
        #expect(await eventually(timeout: 60) { result.value != nil })
        // The send left the in-flight table, so nothing (the sweeper, the operation) keeps the
        // transport alive any longer.
        #expect(await eventually(timeout: 10) { weakTransport.isEmpty })
    }

    @Test(arguments: TransportUnderTest.network) func noProgressFollowsATimeout(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let log = EventLog<Get>()
            client.addObserver(log, for: Get.self, on: .immediate) { $0.record($1) }
            // A 2 s deadline on a 30 s drip: room for progress first on a loaded machine (0.4 s left
            // a starved process none to report).
            let request = Get("/drip?chunks=3000&interval=10&size=100").with(\.responseFormat, .data).with(\.reportsProgress, true).with(\.timeout, 2)
            let error = await client.result(request).failure
            guard case .timedOut = error else {
                Issue.record("expected timedOut, got \(String(describing: error))")
                return
            }
            #expect(await settled(client))
            let names = log.events.map { Listener.name($0) }
            #expect(names.contains("progress"))
            #expect(names.last == "failed", "\(names.suffix(3))")
            #expect(names.filter { $0 == "failed" }.count == 1)
        }
    }
}

/// A weak reference that can be read from any thread.
final class WeakBox<T: AnyObject & Sendable>: Sendable {
    private let storage = Locked<Weak>(Weak())
    private struct Weak { weak var value: T? }
    func set(_ value: T) { storage.withLock { $0.value = value } }
    var isEmpty: Bool { storage.withLock { $0.value == nil } }
}

/// No wake-ups while waiting: the deadline sweeper's one timer is set for the earliest deadline, so a
/// send that waits long for its answer (a download's 24 h, a slow server) wakes nothing meanwhile; the
/// deadline still fires on time.
@Suite(hangGuard, admission) struct DeadlineTimerTests {
    @Test(arguments: TransportUnderTest.network) func aSendWaitingForItsAnswerWakesNothingUntilItsDeadline(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let arrived = Box(false)
            let release = Box(false)
            server.route("GET", "/held") { request in
                arrived.mutate { $0 = true }
                _ = request.wait(timeout: 30) { release.value }
                return .json(["ok": true])
            }
            let client = makeClient(server, on: kind)
            let sweepsBefore = client.deadlineSweeps
            let done = Box<Result<Response<Get>, NetworkError>?>(nil)
            client.send(Get("/held").with(\.timeout, 60)) { result in done.mutate { $0 = result } }
            #expect(await eventually(timeout: 30) { arrived.value })
            // Held for a second of waiting (the old sweeper ticked 20 times in it).
            try await Task.sleep(nanoseconds: 1_000_000_000)
            #expect(client.deadlineSweeps == sweepsBefore, "the sweeper woke \(client.deadlineSweeps - sweepsBefore) times while the send waited")
            release.mutate { $0 = true }
            #expect(await eventually(timeout: 30) { done.value != nil })
            #expect((try? done.value?.get())?.json["ok"] == true)
            // A short deadline still ends a held send, at its time.
            release.mutate { $0 = false }
            arrived.mutate { $0 = false }
            let started = Date()
            let late = await client.result(Get("/held").with(\.timeout, 0.5))
            #expect(late.failure.map { if case .timedOut = $0 { true } else { false } } == true, "\(String(describing: late.failure))")
            #expect(Date().timeIntervalSince(started) < 10)
            release.mutate { $0 = true }
        }
    }
}
