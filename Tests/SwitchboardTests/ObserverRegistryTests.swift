import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

@Suite(hangGuard, admission) struct ObserverRegistryTests {
    /// A succeeded event for `Ping` without the network (registry-level tests).
    nonisolated static func succeeded(_ n: Int = 0) -> RequestEvent<Ping> {
        let url = URL(string: "http://127.0.0.1/echo")!
        let http = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!
        return RequestEvent(
            .succeeded(Response(request: Ping(n: n), httpResponse: http, data: Data(), json: .null, timing: Timing(start: Date(), timeToFirstByte: nil, duration: 0))),
            sendID: UInt64(n))
    }

    @Test(arguments: TransportUnderTest.network) func methodReferenceAndClosureObserversBothReceiveOneSendsEventsInOrder(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let a = Listener(), b = Listener()
            client.addObserver(a, for: Ping.self, on: .immediate) { $0.heard($1) }
            client.addObserver(b, for: Ping.self, on: .immediate) { listener, event in listener.heard(event) }
            _ = try await client.response(for: Ping())
            #expect(a.log.value == ["started", "succeeded"])
            #expect(b.log.value == ["started", "succeeded"])
        }
    }

    @Test(arguments: TransportUnderTest.network) func observersOfOtherTypesHearNothing(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let listener = Listener()
            client.addObserver(listener, for: Pong.self, on: .immediate) { $0.heardPong($1) }
            _ = try await client.response(for: Ping())
            #expect(listener.log.value.isEmpty)
            _ = try await client.response(for: Pong())
            #expect(listener.log.value == ["pong-started", "pong-succeeded"])
        }
    }

    @Test(arguments: TransportUnderTest.network) func defaultDeliveryIsOnTheMainQueue(_ kind: TransportUnderTest) async throws {
        // Under `swift test` on Linux the main queue may be drained by a worker thread (dispatch_main),
        // so "on the main queue" is checked by a queue-specific value, not Thread.isMainThread.
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        try await withServer { server in
            let client = makeClient(server, on: kind) { $0.callbackQueue = .main }
            let queues = Box<[String?]>([])
            let listener = Listener()
            await client.addObserver(listener, for: Ping.self) { listener, event in
                listener.heard(event)
                queues.mutate { $0.append(DispatchQueue.getSpecific(key: key)) }
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                client.send(Ping()) { _ in
                    queues.mutate { $0.append(DispatchQueue.getSpecific(key: key).map { "closure on " + $0 }) }
                    continuation.resume()
                }
            }
            // Both observer deliveries ran on main, and before the closure.
            #expect(queues.value == ["main", "main", "closure on main"])
            #expect(listener.log.value == ["started", "succeeded"])
        }
        #expect(Configuration().callbackQueue.isMain)
    }

    @Test(arguments: TransportUnderTest.network) func deliveryQueueIsConfigurablePerObserver(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let queue = DispatchQueue(label: "observer-queue")
            let key = DispatchSpecificKey<Int>()
            queue.setSpecific(key: key, value: 42)
            let seen = Box<[Int?]>([])
            let listener = Listener()
            client.addObserver(listener, for: Ping.self, on: .queue(queue)) { _, _ in
                seen.mutate { $0.append(DispatchQueue.getSpecific(key: key)) }
            }
            _ = try await client.response(for: Ping())
            #expect(await eventually { seen.value.count == 2 })
            #expect(seen.value == [42, 42])
        }
    }

    @Test(arguments: TransportUnderTest.network) func oneSendsEventsReachAnObserverOnASerialQueueInOrder(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let log = Box<[String]>([])
            let listener = Listener()
            client.addObserver(listener, for: Get.self, on: .queue(DispatchQueue(label: "serial"))) { _, event in
                log.mutate { $0.append(Listener.name(event)) }
            }
            let request = Get("/drip?chunks=6&interval=10&size=500").with(\.responseFormat, .data).with(\.reportsProgress, true)
            _ = try await client.response(for: request)
            #expect(await eventually { log.value.last == "succeeded" })
            let names = log.value
            #expect(names.first == "started")
            #expect(names.dropFirst().dropLast().allSatisfy { $0 == "progress" })
            #expect(names.count >= 3)
        }
    }

    @Test @MainActor func mainActorObserverIsCalledOnTheMainActor() async throws {
        let server = try LoopbackServer.standard()
        defer { server.stopInBackground() }
        let client = makeClient(server)
        let screen = MainActorListener()
        client.addObserver(screen, for: Ping.self, calling: MainActorListener.heard)
        _ = try await client.response(for: Ping())
        #expect(await eventually { await MainActor.run { screen.events.count == 2 } })
        #expect(screen.events == ["started", "succeeded"])
    }

    /// Every form that calls an observer on the main actor calls it on the main queue, inside the main
    /// actor's isolation, whichever thread registered it and whichever posts the event (the transport's
    /// queue here): the registry calls these without `MainActor.assumeIsolated`'s check, so where they
    /// run is all that keeps them on the main actor. `preconditionIsolated` checks in release builds too.
    @Test(arguments: TransportUnderTest.network) func everyMainActorFormIsCalledOnTheMainQueue(_ kind: TransportUnderTest) async throws {
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let heard = Box<[String]>([])
            @Sendable func record(_ form: String, _ event: RequestEvent<Ping>) {
                MainActor.preconditionIsolated()
                heard.mutate { $0.append("\(form) \(Listener.name(event)) on \(DispatchQueue.getSpecific(key: key) ?? "another queue")") }
            }
            let screen = await MainActor.run { MainActorListener() }
            let listener = Listener()
            // A main-actor method reference, registered on the main actor.
            await MainActor.run { _ = client.addObserver(screen, for: Ping.self, calling: MainActorListener.heard) }
            // From a detached task: a Sendable observer's main-actor method, and the `.main` and
            // `.queue(DispatchQueue.main)` closures.
            await Task.detached {
                client.addObserver(listener, for: Ping.self, calling: { _ in { @MainActor event in record("method", event) } })
                client.addObserver(listener, for: Ping.self, on: .main) { _, event in record("main", event) }
                client.addObserver(listener, for: Ping.self, on: .queue(DispatchQueue.main)) { _, event in record("queue(main)", event) }
            }.value
            // A main-actor closure, registered on the main actor.
            await MainActor.run { _ = client.addObserver(listener, for: Ping.self) { _, event in record("handler", event) } }
            _ = try await Task.detached { try await client.response(for: Ping()) }.value
            #expect(await eventually { heard.value.count == 8 })
            #expect(await MainActor.run { screen.events } == ["started", "succeeded"])
            for form in ["method", "main", "queue(main)", "handler"] {
                #expect(heard.value.filter { $0.hasPrefix(form + " ") } == ["\(form) started on main", "\(form) succeeded on main"])
            }
        }
    }

    @Test(arguments: TransportUnderTest.network) func observerRemovedInsideCallbackGetsNoFurtherEvents(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let listener = Listener()
            client.addObserver(listener, for: Ping.self, on: .immediate) { listener, event in
                listener.heard(event)
                client.removeObserver(listener)  // re-enters the registry from inside a delivery
            }
            _ = try await client.response(for: Ping())
            _ = try await client.response(for: Ping())
            #expect(listener.log.value == ["started"])
            #expect(client.observerCount(for: Ping.self) == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func observerMayAddObserversAndSendFromInsideItsCallback(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let first = Listener(), second = Listener()
            let sentFollowUp = Box(false)
            client.addObserver(first, for: Ping.self, on: .immediate) { listener, event in
                listener.heard(event)
                guard case .succeeded = event.kind,
                    !sentFollowUp.mutate({
                        let was = $0; $0 = true; return was
                    })
                else { return }
                client.addObserver(second, for: Pong.self, on: .immediate) { $0.heardPong($1) }
                client.send(Pong())
            }
            _ = try await client.response(for: Ping())
            #expect(await eventually { second.log.value == ["pong-started", "pong-succeeded"] })
        }
    }

    @Test func nothingIsDeliveredAfterRemovalEvenIfAlreadyQueued() async throws {
        let client = Dispatcher()
        let queue = DispatchQueue(label: "blocked")
        let listener = Listener()
        let token = client.addObserver(listener, for: Ping.self, on: .queue(queue)) { $0.heard($1) }
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }  // hold the queue
        client.registry.post(Self.succeeded())  // queued behind the gate
        token.cancel()
        gate.signal()
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
        #expect(listener.log.value.isEmpty)
    }

    @Test func deallocatedObserverGetsNothingAndIsPruned() async throws {
        let client = Dispatcher(configuration: Configuration { $0.callbackQueue = .immediate })
        let heard = Box(0)
        do {
            let listener = Listener()
            client.addObserver(listener, for: Ping.self, on: .immediate) { _, _ in heard.mutate { $0 += 1 } }
            #expect(client.observerCount(for: Ping.self) == 1)
        }
        client.registry.post(Self.succeeded())
        #expect(heard.value == 0)
        #expect(client.observerCount(for: Ping.self) == 0)
    }

    @Test func tokenCancelRemovesOnlyThatRegistration() {
        let client = Dispatcher(configuration: Configuration { $0.callbackQueue = .immediate })
        let listener = Listener()
        let first = client.addObserver(listener, for: Ping.self, on: .immediate) { $0.heard($1) }
        client.addObserver(listener, for: Ping.self, on: .immediate) { l, _ in l.log.mutate { $0.append("closure") } }
        first.cancel()
        first.cancel()  // idempotent
        client.registry.post(Self.succeeded())
        #expect(listener.log.value == ["closure"])
    }

    @Test func removeObserverForOneTypeLeavesItsOtherTypes() {
        let client = Dispatcher(configuration: Configuration { $0.callbackQueue = .immediate })
        let listener = Listener()
        client.addObserver(listener, for: Ping.self, on: .immediate) { $0.heard($1) }
        client.addObserver(listener, for: Pong.self, on: .immediate) { $0.heardPong($1) }
        client.removeObserver(listener, for: Ping.self)
        #expect(client.observerCount(for: Ping.self) == 0)
        #expect(client.observerCount(for: Pong.self) == 1)
        client.removeObserver(listener)
        #expect(client.observerCount(for: Pong.self) == 0)
    }

    @Test func thousandObserversOnOneTypeEachGetEveryEventOnce() {
        let client = Dispatcher(configuration: Configuration { $0.callbackQueue = .immediate })
        let listeners = (0..<1000).map { _ in Listener() }
        for listener in listeners { client.addObserver(listener, for: Ping.self, on: .immediate) { $0.heard($1) } }
        for n in 0..<3 { client.registry.post(Self.succeeded(n)) }
        #expect(listeners.allSatisfy { $0.log.value == ["succeeded", "succeeded", "succeeded"] })
    }

    @Test func concurrentAddRemoveWhileEventsFanOutIsSafe() async {
        let client = Dispatcher(configuration: Configuration { $0.callbackQueue = .immediate })
        let steady = Listener()
        client.addObserver(steady, for: Ping.self, on: .immediate) { $0.heard($1) }
        let posts = 2000
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<500 {
                        let transient = Listener()
                        let token = client.addObserver(transient, for: Ping.self, on: .immediate) { $0.heard($1) }
                        if Bool.random() { token.cancel() } else { client.removeObserver(transient) }
                    }
                }
            }
            group.addTask {
                for n in 0..<posts { client.registry.post(Self.succeeded(n)) }
            }
        }
        #expect(steady.log.value.count == posts)
        #expect(client.observerCount(for: Ping.self) == 1)
    }

    @Test(arguments: TransportUnderTest.network) func eventStreamEndsItsRegistrationWhenTheConsumerStops(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let task = Task {
                var names: [String] = []
                for await event in client.events(for: Ping.self) {
                    names.append(Listener.name(event))
                    if event.isTerminal { break }
                }
                return names
            }
            #expect(await eventually { client.observerCount(for: Ping.self) == 1 })
            _ = try await client.response(for: Ping())
            #expect(await task.value == ["started", "succeeded"])
            #expect(await eventually { client.observerCount(for: Ping.self) == 0 })
        }
    }
}

extension CallbackQueue {
    var isMain: Bool {
        if case .main = self { return true }
        return false
    }
}
