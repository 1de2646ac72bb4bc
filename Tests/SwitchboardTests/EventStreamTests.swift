import Foundation
import LoopbackServer
import Switchboard
import SwitchboardTesting
import Testing

/// Streams per request type and the bus of all requests.
@Suite(hangGuard, admission) struct EventStreamTests {
    private func stubbedClient(delay: TimeInterval = 0) -> (StubTransport, Dispatcher) {
        let stub = StubTransport()
        stub.on(Ping.self, answer: .json(["ping": true], delay: delay))
        stub.on(Pong.self, answer: .status(500))
        return (stub, Dispatcher.stubbed(stub))
    }

    @Test func theBusCarriesEveryEventOfEveryType() async throws {
        let (_, client) = stubbedClient()
        let stream = client.allEvents()
        let ping = client.send(Ping())
        let pong = client.send(Pong())
        var seen: [String] = []
        for await event in stream {
            seen.append("\(event.requestTypeName) \(event.sendID) \(event.isTerminal)")
            if seen.count == 4 { break }
        }
        #expect(Set(seen) == ["Ping \(ping.id) false", "Ping \(ping.id) true", "Pong \(pong.id) false", "Pong \(pong.id) true"])
    }

    @Test func busEventsTypeBackToTheirRequestType() async throws {
        let (_, client) = stubbedClient()
        let events = Box([AnyRequestEvent]())
        let token = client.addObserverForAllRequests(on: .immediate) { event in events.mutate { $0.append(event) } }
        _ = await client.result(Ping())
        _ = await client.result(Pong())
        #expect(await eventually { events.value.filter(\.isTerminal).count == 2 })
        let terminal = events.value.filter(\.isTerminal)
        #expect(terminal[0].typed(Ping.self)?.response?.json["ping"] == true)
        #expect(terminal[0].typed(Pong.self) == nil)
        #expect(terminal[1].error?.statusCode == 500)
        #expect(terminal[1].description.hasPrefix("Pong #"))
        token.cancel()
        _ = await client.result(Ping())
        #expect(events.value.count == 4)
    }

    @Test func streamsEndWhenTheDispatcherIsReleased() async throws {
        var client: Dispatcher? = stubbedClient().1
        let typed = client!.events(for: Ping.self)
        let all = client!.allEvents()
        client = nil
        var count = 0
        for await _ in typed { count += 1 }
        for await _ in all { count += 1 }
        #expect(count == 0)
    }

    @Test func bufferingNewestKeepsOnlyTheLatestEvents() async throws {
        let (_, client) = stubbedClient()
        let stream = client.events(for: Ping.self, bufferingPolicy: .bufferingNewest(2))
        for n in 0..<5 { _ = await client.result(Ping(n: n)) }
        var kept: [Int] = []
        for await event in stream {
            kept.append(event.request.n)
            if kept.count == 2 { break }
        }
        #expect(kept == [4, 4])  // the started and terminal events of the last send
    }

    @Test func aLateSubscriberGetsTheLastEventOfARunningSendReplayed() async throws {
        // The answer waits 60 s: the send runs while the streams subscribe, however loaded the
        // machine; then it is cancelled, and the cancel is its terminal event.
        let (_, client) = stubbedClient(delay: 60)
        let running = client.send(Ping(n: 7))
        let replaying = client.events(for: Ping.self, replayingLast: true)
        let plain = client.events(for: Ping.self)
        running.cancel()
        var replayed: [String] = []
        for await event in replaying {
            replayed.append("\(event.sendID) \(event.isTerminal)")
            if event.isTerminal { break }
        }
        #expect(replayed == ["\(running.id) false", "\(running.id) true"])
        var live: [Bool] = []
        for await event in plain {
            live.append(event.isTerminal)
            if event.isTerminal { break }
        }
        #expect(live == [true])  // without replay, only what happens after subscribing
    }

    @Test(arguments: TransportUnderTest.network) func aReplayedProgressEventKeepsItsValueAndAttempt(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            // One chunk, then a minute's wait: the send runs while the streams subscribe, however loaded
            // the machine (this task has resumed 20 s after the first byte), and no live progress event
            // can stand in for the replayed one.
            let request = Get("/drip?chunks=2&interval=60000&size=100").with(\.responseFormat, .data).with(\.reportsProgress, true)
            // Waits for the event, the first byte's progress, not for a time: a loaded machine only
            // makes it come later.
            let (firstByte, arrived) = AsyncStream<Void>.makeStream()
            let running = client.send(request, progress: { if $0.bytesReceived > 0 { arrived.yield() } }, completion: { _ in arrived.finish() })
            for await _ in firstByte { break }
            try #require(client.runningRequests.first?.progress?.bytesReceived ?? 0 > 0, "the send ended before its first byte")
            // Both streams first (each takes its replay when it is made), then their first events.
            let typedStream = client.events(for: Get.self, replayingLast: true)
            let busStream = client.allEvents(replayingLast: true)
            let replayed = await Self.firstEvent(of: typedStream)
            let erasedReplay = await Self.firstEvent(of: busStream)
            // Both replays are in hand: the rest of the body is not needed.
            running.cancel()
            await Self.waitForTheEnd(of: client)
            let event = try #require(replayed)
            #expect(event.sendID == running.id && event.attempts == 1 && event.request.path == request.path)
            #expect(event.progress?.bytesReceived == 100, "\(event.kind)")
            let erased = try #require(erasedReplay)
            #expect(erased.sendID == running.id && erased.typed(Get.self)?.progress != nil && erased.request.path == request.path)
        }
    }

    @Test(arguments: TransportUnderTest.network) func aReplayedCachedEventCarriesTheStoredResponse(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            // Answers the first request at once and every later one once the test has its replay.
            let answered = Box(0)
            let released = Box(false)
            server.route("GET", "/replayed") { request in
                let count = answered.mutate { count in
                    count += 1
                    return count
                }
                if count > 1 { _ = request.wait { released.value } }
                return .json(["key": "replayed", "count": count])
            }
            let client = makeClient(server, on: kind) { $0.cache = ResponseCache(directory: nil) }
            let request = Get("/replayed").with(\.cachePolicy, CachePolicy(timeToLive: 60, mode: .cachedThenLoad))
            _ = try await client.response(for: request)  // stored
            let second = client.send(request)  // `cached` at once, then the network, once released
            let replayed = await Self.firstEvent(of: client.events(for: Get.self, replayingLast: true))
            released.mutate { $0 = true }
            await Self.waitForTheEnd(of: client)
            let event = try #require(replayed)
            guard case .cached(let stored) = event.kind else {
                Issue.record("replayed \(event.kind), not the cached response")
                return
            }
            #expect(event.sendID == second.id && stored.source == .cache && stored.json["count"] == 1)
        }
    }

    /// Waits until the client's sends have ended on their own: neither a cancel nor the server's stop
    /// cuts them short. (A cancel that lands as the server's stop ends the transfer races them in
    /// FoundationNetworking, whose "task not in the registry" `fatalError` ends the test process.)
    private static func waitForTheEnd(of client: Dispatcher) async {
        #expect(await eventually(timeout: 60) { client.inFlightCount == 0 })
    }

    /// The first element of `stream`, or `nil` when none comes within `timeout` seconds.
    private static func firstEvent<Element: Sendable>(of stream: AsyncStream<Element>, timeout: TimeInterval = 30) async -> Element? {
        await withTaskGroup(of: Element?.self) { group in
            group.addTask {
                for await element in stream { return element }
                return nil
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    @Test func theBusReplaysToo() async throws {
        let (_, client) = stubbedClient(delay: 60)
        let running = client.send(Ping())
        let bus = client.allEvents(replayingLast: true)
        running.cancel()
        var seen: [String] = []
        for await event in bus {
            seen.append("\(event.sendID) \(event.isTerminal)")
            if event.isTerminal { break }
        }
        #expect(seen == ["\(running.id) false", "\(running.id) true"])
    }

    @Test func replayNeverDuplicatesOrReordersUnderConcurrentSends() async throws {
        let (_, client) = stubbedClient(delay: 0.05)
        let made = Box(0)
        let sends = Task.detached {
            for _ in 0..<40 {
                client.send(Ping())
                made.mutate { $0 += 1 }
                try? await Task.sleep(nanoseconds: 2_000_000)
            }
        }
        // Subscribed while the sends go on: some are made, others are still to come.
        #expect(await eventually(timeout: 30) { made.value >= 10 })
        let stream = client.events(for: Ping.self, replayingLast: true)
        await sends.value
        // Every send ended (so each one's events are in the stream), then a last one: its terminal
        // event comes after all of theirs, and ends the reading. (Reading until nothing was in flight
        // could wait for ever: a send leaves the in-flight count after its observers heard its end.)
        #expect(await eventually(timeout: 30) { client.inFlightCount == 0 })
        let last = client.send(Ping())
        var perSend: [UInt64: [Bool]] = [:]
        var collected = 0
        for await event in stream {
            perSend[event.sendID, default: []].append(event.isTerminal)
            collected += 1
            if event.sendID == last.id, event.isTerminal { break }
            if collected > 300 { break }
        }
        #expect(perSend[last.id] == [false, true])
        // At least the replayed last event was heard, so the checks below are about something.
        #expect(!perSend.isEmpty)
        for (_, kinds) in perSend {
            #expect(kinds.filter { $0 }.count == 1)
            #expect(kinds.last == true)
            #expect(kinds.count <= 2)
        }
    }
}
