import Dispatch
import Foundation
import Testing

@testable import Switchboard

/// How the registry groups observers by queue (one block per queue a post) and where a send's closure
/// runs among them. The groups are compared by object identity, and on Linux `DispatchQueue.main` and
/// `DispatchQueue.global()` are a new object at each call: on Apple platforms the first two tests
/// pass whether or not the library accounts for that.
@Suite(hangGuard, admission) struct DeliveryGroupTests {
    /// Every main-queue observer of a type is in one group, whichever `DispatchQueue.main` object it came
    /// with, and `.main`'s queue is that group's, so that a send's closure on `.main` can join the block.
    @Test func mainQueueObserversShareOneGroupWithTheMainCallbackQueue() {
        let client = Dispatcher(configuration: Configuration())
        let listeners = [Listener(), Listener(), Listener()]
        client.addObserver(listeners[0], for: Ping.self, on: .main) { $0.heard($1) }
        client.addObserver(listeners[1], for: Ping.self, on: .main) { $0.heard($1) }
        client.addObserver(listeners[2], for: Ping.self, on: .queue(DispatchQueue.main)) { $0.heard($1) }
        let groups = client.registry.snapshot(ObjectIdentifier(Ping.self)).filter { !$0.entries.isEmpty }
        #expect(groups.count == 1)
        #expect(groups.first?.entries.count == 3)
        #expect(groups.first?.queue === CallbackQueue.main.groupQueue)
        #expect(CallbackQueue.queue(DispatchQueue.main).groupQueue === CallbackQueue.main.groupQueue)
    }

    /// The same for observers of all requests; and a queue that is a new object at each call leaves no
    /// empty group behind per registration that came and went.
    @Test func mainQueueBusObserversShareOneGroupAndPassingQueuesPileUpNoGroups() {
        let client = Dispatcher(configuration: Configuration())
        let a = client.addObserverForAllRequests(on: .main) { _ in }
        let b = client.addObserverForAllRequests(on: .queue(DispatchQueue.main)) { _ in }
        let bus = client.registry.snapshot(BusObserverEntry.key).filter { !$0.entries.isEmpty }
        #expect(bus.count == 1)
        #expect(bus.first?.entries.count == 2)
        a.cancel()
        b.cancel()
        let listener = Listener()
        for _ in 0..<10 {
            client.addObserver(listener, for: Ping.self, on: .queue(DispatchQueue.global())) { $0.heard($1) }.cancel()
        }
        #expect(client.registry.snapshot(ObjectIdentifier(Ping.self)).count == 1)
    }

    /// The closure runs in the block of its queue's observers: an observer that suspends the queue
    /// stops the blocks after its own, not the closure. Observers of all requests elsewhere (here
    /// `.immediate`) don't split it off.
    @Test(arguments: [false, true]) func aClosureRunsInItsQueuesObserverBlock(withObserversOfAllRequestsElsewhere: Bool) async {
        let client = Dispatcher(configuration: Configuration())
        let queue = DispatchQueue(label: "switchboard.tests.join")
        let elsewhere = withObserversOfAllRequestsElsewhere ? client.addObserverForAllRequests(on: .immediate) { _ in } : nil
        let listener = Listener()
        let joined = await Self.closureRuns(on: queue, client) { suspend in
            client.addObserver(listener, for: Ping.self, on: .queue(queue)) { listener, event in
                listener.heard(event)
                suspend()
            }
        }
        #expect(joined)
        #expect(listener.log.value == ["succeeded"])
        elsewhere?.cancel()
    }

    /// With observers of all requests on its queue, the closure ends their block, the last one there.
    @Test func aClosureRunsInTheBlockOfTheObserversOfAllRequestsOnItsQueue() async {
        let client = Dispatcher(configuration: Configuration())
        let queue = DispatchQueue(label: "switchboard.tests.join-bus")
        let listener = Listener()
        client.addObserver(listener, for: Ping.self, on: .queue(queue)) { $0.heard($1) }
        var bus: ObservationToken?
        let joined = await Self.closureRuns(on: queue, client) { suspend in
            bus = client.addObserverForAllRequests(on: .queue(queue)) { _ in suspend() }
        }
        #expect(joined)
        #expect(listener.log.value == ["succeeded"])
        bus?.cancel()
    }

    /// Posts a `Ping` event to `client`'s observers with a closure on `queue`, after `register` adds
    /// the observer that calls `suspend` (which suspends `queue` once). Returns whether the closure ran
    /// while the queue was suspended, that is, in that observer's block (a closure in a block of its
    /// own waits for the resume after the wait; one in an earlier block runs before the suspend). The
    /// queue is resumed exactly once if it was suspended, and never otherwise.
    static func closureRuns(on queue: DispatchQueue, _ client: Dispatcher, register: (@escaping @Sendable () -> Void) -> Void) async -> Bool {
        let state = Box((suspended: false, resumed: false))
        register {
            state.mutate { state in
                guard !state.suspended else { return }
                state.suspended = true
                queue.suspend()
            }
        }
        /// Resumes the queue if it is suspended and not yet resumed; returns whether it did.
        @Sendable func resumeOnce() -> Bool {
            state.mutate { state in
                guard state.suspended, !state.resumed else { return false }
                state.resumed = true
                queue.resume()
                return true
            }
        }
        let ranSuspended = Box<Bool?>(nil)
        let closure: @Sendable () -> Void = { ranSuspended.mutate { $0 = resumeOnce() } }
        client.registry.post(Ping.self, then: .queue(queue), { ObserverRegistryTests.succeeded() }, closure)
        let ran = await eventually(timeout: 10) { ranSuspended.value != nil }
        _ = resumeOnce()  // a closure in a block of its own waits for this
        // A closure that ran before the observer's block: that block suspends the queue after the
        // closure; resume it once it has, so the queue isn't released suspended.
        if ran, ranSuspended.value == false, await eventually(timeout: 10, { state.value.suspended }) { _ = resumeOnce() }
        return ran && ranSuspended.value == true
    }

    /// With observers of all requests on its queue, the closure runs after them too (their block
    /// comes after the typed observers').
    @Test func aClosureRunsAfterTheObserversOfAllRequestsOnItsQueue() async {
        let client = Dispatcher(configuration: Configuration())
        let queue = DispatchQueue(label: "switchboard.tests.bus-order")
        let order = Box<[String]>([])
        let listener = Listener()
        client.addObserver(listener, for: Ping.self, on: .queue(queue)) { _, _ in order.mutate { $0.append("typed") } }
        let bus = client.addObserverForAllRequests(on: .queue(queue)) { _ in order.mutate { $0.append("all requests") } }
        let closure: @Sendable () -> Void = { order.mutate { $0.append("closure") } }
        client.registry.post(Ping.self, then: .queue(queue), { ObserverRegistryTests.succeeded() }, closure)
        #expect(await eventually { order.value.count == 3 })
        #expect(order.value == ["typed", "all requests", "closure"])
        bus.cancel()
    }
}
