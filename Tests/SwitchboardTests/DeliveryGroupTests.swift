import Dispatch
import Foundation
import Testing

@testable import Switchboard

/// How the registry groups observers by queue (one block per queue a post) and where a send's closure
/// runs among them. The groups are compared by object identity, and on Linux `DispatchQueue.main` and
/// `DispatchQueue.global()` are a new object at each call: on Apple platforms the first two tests
/// pass whether or not the library accounts for that.
@Suite(timeLimit(minutes: 1)) struct DeliveryGroupTests {
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
    /// stops the blocks after its own, not the closure.
    @Test func aClosureRunsInItsQueuesObserverBlock() async {
        let client = Dispatcher(configuration: Configuration())
        let queue = DispatchQueue(label: "switchboard.tests.join")
        let resumed = Box(false)
        let resumeOnce: @Sendable () -> Void = {
            if resumed.mutate({ resumed in
                defer { resumed = true }; return !resumed
            }) {
                queue.resume()
            }
        }
        let listener = Listener()
        client.addObserver(listener, for: Ping.self, on: .queue(queue)) { listener, event in
            listener.heard(event)
            queue.suspend()
        }
        let ran = Box(false)
        let closure: @Sendable () -> Void = {
            ran.mutate { $0 = true }
            resumeOnce()
        }
        client.registry.post(Ping.self, then: .queue(queue), { ObserverRegistryTests.succeeded() }, closure)
        let joined = await eventually(timeout: 10) { ran.value }
        resumeOnce()  // a closure in a block of its own would wait for this
        #expect(joined)
        #expect(listener.log.value == ["succeeded"])
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
