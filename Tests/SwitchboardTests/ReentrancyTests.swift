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
/// for speed, crashed this suite in 6 of 12 runs; see BENCHMARKS.md.
@Suite(.timeLimit(.minutes(1))) struct ReentrancyTests {
    @Test func immediateCallbacksMaySendAndCancel() async throws {
        try await withServer { server in
            let client = makeClient(server)
            // A terminal event's observer sends the next request, three deep.
            let chain = Box<[Int]>([])
            client.addObserver(chain, for: Get.self, on: .immediate) { (box: Box<[Int]>, event: RequestEvent<Get>) in
                guard let response = event.response else { return }
                let depth = Int(response.request.path.split(separator: "/").last ?? "") ?? 0
                box.mutate { $0.append(depth) }
                if depth < 3 { client.send(Get("/echo/\(depth + 1)")) }
            }
            client.send(Get("/echo/1"))
            #expect(await eventually { chain.value == [1, 2, 3] })

            // A progress observer cancels its own send mid-body.
            let progressed = Box(0)
            let request = Get("/drip?chunks=20&interval=30&size=100").with(\.responseFormat, .data).with(\.reportsProgress, true)
            let handle = Box<RequestHandle?>(nil)
            let token = client.addObserver(progressed, for: Get.self, on: .immediate) { (box: Box<Int>, event: RequestEvent<Get>) in
                if case .progress = event, box.mutate({ $0 += 1; return $0 }) == 1 { handle.value?.cancel() }
            }
            let result = await withCheckedContinuation { continuation in
                handle.mutate { $0 = client.send(request) { continuation.resume(returning: $0) } }
            }
            token.cancel()
            #expect(result.failure?.isCancelled == true)
        }
    }

    @Test func releasingDispatchersWhileTheirTransfersEndNeitherHangsNorCrashes() async throws {
        try await withServer { server in
            let ended = Box(0)
            for round in 0..<30 {
                let client = makeClient(server)
                let handle = client.send(Get("/delay/\(round % 3 == 0 ? 0 : 50)")) { result in
                    if result.failure == nil || result.failure?.isCancelled == true { ended.mutate { $0 += 1 } }
                }
                if round % 2 == 0 { handle.cancel() }
            }
            // Every send ends once, cancelled or answered, though no dispatcher is left.
            #expect(await eventually(timeout: 10) { ended.value == 30 })
        }
    }
}
