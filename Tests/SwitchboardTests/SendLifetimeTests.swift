import Dispatch
import Foundation
import LoopbackServer
import Testing
@testable import Switchboard

/// A send's lifetime at its edges, as a hostile review of the staged pipeline found them: an owner that
/// goes away while the transport ignores the cancel, owners and observers that must die on the main
/// actor, a completion that runs before the send leaves the in-flight table, a late replaying
/// subscriber, a cancel from an observer of `cached`.
@Suite(hangGuard, admission) struct SendLifetimeTests {
    /// An owner whose `deinit` records whether it ran on the main queue.
    final class MortalOwner: Sendable {
        let deaths: Box<[Bool]>
        init(_ deaths: Box<[Bool]>) { self.deaths = deaths }
        deinit { deaths.mutate { $0.append(DispatchQueue.getSpecific(key: onMainQueue) == true) } }
    }

    @MainActor final class MainActorObserver {
        let deaths: Box<[Bool]>
        init(_ deaths: Box<[Bool]>) { self.deaths = deaths }
        deinit { deaths.mutate { $0.append(DispatchQueue.getSpecific(key: onMainQueue) == true) } }
    }

    static func silentClient(_ transport: SilentTransport) -> Dispatcher {
        // Not coalesced: a shared transfer answers a leaving send's cancel itself.
        Dispatcher(
            configuration: Configuration {
                $0.baseURL = URL(string: "http://127.0.0.1:9")
                $0.callbackQueue = .immediate
                $0.coalescesDuplicates = false
            }, transport: transport)
    }

    /// The owner goes; the transport never reports the stop: the send still ends `cancelled` (within the
    /// grace period), once, and leaves the in-flight table. Before, it was never looked at again.
    @Test func aSendWhoseOwnerWentEndsEvenWhenTheTransportIgnoresTheCancel() async throws {
        let transport = SilentTransport()
        let client = Self.silentClient(transport)
        let endings = Box<[Result<Response<Get>, NetworkError>]>([])
        // Made and dropped off the main queue: its reference is looked at by the sweeper itself.
        DispatchQueue.global().async {
            var owner: MortalOwner? = MortalOwner(Box([]))
            client.send(Get("/x").with(\.timeout, 600), owner: owner!) { result in endings.mutate { $0.append(result) } }
            owner = nil
        }
        // Within the owner poll and the grace period; a bound only a hang breaks.
        #expect(await eventually(timeout: 20) { !endings.value.isEmpty }, "the send of a gone owner never ended")
        let result = try #require(endings.value.first)
        #expect(result.failure?.isCancelled == true)
        #expect(transport.cancelled.value == 1, "the transfer was told to stop")
        #expect(endings.value.count == 1)
        #expect(client.inFlightCount == 0)
    }

    /// An owner given on the main thread is looked at on the main queue only: elsewhere its link asks
    /// the main queue, and the send ends when the answer comes; the owner dies on the main thread.
    @MainActor @Test func anOwnerGivenOnTheMainThreadIsLookedAtOnlyThere() async {
        let transport = SilentTransport()
        let client = Self.silentClient(transport)
        let deaths = Box<[Bool]>([])
        var owner: MortalOwner? = MortalOwner(deaths)
        let link = OwnerLink(owner!)
        let offMain = await Task.detached { link.liveness() }.value
        #expect(offMain == .askedOnMain)
        let ended = Box(false)
        client.send(Get("/x").with(\.timeout, 600), owner: owner!) { _ in ended.mutate { $0 = true } }
        owner = nil  // the last strong reference, dropped on the main thread
        #expect(deaths.value == [true])
        #expect(await eventually(timeout: 20) { ended.value }, "the send of a gone owner was cancelled")
        #expect(link.liveness() == .released)
    }

    /// A main-actor class is `Sendable`, so it can observe through the `Sendable` form on the main
    /// queue: then the registry doesn't load it off the main queue either.
    @MainActor @Test func aSendableObserverOnTheMainQueueIsNeverLoadedOffIt() async {
        let dispatcher = Dispatcher()
        let deaths = Box<[Bool]>([])
        var observer: MainActorObserver? = MainActorObserver(deaths)
        dispatcher.addObserver(observer!, for: Get.self, on: .main) { _, _ in }
        observer = nil
        #expect(deaths.value == [true])
        let offMain = await Task.detached { dispatcher.observerCount(for: Get.self) }.value
        #expect(offMain == 1, "off the main queue the registry loaded the observer's reference")
        #expect(dispatcher.observerCount(for: Get.self) == 0)
    }

    /// On a concurrent callback queue the completion may run at once: the send has left the in-flight
    /// table by then, as `inFlightCount` promises.
    @Test(arguments: TransportUnderTest.network) func theCompletionNeverSeesItsOwnSendInFlight(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.callbackQueue = .queue(DispatchQueue.global()) }
            var seen: [Int] = []
            for _ in 0..<50 {
                let count = await withCheckedContinuation { continuation in
                    client.send(Get("/small")) { _ in continuation.resume(returning: client.inFlightCount) }
                }
                seen.append(count)
            }
            #expect(seen.allSatisfy { $0 == 0 }, "\(seen.filter { $0 != 0 }.count) completions saw their send in flight")
        }
    }

    /// A replaying stream that subscribes while a send's end is being delivered doesn't replay its
    /// `started` (no end would follow it).
    @Test(arguments: TransportUnderTest.network) func aLateReplayingSubscriberGetsNoStartOfAFinishedSend(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let delivering = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let listener = Listener()
            client.addObserver(listener, for: Ping.self, on: .immediate) { _, event in
                guard event.isTerminal, event.sendID == 1 else { return }
                delivering.signal()
                release.wait()
            }
            let first = Task { try await client.response(for: Ping()) }
            await offPoolWait(delivering)
            let stream = client.events(for: Ping.self, replayingLast: true)
            release.signal()
            _ = try await first.value
            _ = try await client.response(for: Ping())
            for await event in stream {
                #expect(event.sendID != 1, "a replayed \(event.kind) of the finished send")
                break
            }
        }
    }

    /// A cancel from an `.immediate` observer of `cached` ends the send before its transfer begins:
    /// nothing goes to the server.
    @Test(arguments: TransportUnderTest.network) func aCancelOnTheCachedAnswerSendsNothing(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.cache = ResponseCache(directory: nil) }
            let request = Get("/counter/cancel-on-cached").with(\.cachePolicy, CachePolicy(timeToLive: 60, mode: .cachedThenLoad))
            _ = try await client.response(for: request)
            #expect(server.hits("/counter/cancel-on-cached") == 1)
            let listener = Listener()
            client.addObserver(listener, for: Get.self, on: .immediate) { _, event in
                if case .cached = event.kind { client.cancelAll(of: Get.self) }
            }
            let second = await client.result(request)
            #expect(second.failure?.isCancelled == true)
            #expect(server.hits("/counter/cancel-on-cached") == 1, "the cancelled send still went to the server")
        }
    }
}

/// Waits for `semaphore` on a thread of its own, outside the concurrency pool and Dispatch's global
/// queues (``onOwnThread(_:)``).
func offPoolWait(_ semaphore: DispatchSemaphore) async {
    await withCheckedContinuation { continuation in
        onOwnThread {
            semaphore.wait()
            continuation.resume()
        }
    }
}
