import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LoopbackServer
import Testing
@testable import Switchboard

/// User code calling back into Switchboard from inside its callbacks, and dispatchers released while
/// their transfers still end. Each would hang, or trap in FoundationNetworking, if user code ran on the
/// session's own queues, or if a cancel could reach a task that had already left the session: a cancel
/// that races a task's completion there is a `fatalError` ("Trying to access a behaviour for a task
/// that in not in the registry"). A delegate running inline on FoundationNetworking's work queue, tried
/// for speed, crashed this suite in 6 of 12 runs; see docs/perf-log.md.
@Suite(hangGuard, admission) struct ReentrancyTests {
    @Test(arguments: TransportUnderTest.network) func immediateCallbacksMaySendAndCancel(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            // A terminal event's observer sends the next request, three deep.
            let chain = Box<[Int]>([])
            let chainToken = client.addObserver(chain, for: Get.self, on: .immediate) { [weak client] (box: Box<[Int]>, event: RequestEvent<Get>) in
                guard let response = event.response else { return }
                let depth = Int(response.request.path.split(separator: "/").last ?? "") ?? 0
                box.mutate { $0.append(depth) }
                if depth < 3 { client?.send(Get("/echo/\(depth + 1)")) }
            }
            client.send(Get("/echo/1"))
            #expect(await eventually { chain.value == [1, 2, 3] })
            chainToken.cancel()

            // A progress observer cancels its own send mid-body.
            let progressed = Box(0)
            let request = Get("/drip?chunks=20&interval=30&size=100").with(\.responseFormat, .data).with(\.reportsProgress, true)
            let handle = Box<RequestHandle?>(nil)
            let token = client.addObserver(progressed, for: Get.self, on: .immediate) { (box: Box<Int>, event: RequestEvent<Get>) in
                // Cancelling is idempotent: every progress event until the handle is known tries.
                if case .progress = event.kind {
                    box.mutate { $0 += 1 }
                    handle.value?.cancel()
                }
            }
            let result = await completion { done in handle.mutate { $0 = client.send(request, completion: done) } }
            token.cancel()
            #expect(result.failure?.isCancelled == true)
            #expect(progressed.value < 20)  // stopped mid-body
        }
    }

    @Test(arguments: TransportUnderTest.network) func releasingDispatchersWhileTheirTransfersEndNeitherHangsNorCrashes(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let rounds = 60
            let endings = Box([Int](repeating: 0, count: rounds))
            // Kept, so the test can wait for every transfer's end to be reported before it counts.
            var transports: [any Transport] = []
            for round in 0..<rounds {
                let client = makeClient(server, on: kind)
                // Some answer at once, racing the release; the others are cancelled by it, or before it.
                let handle = client.send(Get("/delay/\(round % 3 == 0 ? 0 : 50)")) { result in
                    if result.failure == nil || result.failure?.isCancelled == true { endings.mutate { $0[round] += 1 } }
                }
                if let transport = client.transportInUse { transports.append(transport) }
                if round % 2 == 0 { handle.cancel() }
            }
            // Every send ends, cancelled or answered, though no dispatcher is left; and each ends once.
            #expect(await eventually(timeout: 10) { endings.value.allSatisfy { $0 >= 1 } })
            #expect(transports.count == rounds)
            for transport in transports { #expect(await settled(transport)) }
            #expect(endings.value.allSatisfy { $0 == 1 }, "ended more than once: \(endings.value)")
        }
    }
}
