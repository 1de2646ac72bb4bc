import Dispatch
import Foundation
import Switchboard
import Testing

/// Marks the main queue (the main actor's executor): after `dispatchMain()` on Linux its work runs on a
/// pool thread, so `Thread.isMainThread` can't tell.
let onMainQueue: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

/// A main-actor observer dies on the main actor: the registry never loads its weak reference off the
/// main thread (the strong reference a load makes could be the last one, and `deinit` would run there).
@Suite(hangGuard, admission) struct MainActorObserverLifetimeTests {
    /// Records, in its test's box, whether its `deinit` ran on the main queue.
    @MainActor final class MortalObserver {
        let deaths: Box<[Bool]>
        init(_ deaths: Box<[Bool]>) { self.deaths = deaths }
        func changed(_ event: RequestEvent<Get>) {}
        deinit { deaths.mutate { $0.append(DispatchQueue.getSpecific(key: onMainQueue) == true) } }
    }

    @MainActor @Test func aMainActorObserverIsDeinitialisedOnTheMainThreadWhileOthersCountAndPrune() async throws {
        let dispatcher = Dispatcher()
        let stop = Box(false)
        // A thread asks the registry for the type's observers again and again (counting asks every
        // entry's liveness), pausing 0.1 ms after every 10 asks: asks in most rounds, on a fraction of
        // a core (a loop without a pause held a whole core for 20 s on a loaded two-core machine, while
        // the rest of the suite waited). A race: this catches a load off the main queue only now and
        // then; the test below catches it every time.
        let counting = Thread {
            var asked = 0
            while !stop.value {
                _ = dispatcher.observerCount(for: Get.self)
                asked += 1
                if asked % 10 == 0 { usleep(100) }
            }
        }
        counting.start()
        let rounds = 400
        let record = Box<[Bool]>([])
        for _ in 0..<rounds {
            var observer: MortalObserver? = MortalObserver(record)
            dispatcher.addObserver(observer!, for: Get.self, calling: MortalObserver.changed)
            observer = nil  // the last strong reference, dropped on the main thread
            await Task.yield()
        }
        stop.mutate { $0 = true }
        let deaths = record.value
        #expect(deaths.count == rounds, "\(deaths.count) of \(rounds) observers were deinitialised")
        #expect(deaths.allSatisfy { $0 }, "\(deaths.filter { !$0 }.count) observers died off the main thread")
    }

    /// Off the main queue the registry doesn't look at a main-actor observer at all: one that died on
    /// the main thread still counts there until a delivery on the main actor finds it gone (a look
    /// would make a strong reference that could be the last).
    @MainActor @Test func offTheMainQueueTheRegistryNeverLoadsAMainActorObserver() async throws {
        let dispatcher = Dispatcher()
        var observer: MortalObserver? = MortalObserver(Box([]))
        dispatcher.addObserver(observer!, for: Get.self, calling: MortalObserver.changed)
        observer = nil
        #expect(dispatcher.observerCount(for: Get.self) == 0, "on the main queue the registry looks, and the observer is gone")
        let offMain = await Task.detached { dispatcher.observerCount(for: Get.self) }.value
        #expect(offMain == 1, "off the main queue the registry loaded the main-actor observer's reference")
    }
}
