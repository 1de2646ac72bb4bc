import Dispatch
import Foundation
import LoopbackServer
@testable import Switchboard
import Testing

/// One event reaching many observers while they change: the order they hear it in, observers removed,
/// deallocated or added in the middle of a fan-out, a `deinit` that calls back into the registry, and
/// the all-requests stream while streams come and go. Real sends, on both transports.
@Suite(hangGuard, admission) struct FanOutTests {
    /// An observer that writes its number into a shared log.
    final class Numbered: Sendable {
        let number: Int
        let log: Box<[String]>
        init(_ number: Int, _ log: Box<[String]>) {
            self.number = number
            self.log = log
        }
        func heard(_ event: RequestEvent<Ping>) { log.mutate { $0.append("\(Listener.name(event)) \(number)") } }
    }

    @Test(arguments: TransportUnderTest.network) func observersOnOneQueueHearEachEventInTheOrderTheyRegistered(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let inline = Box<[String]>([]), queued = Box<[String]>([])
            let queue = DispatchQueue(label: "fan-out.serial")
            let observers = (0..<6).map { Numbered($0, inline) } + (0..<6).map { Numbered($0, queued) }
            for observer in observers[..<6] { client.addObserver(observer, for: Ping.self, on: .immediate) { $0.heard($1) } }
            for observer in observers[6...] { client.addObserver(observer, for: Ping.self, on: .queue(queue)) { $0.heard($1) } }
            _ = try await client.response(for: Ping())
            await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
            let expected = ["started", "succeeded"].flatMap { kind in (0..<6).map { "\(kind) \($0)" } }
            #expect(inline.value == expected)
            #expect(queued.value == expected)
        }
    }

    @Test(arguments: TransportUnderTest.network) func anObserverDeallocatedAndAnotherRemovedMidFanOutHearNothingMore(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let log = Box<[String]>([])
            let first = Numbered(0, log), removed = Numbered(2, log), last = Numbered(3, log)
            let doomed = Box<Numbered?>(Numbered(1, log))
            weak let doomedWeakly = doomed.value
            client.addObserver(first, for: Ping.self, on: .immediate) { observer, event in
                observer.heard(event)
                guard case .started = event.kind else { return }
                // In the middle of the fan-out of `started`: the next observer goes away, the one after
                // is removed. Neither hears `started`, nor anything after it.
                doomed.mutate { $0 = nil }
                client.removeObserver(removed)
            }
            client.addObserver(doomed.value!, for: Ping.self, on: .immediate) { $0.heard($1) }
            client.addObserver(removed, for: Ping.self, on: .immediate) { $0.heard($1) }
            client.addObserver(last, for: Ping.self, on: .immediate) { $0.heard($1) }
            #expect(client.observerCount(for: Ping.self) == 4)
            _ = try await client.response(for: Ping())
            #expect(doomedWeakly == nil)
            #expect(log.value == ["started 0", "started 3", "succeeded 0", "succeeded 3"])
            #expect(client.observerCount(for: Ping.self) == 2, "the deallocated one pruned, the removed one gone")
        }
    }

    /// An observer that removes itself in `deinit`, as NotificationCenter's observers once had to.
    final class SelfRemoving: Sendable {
        let client: Dispatcher
        let deinits: Box<Int>
        init(_ client: Dispatcher, _ deinits: Box<Int>) {
            self.client = client
            self.deinits = deinits
        }
        deinit {
            client.removeObserver(self)
            _ = client.observerCount(for: Ping.self)
            deinits.mutate { $0 += 1 }
        }
    }

    /// Holds a `deinit` of its own, run when the registry lets go of the callback that captured it.
    final class CapturedByACallback: Sendable {
        let client: Dispatcher
        let deinits: Box<Int>
        init(_ client: Dispatcher, _ deinits: Box<Int>) {
            self.client = client
            self.deinits = deinits
        }
        deinit {
            // Back into the registry, from wherever the last reference went: never under its lock.
            let token = client.addObserver(Listener(), for: Pong.self, on: .immediate) { _, _ in }
            token.cancel()
            deinits.mutate { $0 += 1 }
        }
    }

    @Test(arguments: TransportUnderTest.network) func aDeinitThatCallsBackIntoTheRegistryNeitherDeadlocksNorLosesEvents(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let steady = Listener()
            client.addObserver(steady, for: Ping.self, on: .immediate) { $0.heard($1) }
            let deinits = Box(0)
            let rounds = 40
            // Observers that go away on other threads while sends fan out to them.
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for _ in 0..<10 { _ = try await client.response(for: Ping()) }
                }
                for _ in 0..<rounds {
                    group.addTask {
                        var observer: SelfRemoving? = SelfRemoving(client, deinits)
                        client.addObserver(observer!, for: Ping.self, on: .immediate) { _, _ in }
                        client.addObserver(observer!, for: Pong.self, on: .immediate) { _, _ in }
                        await Task.yield()
                        observer = nil
                        // A callback whose captured object only the registry holds (the token is
                        // dropped): removing its observer releases it, and its deinit runs then, on
                        // this thread, outside the registry's lock (inside, it would deadlock).
                        let owner = Listener()
                        let mine = Box(0)
                        client.addObserver(owner, for: Pong.self, on: .immediate) { [captured = CapturedByACallback(client, mine)] _, _ in _ = captured }
                        #expect(mine.value == 0)
                        client.removeObserver(owner)
                        #expect(mine.value == 1, "released by the removal")
                        deinits.mutate { $0 += mine.value }
                    }
                }
                try await group.waitForAll()
            }
            #expect(await eventually(timeout: 30) { deinits.value == 2 * rounds })
            #expect(steady.log.value.count == 20, "every event of the ten sends reached the steady observer")
            #expect(client.observerCount(for: Ping.self) == 1)
            #expect(client.observerCount(for: Pong.self) == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func anObserverAddedDuringAFanOutOfItsOwnTypeHearsTheEventsAfterIt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let log = Box<[String]>([])
            let adder = Numbered(0, log), added = Numbered(1, log)
            client.addObserver(adder, for: Ping.self, on: .immediate) { observer, event in
                observer.heard(event)
                guard case .started = event.kind else { return }
                client.addObserver(added, for: Ping.self, on: .immediate) { $0.heard($1) }
            }
            _ = try await client.response(for: Ping())
            // Registered while `started` was being delivered: it missed that one, and heard the end.
            #expect(log.value == ["started 0", "succeeded 0", "succeeded 1"])
            #expect(client.observerCount(for: Ping.self) == 2)
        }
    }

    @Test(arguments: TransportUnderTest.network) func theAllRequestsStreamCarriesEverySendOnceWhileStreamsComeAndGo(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.maximumConnectionsPerHost = 8 }
            let sends = 60
            let stream = client.allEvents()
            let collected = Task { () -> [UInt64: [Bool]] in
                var bySend: [UInt64: [Bool]] = [:]
                var terminals = 0
                for await event in stream {
                    bySend[event.sendID, default: []].append(event.isTerminal)
                    if event.isTerminal { terminals += 1 }
                    if terminals == sends { break }
                }
                return bySend
            }
            let churning = Box(true), opened = Box(0)
            let churn = Task.detached {
                // Streams and bus observers opened and closed on another thread all along.
                while churning.value {
                    let other = client.allEvents()
                    let token = client.addObserverForAllRequests(on: .immediate) { _ in }
                    let reader = Task { for await _ in other { break } }
                    token.cancel()
                    reader.cancel()
                    opened.mutate { $0 += 1 }
                    await Task.yield()
                }
            }
            // The sends start while the churn runs, and their answers are held until it has run on.
            #expect(await eventually(timeout: 30) { opened.value >= 20 })
            var handles: [RequestHandle] = []
            for n in 0..<sends { handles.append(client.send(Get("/concurrent/bus?hold=release&i=\(n)"))) }
            let afterSends = opened.value
            #expect(await eventually(timeout: 30) { opened.value >= afterSends + 20 && server.hits("/concurrent/bus") == 8 })
            server.release("bus")
            let bySend = await collected.value
            churning.mutate { $0 = false }
            await churn.value
            #expect(Set(bySend.keys) == Set(handles.map(\.id)))
            for (sendID, kinds) in bySend { #expect(kinds == [false, true], "send \(sendID): \(kinds)") }
        }
    }

    /// `inFlightCount` reaching 0 means the terminal event has reached the `.immediate` observers: a
    /// test (or an app) that waits for it may read what they recorded. Before the fix, a send left the
    /// count first, and a sanitizer run saw the log without its `cancelled`.
    @Test(arguments: TransportUnderTest.network) func aSendLeavesTheInFlightCountOnlyAfterItsImmediateObserversHeardItsEnd(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let listener = Listener()
            let inTerminal = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
            client.addObserver(listener, for: Ping.self, on: .immediate) { _, event in
                guard event.isTerminal else { return }
                inTerminal.signal()
                release.wait()
            }
            let done = Box(false)
            client.send(Ping()) { _ in done.mutate { $0 = true } }
            await withCheckedContinuation { continuation in
                onOwnThread {
                    inTerminal.wait()
                    continuation.resume()
                }
            }
            #expect(client.inFlightCount == 1, "the observer is still hearing the end")
            #expect(!done.value)
            release.signal()
            #expect(await eventually { done.value })
            #expect(client.inFlightCount == 0)
        }
    }
}
