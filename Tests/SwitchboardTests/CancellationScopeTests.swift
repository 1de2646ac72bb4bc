import Foundation
import LoopbackServer
import Switchboard
import SwitchboardTesting
import Testing

/// A stand-in for a screen that owns its requests.
private final class Screen: Sendable {}

/// Cancelling by owner, by request type and all at once; the list of running sends.
@Suite(hangGuard, admission) struct CancellationScopeTests {
    @Test(arguments: TransportUnderTest.network) func aSendIsCancelledWhenItsOwnerIsDeallocated(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let recorder = RecordingObserver<Get>()
            recorder.observe(client)
            var screen: Screen? = Screen()
            let completions = Box([NetworkError?]())
            let handle = client.send(Get("/delay/60000"), owner: screen!) { result in
                completions.mutate { $0.append(result.failure) }
            }
            #expect(await eventually { server.hits("/delay/60000") == 1 })
            weak let gone = screen
            screen = nil
            #expect(gone == nil)
            // Within the sweeper's tick and its grace, counting only the time the process could run.
            #expect(await eventually(timeout: 2) { recorder.terminalEvents.contains { $0.sendID == handle.id } })
            let event = try await recorder.terminalEvent(ofSend: handle.id, timeout: 30)
            #expect(event.error?.isCancelled == true)
            #expect(await eventually { completions.value.count == 1 })
            #expect(completions.value.first??.isCancelled == true)
            #expect(client.inFlightCount == 0)
        }
    }

    @Test(arguments: TransportUnderTest.network) func anOwnerThatStaysLetsItsSendFinish(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let screen = Screen()
            let result = await completion { client.send(Get("/delay/200"), owner: screen, completion: $0) }
            #expect((try? result.get()) != nil)
            withExtendedLifetime(screen) {}
        }
    }

    @Test(arguments: TransportUnderTest.network) func cancelOwnerCancelsOnlyThatOwnersSends(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let recorder = RecordingObserver<Get>()
            recorder.observe(client)
            let mine = Screen(), theirs = Screen()
            let a = client.send(Get("/delay/3000?a"), owner: mine)
            let b = client.send(Get("/delay/3000?b"), owner: mine)
            let c = client.send(Get("/delay/400?c"), owner: theirs)
            #expect(client.cancel(owner: mine) == 2)
            for handle in [a, b] {
                let event = try await recorder.terminalEvent(ofSend: handle.id, timeout: 30)
                #expect(event.error?.isCancelled == true)
            }
            let other = try await recorder.terminalEvent(ofSend: c.id, timeout: 30)
            #expect(other.response != nil)
            #expect(client.cancel(owner: mine) == 0)
            withExtendedLifetime((mine, theirs)) {}
        }
    }

    @Test(arguments: TransportUnderTest.network) func cancelAllOfATypeLeavesOtherTypesRunning(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let gets = RecordingObserver<Get>()
            gets.observe(client)
            let echoes = RecordingObserver<Echo>()
            echoes.observe(client)
            let handles = (0..<3).map { client.send(Get("/delay/3000?i=\($0)")) }
            let echo = client.send(Echo(path: "/delay/300"))
            #expect(client.cancelAll(of: Get.self) == 3)
            let events = await gets.waitForTerminalEvents(3, timeout: 30)
            #expect(events.filter(\.isTerminal).allSatisfy { $0.error?.isCancelled == true })
            #expect(Set(events.filter(\.isTerminal).map(\.sendID)) == Set(handles.map(\.id)))
            let survivor = try await echoes.terminalEvent(ofSend: echo.id, timeout: 30)
            #expect(survivor.error == nil)
        }
    }

    @Test(arguments: TransportUnderTest.network) func runningRequestsListTypeURLStartAndProgress(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            let client = makeClient(server, on: kind)
            let before = Date()
            let slow = client.send(Get("/drip?chunks=600&interval=100&size=100"))  // a minute: still running when checked
            let other = client.send(Echo(path: "/delay/60000"))
            #expect(await eventually { client.runningRequests.first { $0.id == slow.id }?.progress?.bytesReceived ?? 0 > 0 })
            let running = client.runningRequests
            try #require(running.map(\.id) == [slow.id, other.id], "\(running)")
            #expect(running[0].requestTypeName == "Get")
            #expect(running[0].url?.path == "/drip")
            #expect(running[0].startedAt >= before.addingTimeInterval(-0.01))
            #expect(running[0].attempts == 1)
            #expect(ObjectIdentifier(running[1].requestType) == ObjectIdentifier(Echo.self))
            #expect(running[1].description.contains("Echo GET"))
            client.cancelAll()
            #expect(await eventually { client.runningRequests.isEmpty })
        }
    }

    @Test(arguments: TransportUnderTest.network) func ownerDeallocatedBeforeTheTransferStartsStillCancelsOnce(_ kind: TransportUnderTest) async throws {
        try await withServer { server in
            // The send is held in an interceptor's `adapt`, before any transfer, until the test says.
            let suspending = InterceptorTests.Suspending(release: Box(false))
            let client = makeClient(server, on: kind) { $0.interceptors = [suspending] }
            let recorder = RecordingObserver<Get>()
            recorder.observe(client)
            var screen: Screen? = Screen()
            let handle = client.send(Get("/delay/60000"), owner: screen!)
            #expect(await eventually(timeout: 30) { suspending.entered.value == 1 }, "held before its transfer")
            screen = nil
            let event = try await recorder.terminalEvent(ofSend: handle.id, timeout: 30)
            #expect(event.error?.isCancelled == true)
            suspending.release.mutate { $0 = true }
            #expect(await settled(client))
            #expect(recorder.terminalEvents.count == 1)
            #expect(server.totalRequests == 0, "the transfer never started")
        }
    }
}
